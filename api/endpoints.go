package api

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// EndpointJSON is an endpoint as the API shows it. Secret (an HMAC secret)
// appears only in the answers to creation and to a PATCH switching the
// endpoint to hmac; an ed25519 private key never appears, its PublicKey does.
type EndpointJSON struct {
	ID         ID `json:"id"`
	MerchantID ID `json:"merchant_id"`
	// Type is "push" (deliveries sent to URL) or "poll" (fetched with
	// GET /v1/endpoints/{id}/events; URL is "").
	Type        string `json:"type"`
	URL         string `json:"url"`
	Description string `json:"description"`
	// Carriers are the endpoint's carriers (empty: every carrier). In the
	// answer to a POST or PATCH that set them they are as the caller wrote
	// them, names as names and ids as ids; elsewhere they are ids.
	Carriers []string `json:"carriers"`
	// CarrierNames are the names of the endpoint's carriers, in the order
	// of their ids, whatever the caller wrote.
	CarrierNames    []string `json:"carrier_names"`
	EventTypes      []string `json:"event_types"`
	Status          string   `json:"status"`
	DisabledReason  string   `json:"disabled_reason,omitempty"`
	MaxInFlight     int      `json:"max_in_flight"`
	RateLimitPerSec int      `json:"rate_limit_per_sec"`
	PayloadMode     string   `json:"payload_mode"`
	RetrySchedule   []string `json:"retry_schedule"`
	Timeout         string   `json:"timeout"`
	Ordering        string   `json:"ordering"`
	// Format is "raw" (the carrier's body) or "canonical" (the event of
	// the carrier's adapter).
	Format          string    `json:"format"`
	SendTraceparent bool      `json:"send_traceparent"`
	Secret          string    `json:"secret,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`

	// Headers maps each custom header's name to HeaderMask: values are
	// write-only.
	Headers map[string]string `json:"headers"`
	Auth    *AuthJSON         `json:"auth"`
	Filter  string            `json:"filter"`
	// Signature is the scheme: "hmac" (v1) or "ed25519" (v1a).
	Signature string `json:"signature"`
	// PublicKey is the "whpk_" key that verifies v1a signatures (ed25519).
	PublicKey string `json:"public_key,omitempty"`
	// Unreadable is present only when some of the endpoint's stored
	// secrets cannot be decrypted with the keys the service holds: which
	// ones and why. Its deliveries are parked until they are replaced.
	Unreadable *UnreadableJSON `json:"unreadable,omitempty"`
	// Batch is the batched-push setting, null when deliveries go one per
	// request.
	Batch *BatchJSON `json:"batch"`
	// Lag is present on a poll endpoint shown alone (GET, POST, PATCH):
	// what it has not acknowledged yet.
	Lag *LagJSON `json:"lag,omitempty"`
}

// BatchJSON is an endpoint's batched-push setting: up to MaxEvents events
// per request, a claimed event waiting at most MaxWait for others.
type BatchJSON struct {
	MaxEvents int    `json:"max_events"`
	MaxWait   string `json:"max_wait"`
}

// batchRequest is "batch" in POST and PATCH /v1/endpoints.
type batchRequest struct {
	MaxEvents *int    `json:"max_events"`
	MaxWait   *string `json:"max_wait"`
}

func batchJSON(b db.EndpointBatch) *BatchJSON {
	if b.MaxEvents == 0 {
		return nil
	}
	return &BatchJSON{MaxEvents: b.MaxEvents, MaxWait: b.MaxWait.String()}
}

// UnreadableJSON says which of an endpoint's secrets cannot be decrypted:
// Fields holds "secret" (the signing secret: rotate it), "headers" (the
// values of Headers, the names listed: give them again) and "auth" (give
// new credentials); Reason says why, never showing any of them.
type UnreadableJSON struct {
	Fields  []string `json:"fields"`
	Headers []string `json:"headers,omitempty"`
	Reason  string   `json:"reason"`
}

