package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// CarrierJSON is a carrier as the API shows it. APIKey appears only in the
// answer to its creation and to a key rotation; the signing secret never
// appears.
type CarrierJSON struct {
	ID               ID     `json:"id"`
	Name             string `json:"name"`
	APIKey           string `json:"api_key,omitempty"`
	APIKeyPrefix     string `json:"api_key_prefix"`
	Status           string `json:"status"`
	OrderingKeyField string `json:"ordering_key_field"`
	EventTypeField   string `json:"event_type_field"`
	MerchantField    string `json:"merchant_field"`
	Signed           bool   `json:"signed"`
	// Signature is the declaration of how its callbacks are signed,
	// without the secret.
	Signature       hookrelay.InboundSignature `json:"signature"`
	AllowedCIDRs    []string                   `json:"allowed_cidrs"`
	RateLimitPerSec int                        `json:"rate_limit_per_sec"`
	// AdapterVersion is the adapter version its callbacks go through, null
	// when none; AdapterOnFailure what a callback the adapter fails on (or
	// whose event fails its schema) becomes: "refuse" (422, in the refusal
	// log) or "park" (accepted for raw endpoints, kept for an operator).
	AdapterVersion   *int       `json:"adapter_version"`
	AdapterOnFailure string     `json:"adapter_on_failure"`
	DisabledAt       *time.Time `json:"disabled_at"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

func carrierJSON(c db.Carrier) CarrierJSON {
	out := CarrierJSON{
		ID: ID(c.ID), Name: c.Name, APIKeyPrefix: c.APIKeyPrefix, Status: ops.CarrierStatus(c),
		OrderingKeyField: c.OrderingKeyField, EventTypeField: c.EventTypeField, MerchantField: c.MerchantField,
		Signed: c.Signature.Signed(), Signature: c.Signature, AllowedCIDRs: make([]string, len(c.AllowedCIDRs)),
		RateLimitPerSec: c.RateLimitPerSec, DisabledAt: c.DisabledAt, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	out.AdapterOnFailure = c.AdapterOnFailure
	if v := c.AdapterVersion; v != 0 {
		out.AdapterVersion = &v
	}
	for i, p := range c.AllowedCIDRs {
		out.AllowedCIDRs[i] = p.String()
	}
	return out
}

type createCarrierRequest struct {
	Name             string                      `json:"name"`
	OrderingKeyField string                      `json:"ordering_key_field"`
	EventTypeField   string                      `json:"event_type_field"`
	MerchantField    string                      `json:"merchant_field"`
	SigningSecret    string                      `json:"signing_secret"`
	Signature        *hookrelay.InboundSignature `json:"signature"`
	AllowedCIDRs     []string                    `json:"allowed_cidrs"`
	RateLimitPerSec  int                         `json:"rate_limit_per_sec"`
}

func (s *Server) createCarrier(c echo.Context) error {
	var req createCarrierRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	created, err := s.ops.CreateCarrier(c.Request().Context(), ops.NewCarrier{
		Name: req.Name, OrderingKeyField: req.OrderingKeyField, EventTypeField: req.EventTypeField, MerchantField: req.MerchantField,
		SigningSecret: req.SigningSecret, Signature: req.Signature, AllowedCIDRs: req.AllowedCIDRs,
		RateLimitPerSec: req.RateLimitPerSec,
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
	ctx, scope := c.Request().Context(), who(c).Scope
	rows, err := listScoped(func(after int64, n int) ([]db.Carrier, error) { return s.ops.Carriers(ctx, after, n) },
		func(r db.Carrier) int64 { return r.ID }, scope.AllowsCarrier, cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, carrierJSON, func(r db.Carrier) cursor { return cursor{ID: r.ID} }))
}

func (s *Server) getCarrier(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	car, err := s.ops.Carrier(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, carrierJSON(car))
}

type patchCarrierRequest struct {
	Name             *string                     `json:"name"`
	OrderingKeyField *string                     `json:"ordering_key_field"`
	EventTypeField   *string                     `json:"event_type_field"`
	MerchantField    *string                     `json:"merchant_field"`
	SigningSecret    *string                     `json:"signing_secret"`
	Signature        *hookrelay.InboundSignature `json:"signature"`
	AllowedCIDRs     *[]string                   `json:"allowed_cidrs"`
	RateLimitPerSec  *int                        `json:"rate_limit_per_sec"`
	Status           *string                     `json:"status"`
	// AdapterOnFailure is "refuse" or "park" (see CarrierJSON).
	AdapterOnFailure *string `json:"adapter_on_failure"`
}

func (s *Server) patchCarrier(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	var req patchCarrierRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if req.AdapterOnFailure != nil {
		// First: a refused value changes nothing else.
		if _, err := s.ops.SetAdapterOnFailure(ctx, id, *req.AdapterOnFailure); err != nil {
			return err
		}
	}
	car, err := s.ops.UpdateCarrier(ctx, id, ops.CarrierUpdate{
		Name: req.Name, OrderingKeyField: req.OrderingKeyField, EventTypeField: req.EventTypeField,
		MerchantField: req.MerchantField, SigningSecret: req.SigningSecret, Signature: req.Signature,
		AllowedCIDRs: req.AllowedCIDRs, RateLimitPerSec: req.RateLimitPerSec, Status: req.Status,
	})
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	return c.JSON(http.StatusOK, carrierJSON(car))
}

func (s *Server) deleteCarrier(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	force := false
	if v := c.QueryParam("force"); v != "" {
		if force, err = strconv.ParseBool(v); err != nil {
			return hookrelay.Errorf(hookrelay.EINVALID, "force must be true or false")
		}
	}
	ctx := c.Request().Context()
	n, err := s.ops.DeleteCarrier(ctx, id, force)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	return c.JSON(http.StatusOK, map[string]any{"id": ID(id), "deleted": true, "undelivered": n})
}

func (s *Server) setCarrierEnabled(enabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "carrier")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		car, err := s.ops.SetCarrierEnabled(ctx, id, enabled)
		if err != nil {
			return err
		}
		_, _ = s.routes.Refresh(ctx)
		return c.JSON(http.StatusOK, carrierJSON(car))
	}
}

type rotateCarrierKeyRequest struct {
	// Overlap is how long the old key keeps working ("24h"; "0s": it stops
	// at once). Required.
	Overlap *string `json:"overlap"`
}

func (s *Server) rotateCarrierKey(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	var req rotateCarrierKeyRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.Overlap == nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "overlap is required: how long the old key keeps working, such as \"24h\" (\"0s\": it stops at once)")
	}
	overlap, err := time.ParseDuration(*req.Overlap)
	if err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "overlap must be a duration such as \"24h\" or \"0s\"")
	}
	ctx := c.Request().Context()
	rot, err := s.ops.RotateCarrierKey(ctx, id, overlap)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	return c.JSON(http.StatusOK, map[string]any{
		"id": ID(id), "api_key": rot.Key, "api_key_prefix": hookrelay.KeyDisplayPrefix(rot.Key),
		"previous_key_expires_at": rot.PreviousExpireAt,
	})
}
