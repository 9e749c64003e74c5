package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// MessageJSON is a message as a search lists it.
type MessageJSON struct {
	ID          ID                    `json:"id"`
	CarrierID   ID                    `json:"carrier_id"`
	OrderingKey string                `json:"ordering_key"`
	EventType   string                `json:"event_type"`
	ReceivedAt  time.Time             `json:"received_at"`
	Size        int                   `json:"size"`
	Offloaded   bool                  `json:"offloaded"`
	Deliveries  []MessageDeliveryJSON `json:"deliveries"`
}

// MessageDeliveryJSON is one delivery of a message.
type MessageDeliveryJSON struct {
	ID            ID            `json:"id"`
	EndpointID    ID            `json:"endpoint_id"`
	Status        string        `json:"status"` // pending | delivered | dead | failed
	Attempts      int           `json:"attempts"`
	LastStatus    int           `json:"last_status,omitempty"`
	NextAttemptAt *time.Time    `json:"next_attempt_at,omitempty"`
	AttemptList   []AttemptJSON `json:"attempt_history,omitempty"`
}

// MessageDetailJSON is one message with its payload, deliveries and attempts.
type MessageDetailJSON struct {
	MessageJSON
	// Payload is the callback's body when inline and JSON; PayloadBase64
	// when inline and not JSON; PayloadURL a presigned link when offloaded.
	Payload          jsonRaw `json:"payload,omitempty"`
	PayloadBase64    string  `json:"payload_base64,omitempty"`
	PayloadURL       string  `json:"payload_url,omitempty"`
	PayloadURLExpiry string  `json:"payload_url_expires_at,omitempty"`
	PayloadSHA256    string  `json:"payload_sha256"`
	// AdapterVersion is the carrier's adapter version that ran on the
	// callback (omitted: none); Event the canonical event it made, what
	// canonical endpoints receive (omitted: none).
	AdapterVersion int     `json:"adapter_version,omitempty"`
	Event          jsonRaw `json:"event,omitempty"`
}

// jsonRaw is a JSON value written as it is.
type jsonRaw []byte

// MarshalJSON writes the bytes themselves.
func (r jsonRaw) MarshalJSON() ([]byte, error) { return r, nil }

// payloadLinkTTL is how long a presigned payload link stays valid.
const payloadLinkTTL = 15 * time.Minute

// messageQueryParams are the parameters GET /v1/messages takes; any other is
// refused, so that a misspelt filter is not silently ignored.
var messageQueryParams = map[string]bool{
	"ordering_key": true, "carrier_id": true, "event_type": true, "endpoint_id": true,
	"status": true, "since": true, "until": true, "limit": true, "cursor": true,
}

// messageCursor is where a search page ended, with the window it searched
// (a window defaulted from the time of the first page stays the same on
// the next ones) and a digest of its filters and caller: a cursor is
// refused by any other search.
type messageCursor struct {
	pos          db.MessagePosition
	since, until time.Time
	scope        string
}

func (c messageCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "m2:%d:%d:%d:%s",
		c.pos.ID, c.since.UnixNano(), c.until.UnixNano(), c.scope))
}

func decodeMessageCursor(s string) (messageCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return messageCursor{}, errBadCursor
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 5 || parts[0] != "m2" {
		return messageCursor{}, errBadCursor
	}
	var n [3]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(parts[i+1], 10, 64); err != nil {
			return messageCursor{}, errBadCursor
		}
	}
	return messageCursor{
		pos:   db.MessagePosition{ID: n[0]},
		since: time.Unix(0, n[1]).UTC(), until: time.Unix(0, n[2]).UTC(), scope: parts[4],
	}, nil
}

// searchScope digests what a cursor must be used with: the filters and the caller.
func searchScope(f db.MessageFilter, a ops.Actor) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%q|%d|%q|%d|%q|%d",
		f.OrderingKey, f.CarrierID, f.EventType, f.EndpointID, f.State, a.MerchantID))
	return hex.EncodeToString(sum[:8])
}

func parseTimeParam(c echo.Context, name string) (*time.Time, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, invalidf("%s must be an RFC 3339 time", name)
	}
	return &t, nil
}

func optIDParam(c echo.Context, name string) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, nil
	}
	return parseID(raw, name)
}

