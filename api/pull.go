package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/ops"
)

// Pull delivery (docs/api.md, "Pull delivery"): a poll endpoint's
// deliveries are fetched with GET /v1/endpoints/{id}/events and
// acknowledged with POST /v1/endpoints/{id}/events/ack.

// MaxPullWait is the longest a pull waits for events (?wait=).
const MaxPullWait = 30 * time.Second

// pullRecheck is how often a waiting pull looks again while this process
// hears no announcements (no LISTEN session): without them it would miss
// the callbacks stored by other processes until its wait ran out.
const pullRecheck = time.Second

// EventJSON is one event of a pull: the delivery as a push would carry it.
// Body is the payload's bytes exactly as stored (the signature in Headers
// is over them); Cursor covers this event and every one before it.
type EventJSON struct {
	ID          string            `json:"id"`
	DeliveryID  ID                `json:"delivery_id"`
	EventType   string            `json:"event_type"`
	OrderingKey string            `json:"ordering_key"`
	Timestamp   time.Time         `json:"timestamp"`
	Attempt     int               `json:"attempt"`
	Headers     map[string]string `json:"headers"`
	Cursor      string            `json:"cursor"`
	Body        json.RawMessage   `json:"-"` // written verbatim by writePull
}

// LagJSON is what a poll endpoint has not acknowledged.
type LagJSON struct {
	// Pending counts its deliveries not acknowledged (up to 100,000).
	Pending int64 `json:"pending"`
	// Oldest is when the oldest of them was received (absent when none),
	// OldestAgeSeconds how long ago.
	Oldest           *time.Time `json:"oldest,omitempty"`
	OldestAgeSeconds float64    `json:"oldest_age_seconds"`
}

func lagJSON(l db.PullLag, now time.Time) *LagJSON {
	out := &LagJSON{Pending: l.Pending}
	if !l.Oldest.IsZero() {
		t := l.Oldest
		out.Oldest = &t
		out.OldestAgeSeconds = max(0, now.Sub(t).Seconds())
	}
	return out
}

// pullCursor is a pull position of one endpoint, opaque to clients.
type pullCursor struct {
	EndpointID int64
	At         db.PullPosition
}

func (c pullCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "p1:%d:%d:%d", c.EndpointID, c.At.Token, c.At.ID))
}

var errBadPullCursor = hookrelay.Errorf(hookrelay.EINVALID, "invalid cursor: give one this endpoint's pulls returned")

