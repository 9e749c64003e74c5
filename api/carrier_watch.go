package api

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// watchCallbacks counts every answer of POST /v1/callbacks for the
// carriers' watch (ingest.Watch): an accepted callback with its answer
// time, a refused one in the refusal log. A refused key names no carrier
// for sure; the refusal goes to the carrier whose key's displayable prefix
// the token has, when exactly one has it (carrierOfKey), else to no
// carrier. Recording only takes a lock: the answer never waits for it.
func (s *Server) watchCallbacks(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		p := principalOf(c)
		if err == nil {
			s.watch.Accepted(p.carrier.ID, time.Since(start))
			return nil
		}
		carrier := p.carrier.ID
		if p.kind != kindCarrier {
			carrier = s.carrierOfKey(c)
		}
		s.watch.Refused(carrier, c.Request().Header, err)
		return err
	}
}

// carrierOfKey returns the carrier a refused bearer token was probably
// meant for (the one whose key has the token's displayable prefix), or 0.
func (s *Server) carrierOfKey(c echo.Context) int64 {
	token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || !strings.HasPrefix(token, hookrelay.CarrierKeyPrefix) || len(token) <= len(hookrelay.CarrierKeyPrefix) {
		return 0
	}
	snap, err := s.routes.Snapshot(c.Request().Context())
	if err != nil {
		return 0
	}
	car, ok := snap.CarrierByKeyPrefix(hookrelay.KeyDisplayPrefix(token))
	if !ok {
		return 0
	}
	return car.ID
}

// RefusalJSON is one entry of a carrier's refusal log. Dropped > 0 marks
// the count of the refusals of its reason and minute beyond the log's caps,
// stored without excerpts.
type RefusalJSON struct {
	ID          ID                `json:"id"`
	Reason      string            `json:"reason"`
	Status      int               `json:"status"`
	Message     string            `json:"message"`
	ReceivedAt  time.Time         `json:"received_at"`
	Headers     map[string]string `json:"headers"`
	BodyExcerpt string            `json:"body_excerpt"`
	BodySize    int               `json:"body_size"`
	Dropped     int               `json:"dropped"`
}

func refusalJSON(r db.CarrierRefusal) RefusalJSON {
	h := r.Headers
	if h == nil {
		h = map[string]string{}
	}
	return RefusalJSON{
		ID: ID(r.ID), Reason: r.Reason, Status: r.Status, Message: r.Message, ReceivedAt: r.ReceivedAt,
		Headers: h, BodyExcerpt: r.BodyExcerpt, BodySize: r.BodySize, Dropped: r.Dropped,
	}
}

func (s *Server) listCarrierRefusals(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	q := ops.RefusalQuery{CarrierID: id, Reason: hookrelay.Reason(c.QueryParam("reason")), BeforeAt: cur.At, BeforeID: cur.ID, Limit: limit + 1}
	for name, t := range map[string]*time.Time{"since": &q.Since, "until": &q.Until} {
		v, err := parseTimeParam(c, name)
		if err != nil {
			return err
		}
		if v != nil {
			*t = *v
		}
	}
	rows, err := s.ops.CarrierRefusals(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, refusalJSON, func(r db.CarrierRefusal) cursor {
		return cursor{At: r.ReceivedAt, ID: r.ID}
	}))
}

// CarrierHealthJSON is a carrier's health over the last hour.
type CarrierHealthJSON struct {
	CarrierID      ID               `json:"carrier_id"`
	WindowSeconds  int              `json:"window_seconds"`
	Accepted       int64            `json:"accepted"`
	Refused        map[string]int64 `json:"refused"`
	RefusedTotal   int64            `json:"refused_total"`
	PerSecond      float64          `json:"per_second"`
	LastCallbackAt *time.Time       `json:"last_callback_at"`
	P99Ms          *float64         `json:"p99_ms"`
}

