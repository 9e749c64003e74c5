package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// CarrierJSON is a carrier as the API shows it. APIKey appears only in the
// answer to its creation; the signing secret never appears.
type CarrierJSON struct {
	ID               ID        `json:"id"`
	Name             string    `json:"name"`
	APIKey           string    `json:"api_key,omitempty"`
	APIKeyPrefix     string    `json:"api_key_prefix"`
	OrderingKeyField string    `json:"ordering_key_field"`
	EventTypeField   string    `json:"event_type_field"`
	MerchantField    string    `json:"merchant_field"`
	Signed           bool      `json:"signed"`
	RateLimitPerSec  int       `json:"rate_limit_per_sec"`
	CreatedAt        time.Time `json:"created_at"`
}

func carrierJSON(c db.Carrier) CarrierJSON {
	return CarrierJSON{
		ID: ID(c.ID), Name: c.Name, APIKeyPrefix: c.APIKeyPrefix, OrderingKeyField: c.OrderingKeyField,
		EventTypeField: c.EventTypeField, MerchantField: c.MerchantField, Signed: c.SigningSecret != "",
		RateLimitPerSec: c.RateLimitPerSec, CreatedAt: c.CreatedAt,
	}
}

type createCarrierRequest struct {
	Name             string `json:"name"`
	OrderingKeyField string `json:"ordering_key_field"`
	EventTypeField   string `json:"event_type_field"`
	MerchantField    string `json:"merchant_field"`
	SigningSecret    string `json:"signing_secret"`
	RateLimitPerSec  int    `json:"rate_limit_per_sec"`
}

func (s *Server) createCarrier(c echo.Context) error {
	var req createCarrierRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	created, err := s.ops.CreateCarrier(c.Request().Context(), ops.NewCarrier{
		Name: req.Name, OrderingKeyField: req.OrderingKeyField, EventTypeField: req.EventTypeField, MerchantField: req.MerchantField,
		SigningSecret: req.SigningSecret, RateLimitPerSec: req.RateLimitPerSec,
	})
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(c.Request().Context())
	out := carrierJSON(created.Carrier)
	out.APIKey = created.Key
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) listCarriers(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.ops.Carriers(c.Request().Context(), cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, carrierJSON, func(r db.Carrier) cursor { return cursor{ID: r.ID} }))
}