// decodePullCursor reads a cursor of endpoint endpointID ("" is the start).
func decodePullCursor(s string, endpointID int64) (db.PullPosition, error) {
	if s == "" {
		return db.PullPosition{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return db.PullPosition{}, errBadPullCursor
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 4 || parts[0] != "p1" {
		return db.PullPosition{}, errBadPullCursor
	}
	var n [3]int64
	for i, p := range parts[1:] {
		if n[i], err = strconv.ParseInt(p, 10, 64); err != nil || n[i] < 0 {
			return db.PullPosition{}, errBadPullCursor
		}
	}
	if n[0] != endpointID {
		return db.PullPosition{}, hookrelay.Errorf(hookrelay.EINVALID, "invalid cursor: it belongs to another endpoint")
	}
	return db.PullPosition{Token: n[1], ID: n[2]}, nil
}

// pullParams reads ?limit= (default ops.DefaultPullLimit) and ?wait= (a
// duration such as "20s", or seconds; at most MaxPullWait).
func pullParams(c echo.Context) (limit int, wait time.Duration, err error) {
	limit = ops.DefaultPullLimit
	if raw := c.QueryParam("limit"); raw != "" {
		limit, err = strconv.Atoi(raw)
		if err != nil || limit < 1 || limit > ops.MaxPullLimit {
			return 0, 0, invalidf("limit must be between 1 and %d", ops.MaxPullLimit)
		}
	}
	if raw := c.QueryParam("wait"); raw != "" {
		if secs, err := strconv.ParseFloat(raw, 64); err == nil {
			wait = time.Duration(secs * float64(time.Second))
		} else if wait, err = time.ParseDuration(raw); err != nil {
			return 0, 0, invalidf(`wait must be a duration such as "20s" (at most 30s)`)
		}
		if wait < 0 || wait > MaxPullWait {
			return 0, 0, invalidf(`wait must be a duration such as "20s" (at most 30s)`)
		}
	}
	return limit, wait, nil
}

// pullEvents answers GET /v1/endpoints/{id}/events: the events after the
// cursor, waiting up to ?wait= for the first when there are none.
func (s *Server) pullEvents(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	limit, wait, err := pullParams(c)
	if err != nil {
		return err
	}
	// The endpoint is checked before the cursor: another merchant's id is
	// 404 whatever the cursor says.
	ctx := c.Request().Context()
	actor := actorOf(c)
	if _, err := s.ops.PollEndpoint(ctx, actor, id); err != nil {
		return err
	}
	cursorText := c.QueryParam("cursor")
	after, err := decodePullCursor(cursorText, id)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		// Taken before the pull: a callback stored after the pull looked
		// closes it.
		stored := s.pull.C()
		ep, rows, err := s.ops.Pull(ctx, actor, id, after, limit)
		if err != nil {
			return err
		}
		left := time.Until(deadline)
		if len(rows) > 0 || left <= 0 {
			items, err := s.events(ctx, ep, rows)
			if err != nil {
				return err
			}
			next := cursorText
			if len(items) > 0 {
				next = items[len(items)-1].Cursor
			}
			return writePull(c, items, next)
		}
		if !s.pull.listen() {
			left = min(left, pullRecheck)
		}
		more, err := s.waitPull(ctx, stored, left)
		if err != nil {
			return err
		}
		if !more {
			// The server is stopping: answer now, with nothing.
			return writePull(c, []EventJSON{}, cursorText)
		}
	}
}

// waitPull waits until stored is closed or d passes, and reports whether
// to look again: false when the server is stopping (its Run ended), so
// that a shutdown does not wait for the pulls' waits to run out.
func (s *Server) waitPull(ctx context.Context, stored <-chan struct{}, d time.Duration) (bool, error) {
	s.metrics.pullWaiting.Inc()
	defer s.metrics.pullWaiting.Dec()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stored:
	case <-t.C:
	case <-s.pull.stopping():
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	s.metrics.pullWakeups.Inc()
	return true, nil
}

// events turns served deliveries into events: the payload (from the S3
// store when offloaded) and the headers a push would carry, signed with the
// endpoint's secrets at this moment.
func (s *Server) events(ctx context.Context, ep db.Endpoint, rows []db.PulledDelivery) ([]EventJSON, error) {
	if len(rows) == 0 {
		return []EventJSON{}, nil
	}
	cfgs, err := s.db.EndpointConfigLoad(ctx, []int64{ep.ID})
	if err != nil {
		return nil, err
	}
	var secrets []string
	if len(cfgs) == 1 {
		secrets = cfgs[0].Secrets
	}
	now := time.Now()
	out := make([]EventJSON, len(rows))
	for i, r := range rows {
		body, eventType := r.Payload, r.EventType
		if ep.Format == db.FormatCanonical && r.CanonicalEvent != nil {
			body, eventType = r.CanonicalEvent, r.CanonicalType
		} else if r.PayloadKey != "" {
			if body, err = s.payloads.Get(ctx, r.PayloadKey); err != nil {
				return nil, hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the payload store cannot be read; try again", err)
			}
		}
		if !r.MessageFound || !json.Valid(body) {
			body = []byte("null") // the message is gone (past retention)
		}
		msgID := "msg_" + strconv.FormatInt(r.MessageID, 10)
		ts := now.Unix()
		h := map[string]string{
			"Webhook-Id":               msgID,
			"Webhook-Timestamp":        strconv.FormatInt(ts, 10),
			"Idempotency-Key":          msgID,
			"Content-Type":             "application/json",
			"X-Hookrelay-Carrier":      r.CarrierName,
			"X-Hookrelay-Event-Type":   eventType,
			"X-Hookrelay-Ordering-Key": r.OrderingKey,
			"X-Hookrelay-Attempt":      strconv.Itoa(r.Attempt),
		}
		if len(secrets) > 0 {
			h["Webhook-Signature"] = dispatch.Sign(secrets, msgID, ts, body)
		}
		out[i] = EventJSON{
			ID: msgID, DeliveryID: ID(r.ID), EventType: eventType, OrderingKey: r.OrderingKey,
			Timestamp: r.MessageReceivedAt.UTC(), Attempt: r.Attempt, Headers: h, Body: body,
			Cursor: pullCursor{EndpointID: ep.ID, At: r.At}.encode(),
		}
	}
	return out, nil
}

// writePull answers 200 with {"items": [...], "next_cursor": ...}, each
// item's body written byte for byte as stored, so that the signature in its
// headers verifies over exactly what the client reads (encoding/json would
// compact it).
func writePull(c echo.Context, items []EventJSON, next string) error {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		meta, err := json.Marshal(it)
		if err != nil {
			return err
		}
		b.Write(meta[:len(meta)-1])
		b.WriteString(`,"body":`)
		b.Write(it.Body)
		b.WriteByte('}')
	}
	b.WriteString(`],"next_cursor":`)
	nc, _ := json.Marshal(next)
	b.Write(nc)
	b.WriteString("}\n")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b.Bytes())
}

// ackEvents answers POST /v1/endpoints/{id}/events/ack {"cursor": ...}:
// every event served at or before the cursor is acknowledged.
func (s *Server) ackEvents(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	var req struct {
		Cursor string `json:"cursor"`
	}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.ops.PollEndpoint(ctx, actorOf(c), id); err != nil {
		return err
	}
	if req.Cursor == "" {
		return invalidf("cursor is required: the cursor of the last event processed")
	}
	at, err := decodePullCursor(req.Cursor, id)
	if err != nil {
		return err
	}
	n, err := s.ops.AckPull(ctx, actorOf(c), id, at)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"acknowledged": n})
}
