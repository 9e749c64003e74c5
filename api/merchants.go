package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

// MerchantJSON is a merchant as the API shows it; APIKey only at creation.
type MerchantJSON struct {
	ID           ID        `json:"id"`
	Name         string    `json:"name"`
	APIKey       string    `json:"api_key,omitempty"`
	APIKeyPrefix string    `json:"api_key_prefix"`
	CreatedAt    time.Time `json:"created_at"`
}

func merchantJSON(m db.Merchant) MerchantJSON {
	return MerchantJSON{ID: ID(m.ID), Name: m.Name, APIKeyPrefix: m.APIKeyPrefix, CreatedAt: m.CreatedAt}
}

func (s *Server) createMerchant(c echo.Context) error {
	var req struct {
		Name string `json:"name"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	created, err := s.ops.CreateMerchant(c.Request().Context(), req.Name)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(c.Request().Context())
	out := merchantJSON(created.Merchant)
	out.APIKey = created.Key
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) listMerchants(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	ctx, scope := c.Request().Context(), who(c).Scope
	rows, err := listScoped(func(after int64, n int) ([]db.Merchant, error) { return s.ops.Merchants(ctx, after, n) },
		func(r db.Merchant) int64 { return r.ID }, scope.AllowsMerchant, cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, merchantJSON, func(r db.Merchant) cursor { return cursor{ID: r.ID} }))
}

// rotateMerchantKey gives a merchant a new API key (shown once in the
// answer): the old key stops working at once and the merchant's dashboard
// sessions end.
func (s *Server) rotateMerchantKey(c echo.Context) error {
	id, err := pathID(c, "merchant")
	if err != nil {
		return err
	}
	rot, err := s.ops.RotateMerchantKey(c.Request().Context(), id)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(c.Request().Context())
	out := merchantJSON(rot.Merchant)
	out.APIKey = rot.Key
	return c.JSON(http.StatusOK, out)
}