func carrierHealthJSON(h *ops.CarrierHealth) CarrierHealthJSON {
	out := CarrierHealthJSON{
		CarrierID: ID(h.CarrierID), WindowSeconds: int(ops.HealthWindow.Seconds()), Accepted: h.Accepted,
		Refused: h.Refused, RefusedTotal: h.RefusedTotal, PerSecond: math.Round(h.PerSecond*1000) / 1000,
	}
	if !h.LastCallbackAt.IsZero() {
		t := h.LastCallbackAt
		out.LastCallbackAt = &t
	}
	if h.P99 > 0 {
		ms := float64(h.P99) / float64(time.Millisecond)
		out.P99Ms = &ms
	}
	return out
}

func (s *Server) carrierHealth(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	h, err := s.ops.CarrierHealthOf(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, carrierHealthJSON(h))
}

// tryRequest is a sample to try: the callback's body (a JSON value, or a
// string holding the raw body) and its headers.
type tryRequest struct {
	Body    json.RawMessage   `json:"body"`
	Headers map[string]string `json:"headers"`
}

// TryJSON is what hookrelay would do with a sample.
type TryJSON struct {
	Accepted      bool              `json:"accepted"`
	Refusal       *TryRefusalJSON   `json:"refusal,omitempty"`
	OrderingKey   string            `json:"ordering_key,omitempty"`
	EventType     string            `json:"event_type,omitempty"`
	Merchant      string            `json:"merchant,omitempty"`
	Queue         *int              `json:"queue,omitempty"`
	EndpointCount int               `json:"endpoint_count"`
	Endpoints     []TryEndpointJSON `json:"endpoints"`
	// Adapter is what the carrier's active adapter made of the sample
	// (omitted: it has none).
	Adapter *TryAdapterJSON `json:"adapter,omitempty"`
}

// TryAdapterJSON is what a carrier's adapter made of a sample: the
// canonical event (the body canonical endpoints would receive), or that it
// dropped it, or the error it is parked with.
type TryAdapterJSON struct {
	Version int             `json:"version"`
	Event   json.RawMessage `json:"event,omitempty"`
	Dropped bool            `json:"dropped"`
	Parked  string          `json:"parked,omitempty"`
}

// TryRefusalJSON is a sample's refusal as the carrier would get it.
type TryRefusalJSON struct {
	Reason  string `json:"reason"`
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// TryEndpointJSON names an endpoint a sample would reach.
type TryEndpointJSON struct {
	ID          ID     `json:"id"`
	MerchantID  ID     `json:"merchant_id"`
	URL         string `json:"url"`
	Description string `json:"description"`
	Status      string `json:"status"`
}

// TryBody returns the raw callback body of a try request's "body": a JSON
// string is the body itself, any other JSON value its own text.
func TryBody(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "body is required: the callback's JSON, or a string holding it")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, hookrelay.Errorf(hookrelay.EINVALID, "body: %v", err)
		}
		return []byte(s), nil
	}
	return raw, nil
}

func (s *Server) tryCarrierCallback(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	var req tryRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	body, err := TryBody(req.Body)
	if err != nil {
		return err
	}
	h := http.Header{}
	for k, v := range req.Headers {
		h.Set(k, v)
	}
	res, err := s.ops.TryCallback(c.Request().Context(), id, ops.Sample{Header: h, Body: body})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tryJSON(res))
}

func tryJSON(res ops.TryResult) TryJSON {
	out := TryJSON{Endpoints: []TryEndpointJSON{}}
	if r := res.Refusal; r != nil {
		out.Refusal = &TryRefusalJSON{Reason: string(r.Reason), Status: r.Status, Message: r.Message}
		return out
	}
	q := res.Queue
	out.Accepted, out.OrderingKey, out.EventType, out.Merchant, out.Queue = true, res.OrderingKey, res.EventType, res.MerchantRef, &q
	out.EndpointCount = res.EndpointCount
	if res.AdapterVersion != 0 {
		out.Adapter = &TryAdapterJSON{Version: res.AdapterVersion, Event: res.CanonicalEvent, Dropped: res.Dropped, Parked: res.Parked}
	}
	for _, ep := range res.Endpoints {
		out.Endpoints = append(out.Endpoints, TryEndpointJSON{
			ID: ID(ep.ID), MerchantID: ID(ep.MerchantID), URL: ep.URL, Description: ep.Description, Status: ep.Status,
		})
	}
	return out
}