func unreadableJSON(u *db.Unreadable) *UnreadableJSON {
	if u == nil {
		return nil
	}
	return &UnreadableJSON{Fields: u.Fields(), Headers: u.Headers, Reason: u.Reason}
}

// endpointJSON shows ep; names maps carrier ids to names (carrierNames).
func endpointJSON(ep db.Endpoint, names map[int64]string) EndpointJSON {
	out := EndpointJSON{
		ID: ID(ep.ID), MerchantID: ID(ep.MerchantID), Type: ep.Type, URL: ep.URL, Description: ep.Description,
		Carriers: make([]string, len(ep.CarrierIDs)), CarrierNames: make([]string, len(ep.CarrierIDs)), EventTypes: ep.EventTypes, Status: ep.Status,
		DisabledReason: ep.DisabledReason, MaxInFlight: ep.MaxInFlight, RateLimitPerSec: ep.RateLimitPerSec,
		PayloadMode: ep.PayloadMode, RetrySchedule: make([]string, len(ep.RetrySchedule)),
		Timeout: ep.Timeout.String(), Ordering: ep.Ordering, Format: ep.Format, SendTraceparent: !ep.OmitTraceparent, CreatedAt: ep.CreatedAt, UpdatedAt: ep.UpdatedAt,
		Headers: headersJSON(ep.Headers), Auth: authJSON(ep.Auth), Filter: ep.Filter,
		Signature: ep.Signature, PublicKey: ep.PublicKey, Unreadable: unreadableJSON(ep.Unreadable),
		Batch: batchJSON(ep.Batch),
	}
	for i, id := range ep.CarrierIDs {
		out.Carriers[i] = strconv.FormatInt(id, 10)
		out.CarrierNames[i] = cmp.Or(names[id], out.Carriers[i])
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
	Type            *string           `json:"type"`
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
	Format          *string           `json:"format"`
	SendTraceparent *bool             `json:"send_traceparent"`

	// Headers: a name with a value sets it, with null removes it (PATCH
	// merges into the current headers).
	Headers map[string]*string `json:"headers"`
	// Auth: an object replaces the credentials, null removes them.
	Auth   *authRequest `json:"auth"`
	Filter *string      `json:"filter"` // "" removes the filter
	// Signature: "hmac" or "ed25519"; a change rotates in a new key.
	Signature *string `json:"signature"`
	// Batch: an object sets batched push, null turns it off.
	Batch *batchRequest `json:"batch"`
}

// input turns the request into the operations layer's EndpointInput (which
// holds every rule about the fields): a key absent from the body is nil.
// Carriers may be names or ids in JSON; ids become their decimal text.
func (req endpointRequest) input(body map[string]json.RawMessage) (ops.EndpointInput, error) {
	in := ops.EndpointInput{URL: req.URL, Description: req.Description, MaxInFlight: req.MaxInFlight,
		RateLimitPerSec: req.RateLimitPerSec, PayloadMode: req.PayloadMode, Timeout: req.Timeout}
	if hasKey(body, "carriers") {
		refs := make([]string, 0, len(req.Carriers))
		for _, r := range req.Carriers {
			var name string
			if err := json.Unmarshal(r, &name); err != nil {
				var id int64
				if err := json.Unmarshal(r, &id); err != nil {
					return in, invalidf("carriers must hold carrier names or ids")
				}
				name = strconv.FormatInt(id, 10)
			}
			refs = append(refs, name)
		}
		in.Carriers = &refs
	}
	if hasKey(body, "event_types") {
		events := append([]string{}, req.EventTypes...)
		in.EventTypes = &events
	}
	if hasKey(body, "retry_schedule") {
		sched := append([]string{}, req.RetrySchedule...)
		in.RetrySchedule = &sched
	}
	in.Type = req.Type
	in.Ordering = req.Ordering
	in.Format = req.Format
	in.SendTraceparent = req.SendTraceparent
	in.Headers = req.Headers
	if hasKey(body, "auth") {
		if req.Auth == nil {
			in.RemoveAuth = true
		} else {
			in.Auth = req.Auth.input()
		}
	}
	in.Filter = req.Filter
	in.Signature = req.Signature
	if hasKey(body, "batch") {
		if req.Batch == nil {
			in.RemoveBatch = true
		} else {
			in.Batch = &ops.BatchInput{MaxEvents: req.Batch.MaxEvents, MaxWait: req.Batch.MaxWait}
		}
	}
	return in, nil
}

// carrierNames maps every carrier's id to its name, for endpointJSON.
func (s *Server) carrierNames(ctx context.Context) (map[int64]string, error) {
	all, err := s.db.CarrierAll(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(all))
	for _, c := range all {
		names[c.ID] = c.Name
	}
	return names, nil
}

// showEndpoint is endpointJSON with the carriers' names read; with in.Carriers
// set (a POST or PATCH that gave them), Carriers are echoed as given.
func (s *Server) showEndpoint(ctx context.Context, ep db.Endpoint, in *ops.EndpointInput) (EndpointJSON, error) {
	names, err := s.carrierNames(ctx)
	if err != nil {
		return EndpointJSON{}, err
	}
	out := endpointJSON(ep, names)
	if ep.Type == db.EndpointPoll {
		lags, err := s.ops.PullLag(ctx, []int64{ep.ID})
		if err != nil {
			return EndpointJSON{}, err
		}
		out.Lag = lagJSON(lags[ep.ID], time.Now())
	}
	if in != nil && in.Carriers != nil && len(*in.Carriers) == len(out.Carriers) {
		out.Carriers = append([]string{}, *in.Carriers...)
	}
	return out, nil
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
	if p.kind == kindAdmin {
		if req.MerchantID == nil {
			return invalidf("merchant_id is required with the admin token")
		}
		merchantID = int64(*req.MerchantID)
	} else if req.MerchantID != nil {
		merchantID = int64(*req.MerchantID)
	}
	in, err := req.input(raw)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	created, err := s.ops.CreateEndpoint(ctx, actorOf(c), merchantID, in)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	out, err := s.showEndpoint(ctx, created.Endpoint, &in)
	if err != nil {
		return err
	}
	out.Secret = created.Secret
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
	ctx := c.Request().Context()
	rows, err := s.ops.Endpoints(ctx, actorOf(c), merchantID, cur.ID, limit+1)
	if err != nil {
		return err
	}
	names, err := s.carrierNames(ctx)
	if err != nil {
		return err
	}
	show := func(ep db.Endpoint) EndpointJSON { return endpointJSON(ep, names) }
	return c.JSON(http.StatusOK, page(rows, limit, show, func(r db.Endpoint) cursor { return cursor{ID: r.ID} }))
}

func (s *Server) getEndpoint(c echo.Context) error {
	ep, err := s.ownedEndpoint(c)
	if err != nil {
		return err
	}
	return s.answerEndpoint(c, ep)
}

func (s *Server) patchEndpoint(c echo.Context) error {
	// Another merchant's endpoint is 404 whatever the body says.
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
	in, err := req.input(raw)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	up, err := s.ops.UpdateEndpoint(ctx, actorOf(c), ep.ID, in)
	if err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	out, err := s.showEndpoint(ctx, up.Endpoint, &in)
	if err != nil {
		return err
	}
	out.Secret = up.Secret
	return c.JSON(http.StatusOK, out)
}

// answerEndpoint answers 200 with ep, its carriers as ids.
func (s *Server) answerEndpoint(c echo.Context, ep db.Endpoint) error {
	out, err := s.showEndpoint(c.Request().Context(), ep, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
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
	_, _ = s.routes.Refresh(ctx)
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
	_, _ = s.routes.Refresh(ctx)
	return s.answerEndpoint(c, ep)
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
	_, _ = s.routes.Refresh(ctx)
	return s.answerEndpoint(c, ep)
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
	out := map[string]any{"id": ID(id), "previous_secrets_expire_at": rot.PreviousExpireAt}
	if rot.PublicKey != "" {
		out["public_key"] = rot.PublicKey
	} else {
		out["secret"] = rot.Secret
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) pingEndpoint(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	res, err := s.ops.Ping(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
