package ingest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// EndpointJSON is an endpoint as the API shows it. Secret appears only in
// the answers to creation and rotation.
type EndpointJSON struct {
	ID              ID        `json:"id"`
	MerchantID      ID        `json:"merchant_id"`
	URL             string    `json:"url"`
	Description     string    `json:"description"`
	Carriers        []ID      `json:"carriers"`
	EventTypes      []string  `json:"event_types"`
	Status          string    `json:"status"`
	DisabledReason  string    `json:"disabled_reason,omitempty"`
	MaxInFlight     int       `json:"max_in_flight"`
	RateLimitPerSec int       `json:"rate_limit_per_sec"`
	PayloadMode     string    `json:"payload_mode"`
	RetrySchedule   []string  `json:"retry_schedule"`
	Timeout         string    `json:"timeout"`
	Ordering        string    `json:"ordering"`
	Secret          string    `json:"secret,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`

	// Headers maps each custom header's name to HeaderMask: values are
	// write-only.
	Headers map[string]string `json:"headers"`
	Auth    *AuthJSON         `json:"auth"`
	Filter  string            `json:"filter"`
}

func endpointJSON(ep db.Endpoint) EndpointJSON {
	out := EndpointJSON{
		ID: ID(ep.ID), MerchantID: ID(ep.MerchantID), URL: ep.URL, Description: ep.Description,
		Carriers: make([]ID, len(ep.CarrierIDs)), EventTypes: ep.EventTypes, Status: ep.Status,
		DisabledReason: ep.DisabledReason, MaxInFlight: ep.MaxInFlight, RateLimitPerSec: ep.RateLimitPerSec,
		PayloadMode: ep.PayloadMode, RetrySchedule: make([]string, len(ep.RetrySchedule)),
		Timeout: ep.Timeout.String(), Ordering: ep.Ordering, CreatedAt: ep.CreatedAt, UpdatedAt: ep.UpdatedAt,
		Headers: headersJSON(ep.Headers), Auth: authJSON(ep.Auth), Filter: ep.Filter,
	}
	for i, id := range ep.CarrierIDs {
		out.Carriers[i] = ID(id)
	}
	for i, d := range ep.RetrySchedule {
		out.RetrySchedule[i] = d.String()
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	return out
}

// endpointRequest is the body of POST and PATCH /v1/endpoints; nil fields
// are absent (PATCH leaves them unchanged, POST uses the defaults).
type endpointRequest struct {
	MerchantID      *ID               `json:"merchant_id"`
	URL             *string           `json:"url"`
	Description     *string           `json:"description"`
	Carriers        []json.RawMessage `json:"carriers"`
	EventTypes      []string          `json:"event_types"`
	MaxInFlight     *int              `json:"max_in_flight"`
	RateLimitPerSec *int              `json:"rate_limit_per_sec"`
	PayloadMode     *string           `json:"payload_mode"`
	RetrySchedule   []string          `json:"retry_schedule"`
	Timeout         *string           `json:"timeout"`
	Ordering        *string           `json:"ordering"`

	// Headers: a name with a value sets it, with null removes it (PATCH
	// merges into the current headers).
	Headers map[string]*string `json:"headers"`
	// Auth: an object replaces the credentials, null removes them.
	Auth   *authRequest `json:"auth"`
	Filter *string      `json:"filter"` // "" removes the filter
}

// applyReceiver merges the receiver-facing fields of req (headers, auth,
// filter) into f, validating them; raw tells an explicit null from absence.
func applyReceiver(raw map[string]json.RawMessage, req endpointRequest, f *db.EndpointFields) error {
	if req.Headers != nil {
		if err := applyHeaders(req.Headers, f); err != nil {
			return err
		}
	}
	if hasKey(raw, "auth") {
		if req.Auth == nil {
			f.Auth = nil
		} else {
			a, err := req.Auth.toAuth()
			if err != nil {
				return err
			}
			f.Auth = a
		}
	}
	if req.Filter != nil {
		if err := checkFilter(*req.Filter); err != nil {
			return err
		}
		f.Filter = *req.Filter
	}
	return nil
}

// apply merges req into f, validating every field given.
func (s *Server) apply(c echo.Context, req endpointRequest, f *db.EndpointFields, carriersGiven, eventsGiven, scheduleGiven bool) error {
	ctx := c.Request().Context()
	if req.URL != nil {
		if err := hookrelay.CheckText("url", *req.URL, 0); err != nil {
			return err
		}
		u, err := s.validateURL(ctx, *req.URL)
		if err != nil {
			return err
		}
		f.URL = u
	}
	if req.Description != nil {
		if len(*req.Description) > 1000 {
			return invalidf("description longer than 1000 characters")
		}
		if err := hookrelay.CheckText("description", *req.Description, 0); err != nil {
			return err
		}
		f.Description = *req.Description
	}
	if carriersGiven {
		ids, err := s.resolveCarriers(c, req.Carriers)
		if err != nil {
			return err
		}
		f.CarrierIDs = ids
	}
	if eventsGiven {
		if len(req.EventTypes) > 100 {
			return invalidf("at most 100 event_types")
		}
		for _, e := range req.EventTypes {
			if e == "" || len(e) > 200 {
				return invalidf("event_types entries must be 1 to 200 characters")
			}
			if err := hookrelay.CheckText("event_types entry", e, 0); err != nil {
				return err
			}
		}
		f.EventTypes = append([]string{}, req.EventTypes...)
	}
	if req.MaxInFlight != nil {
		if *req.MaxInFlight < 1 || *req.MaxInFlight > 1000 {
			return invalidf("max_in_flight must be between 1 and 1000")
		}
		f.MaxInFlight = *req.MaxInFlight
	}
	if req.RateLimitPerSec != nil {
		if *req.RateLimitPerSec < 0 || *req.RateLimitPerSec > 100000 {
			return invalidf("rate_limit_per_sec must be between 0 (unlimited) and 100000")
		}
		f.RateLimitPerSec = *req.RateLimitPerSec
	}
	if req.PayloadMode != nil {
		if *req.PayloadMode != "inline" && *req.PayloadMode != "reference" {
			return invalidf(`payload_mode must be "inline" or "reference"`)
		}
		f.PayloadMode = *req.PayloadMode
	}
	if scheduleGiven {
		if len(req.RetrySchedule) > 50 {
			return invalidf("retry_schedule has at most 50 delays")
		}
		f.RetrySchedule = make([]time.Duration, len(req.RetrySchedule))
		for i, raw := range req.RetrySchedule {
			d, err := time.ParseDuration(raw)
			if err != nil || d < time.Second || d > 7*24*time.Hour {
				return invalidf("retry_schedule[%d]: want a duration between 1s and 168h, such as \"30s\" or \"5m\"", i)
			}
			f.RetrySchedule[i] = d
		}
	}
	if req.Timeout != nil {
		d, err := time.ParseDuration(*req.Timeout)
		if err != nil || d < 100*time.Millisecond || d > 120*time.Second {
			return invalidf("timeout must be a duration between 100ms and 120s, such as \"15s\"")
		}
		f.Timeout = d
	}
	if req.Ordering != nil {
		if *req.Ordering != db.OrderingKey && *req.Ordering != db.OrderingNone {
			return invalidf(`ordering must be "key" (one ordering key's callbacks in order) or "none"`)
		}
		f.Ordering = *req.Ordering
	}
	return nil
}

// resolveCarriers turns carrier names or ids into ids; unknown ones are 400.
func (s *Server) resolveCarriers(c echo.Context, raw []json.RawMessage) ([]int64, error) {
	snap, err := s.cache.refresh(c.Request().Context())
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(raw))
	for _, r := range raw {
		var name string
		var id int64
		if err := json.Unmarshal(r, &name); err != nil {
			if err := json.Unmarshal(r, &id); err != nil {
				return nil, invalidf("carriers must hold carrier names or ids")
			}
		} else if known, ok := snap.carrierByName[name]; ok {
			id = known
		} else if n, err := strconv.ParseInt(name, 10, 64); err == nil {
			id = n
		} else {
			return nil, invalidf("carriers: no carrier named %q", name)
		}
		if _, ok := snap.carrierByID[id]; !ok {
			return nil, invalidf("carriers: no carrier with id %d", id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// hasKey reports whether the JSON object body has the top-level key.
func hasKey(body map[string]json.RawMessage, key string) bool {
	_, ok := body[key]
	return ok
}

func (s *Server) createEndpoint(c echo.Context) error {
	var raw map[string]json.RawMessage
	var req endpointRequest
	if err := decodeTwice(c, &raw, &req); err != nil {
		return err
	}
	p := principalOf(c)
	merchantID := p.merchantID
	ctx := c.Request().Context()
	if p.kind == kindAdmin {
		if req.MerchantID == nil {
			return invalidf("merchant_id is required with the admin token")
		}
		merchantID = int64(*req.MerchantID)
		if _, err := s.db.MerchantGet(ctx, merchantID); err != nil {
			return notFoundAs(err, invalidf("merchant_id: no such merchant"))
		}
	} else if req.MerchantID != nil && int64(*req.MerchantID) != merchantID {
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "merchant_id names another merchant")
	}
	if req.URL == nil {
		return invalidf("url is required")
	}
	var f db.EndpointFields
	if err := s.apply(c, req, &f, hasKey(raw, "carriers"), hasKey(raw, "event_types"), hasKey(raw, "retry_schedule")); err != nil {
		return err
	}
	if err := applyReceiver(raw, req, &f); err != nil {
		return err
	}
	secret := hookrelay.NewSecret()
	ep, err := s.db.EndpointCreate(ctx, merchantID, f, secret)
	if err != nil {
		return err
	}
	_, _ = s.cache.refresh(ctx)
	out := endpointJSON(ep)
	out.Secret = secret
	return c.JSON(http.StatusCreated, out)
}

// decodeTwice decodes the body into a raw map (to see which keys are
// present) and into req (validated, unknown fields refused).
func decodeTwice(c echo.Context, raw *map[string]json.RawMessage, req *endpointRequest) error {
	body, err := readBody(c.Request(), maxRequestBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, raw); err != nil {
		return invalidf("invalid JSON body: want an object")
	}
	c.Request().Body = http.NoBody
	return decodeBytes(body, req)
}

// ownedEndpoint loads endpoint :id, answering 404 when it belongs to another
// merchant than the caller's.
func (s *Server) ownedEndpoint(c echo.Context) (db.Endpoint, error) {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return db.Endpoint{}, err
	}
	return s.ops.Endpoint(c.Request().Context(), actorOf(c), id)
}

func (s *Server) listEndpoints(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	p := principalOf(c)
	merchantID := p.merchantID
	if p.kind == kindAdmin && c.QueryParam("merchant_id") != "" {
		if merchantID, err = parseID(c.QueryParam("merchant_id"), "merchant_id"); err != nil {
			return err
		}
	}
	rows, err := s.db.EndpointList(c.Request().Context(), merchantID, cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, endpointJSON, func(r db.Endpoint) cursor { return cursor{ID: r.ID} }))
}

func (s *Server) getEndpoint(c echo.Context) error {
	ep, err := s.ownedEndpoint(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, endpointJSON(ep))
}

func (s *Server) patchEndpoint(c echo.Context) error {
	ep, err := s.ownedEndpoint(c)
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	var req endpointRequest
	if err := decodeTwice(c, &raw, &req); err != nil {
		return err
	}
	if req.MerchantID != nil && int64(*req.MerchantID) != ep.MerchantID {
		return invalidf("merchant_id cannot be changed")
	}
	f := db.EndpointFieldsOf(ep)
	if err := s.apply(c, req, &f, hasKey(raw, "carriers"), hasKey(raw, "event_types"), hasKey(raw, "retry_schedule")); err != nil {
		return err
	}
	if err := applyReceiver(raw, req, &f); err != nil {
		return err
	}
	up, err := s.db.EndpointUpdate(c.Request().Context(), ep.ID, f)
	if err != nil {
		return err
	}
	_, _ = s.cache.refresh(c.Request().Context())
	return c.JSON(http.StatusOK, endpointJSON(up))
}

func (s *Server) deleteEndpoint(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	n, err := s.ops.DeleteEndpoint(ctx, actorOf(c), id)
	if err != nil {
		return err
	}
	_, _ = s.cache.refresh(ctx)
	return c.JSON(http.StatusOK, map[string]any{"id": ID(id), "status": db.EndpointDeleted, "deleted_deliveries": n})
}

func (s *Server) enableEndpoint(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ep, err := s.ops.EnableEndpoint(ctx, actorOf(c), id)
	if err != nil {
		return err
	}
	_, _ = s.cache.refresh(ctx)
	return c.JSON(http.StatusOK, endpointJSON(ep))
}

func (s *Server) disableEndpoint(c echo.Context) error {
	// Another merchant's endpoint is 404 whatever the body says.
	ep, err := s.ownedEndpoint(c)
	if err != nil {
		return err
	}
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if ep, err = s.ops.DisableEndpoint(ctx, actorOf(c), ep.ID, req.Reason); err != nil {
		return err
	}
	_, _ = s.cache.refresh(ctx)
	return c.JSON(http.StatusOK, endpointJSON(ep))
}

func (s *Server) rotateSecret(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	rot, err := s.ops.RotateSecret(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"id": ID(id), "secret": rot.Secret, "previous_secrets_expire_at": rot.PreviousExpireAt,
	})
}

func (s *Server) testEndpoint(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	res, err := s.ops.SendTest(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