// messageSearch reads the search of a GET /v1/messages request.
func (s *Server) messageSearch(c echo.Context) (db.MessageFilter, db.MessagePosition, int, error) {
	var f db.MessageFilter
	for name := range c.QueryParams() {
		if !messageQueryParams[name] {
			return f, db.MessagePosition{}, 0, invalidf("unknown query parameter %q", name)
		}
	}
	var err error
	f.OrderingKey, f.EventType, f.State = c.QueryParam("ordering_key"), c.QueryParam("event_type"), c.QueryParam("status")
	if f.CarrierID, err = optIDParam(c, "carrier_id"); err != nil {
		return f, db.MessagePosition{}, 0, err
	}
	if f.EndpointID, err = optIDParam(c, "endpoint_id"); err != nil {
		return f, db.MessagePosition{}, 0, err
	}
	limit := 100
	if raw := c.QueryParam("limit"); raw != "" {
		if limit, err = strconv.Atoi(raw); err != nil || limit < 1 || limit > ops.MaxSearchLimit {
			return f, db.MessagePosition{}, 0, invalidf("limit must be between 1 and %d", ops.MaxSearchLimit)
		}
	}
	since, err := parseTimeParam(c, "since")
	if err != nil {
		return f, db.MessagePosition{}, 0, err
	}
	until, err := parseTimeParam(c, "until")
	if err != nil {
		return f, db.MessagePosition{}, 0, err
	}
	scope := searchScope(f, actorOf(c))
	var pos db.MessagePosition
	if raw := c.QueryParam("cursor"); raw != "" {
		cur, err := decodeMessageCursor(raw)
		if err != nil {
			return f, pos, 0, err
		}
		if cur.scope != scope || since != nil && !since.Equal(cur.since) || until != nil && !until.Equal(cur.until) {
			return f, pos, 0, invalidf("cursor belongs to another search")
		}
		since, until, pos = &cur.since, &cur.until, cur.pos
	}
	if f.Since, f.Until, err = ops.SearchWindow(since, until, f.OrderingKey != "", time.Now()); err != nil {
		return f, pos, 0, err
	}
	return f, pos, limit, nil
}

func messageJSON(m db.MessageSummary) MessageJSON {
	out := MessageJSON{
		ID: ID(m.ID), CarrierID: ID(m.CarrierID), OrderingKey: m.OrderingKey, EventType: m.EventType,
		ReceivedAt: m.ReceivedAt, Size: m.PayloadSize, Offloaded: m.Offloaded,
		Deliveries: make([]MessageDeliveryJSON, len(m.Deliveries)),
	}
	for i, d := range m.Deliveries {
		out.Deliveries[i] = MessageDeliveryJSON{
			ID: ID(d.ID), EndpointID: ID(d.EndpointID), Status: d.State, Attempts: d.Attempts,
			LastStatus: d.LastStatus, NextAttemptAt: d.NextAttemptAt,
		}
	}
	return out
}

func (s *Server) listMessages(c echo.Context) error {
	f, pos, limit, err := s.messageSearch(c)
	if err != nil {
		return err
	}
	a := actorOf(c)
	rows, err := s.ops.Messages(c.Request().Context(), a, f, pos, limit+1)
	if err != nil {
		return err
	}
	out := List[MessageJSON]{Items: make([]MessageJSON, 0, min(len(rows), limit))}
	for i, m := range rows {
		if i == limit {
			last := rows[limit-1]
			out.NextCursor = messageCursor{
				pos:   db.MessagePosition{ID: last.ID},
				since: f.Since, until: f.Until, scope: searchScope(f, a),
			}.encode()
			break
		}
		out.Items = append(out.Items, messageJSON(m))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getMessage(c echo.Context) error {
	id, err := pathID(c, "message")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rec, err := s.ops.Message(ctx, actorOf(c), id, nil)
	if err != nil {
		return err
	}
	m := rec.Message
	out := MessageDetailJSON{
		MessageJSON: messageJSON(db.MessageSummary{
			ID: m.ID, ReceivedAt: m.ReceivedAt, CarrierID: m.CarrierID, EventType: m.EventType,
			OrderingKey: m.OrderingKey, PayloadSize: m.PayloadSize, Offloaded: m.PayloadKey != "",
			Deliveries: rec.DeliveryList,
		}),
		PayloadSHA256:  hex.EncodeToString(m.PayloadSHA256),
		AdapterVersion: m.AdapterVersion,
	}
	if m.CanonicalEvent != nil {
		out.Event = jsonRaw(m.CanonicalEvent)
	}
	for i, d := range rec.DeliveryList {
		out.Deliveries[i].AttemptList = make([]AttemptJSON, len(d.AttemptList))
		for j, a := range d.AttemptList {
			out.Deliveries[i].AttemptList[j] = attemptJSON(a)
		}
	}
	switch {
	case m.PayloadKey == "" && json.Valid(m.Payload):
		out.Payload = jsonRaw(m.Payload)
	case m.PayloadKey == "":
		out.PayloadBase64 = base64.StdEncoding.EncodeToString(m.Payload)
	case s.payloads == nil:
		return hookrelay.Errorf(hookrelay.EUNAVAILABLE, "the payload store is not configured in this process")
	default:
		link, err := s.payloads.Presign(ctx, m.PayloadKey, payloadLinkTTL)
		if err != nil {
			return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the payload store could not sign a link", err)
		}
		out.PayloadURL = link
		out.PayloadURLExpiry = time.Now().Add(payloadLinkTTL).UTC().Format(time.RFC3339)
	}
	return c.JSON(http.StatusOK, out)
}
