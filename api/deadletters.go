package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// DeadLetterJSON is a dead letter as the API shows it.
type DeadLetterJSON struct {
	ID          ID        `json:"id"`
	MessageID   ID        `json:"message_id"`
	EndpointID  ID        `json:"endpoint_id"`
	MerchantID  ID        `json:"merchant_id"`
	CarrierID   ID        `json:"carrier_id"`
	OrderingKey string    `json:"ordering_key"`
	EventType   string    `json:"event_type"`
	Attempts    int       `json:"attempts"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func deadLetterJSON(d db.DeadLetter) DeadLetterJSON {
	out := DeadLetterJSON{
		ID: ID(d.ID), MessageID: ID(d.MessageID), EndpointID: ID(d.EndpointID), MerchantID: ID(d.MerchantID),
		CarrierID: ID(d.CarrierID), OrderingKey: d.OrderingKey, EventType: d.EventType, Attempts: d.Attempts,
		LastError: d.LastError, CreatedAt: d.CreatedAt,
	}
	if d.LastStatus != nil {
		out.LastStatus = *d.LastStatus
	}
	return out
}

func parseSince(raw string) (time.Time, error) {
	if raw == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, invalidf("since must be an RFC 3339 time such as 2026-11-29T00:00:00Z")
	}
	return t, nil
}

func (s *Server) listDeadLetters(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	var f db.DeadLetterFilter
	for _, q := range []struct {
		name string
		dst  *int64
	}{{"endpoint_id", &f.EndpointID}, {"carrier_id", &f.CarrierID}, {"merchant_id", &f.MerchantID}} {
		if raw := c.QueryParam(q.name); raw != "" {
			if *q.dst, err = parseID(raw, q.name); err != nil {
				return err
			}
		}
	}
	if f.Since, err = parseSince(c.QueryParam("since")); err != nil {
		return err
	}
	rows, err := s.ops.ListDeadLetters(c.Request().Context(), f, db.DeadLetterPage{At: cur.At, ID: cur.ID}, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, deadLetterJSON, func(d db.DeadLetter) cursor {
		return cursor{At: d.CreatedAt, ID: d.ID}
	}))
}

// deadLetterSelection is the body of retry and discard: ids, or a filter.
type deadLetterSelection struct {
	IDs    []ID `json:"ids"`
	Filter *struct {
		EndpointID *ID    `json:"endpoint_id"`
		CarrierID  *ID    `json:"carrier_id"`
		MerchantID *ID    `json:"merchant_id"`
		Since      string `json:"since"`
	} `json:"filter"`
}

func (s *Server) selection(c echo.Context) (ops.DeadLetters, error) {
	var req deadLetterSelection
	var sel ops.DeadLetters
	if err := decodeBody(c, &req); err != nil {
		return sel, err
	}
	if (req.IDs == nil) == (req.Filter == nil) {
		return sel, invalidf(`send either "ids": [...] or "filter": {...}`)
	}
	if req.IDs != nil {
		sel.IDs = make([]int64, len(req.IDs))
		for i, id := range req.IDs {
			sel.IDs[i] = int64(id)
		}
		return sel, nil
	}
	opt := func(id *ID) int64 {
		if id == nil {
			return 0
		}
		return int64(*id)
	}
	f := &sel.Filter
	f.EndpointID, f.CarrierID, f.MerchantID = opt(req.Filter.EndpointID), opt(req.Filter.CarrierID), opt(req.Filter.MerchantID)
	var err error
	f.Since, err = parseSince(req.Filter.Since)
	return sel, err
}

func (s *Server) retryDeadLetters(c echo.Context) error {
	sel, err := s.selection(c)
	if err != nil {
		return err
	}
	n, err := s.ops.RetryDeadLetters(c.Request().Context(), sel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"count": n})
}

func (s *Server) discardDeadLetters(c echo.Context) error {
	sel, err := s.selection(c)
	if err != nil {
		return err
	}
	n, err := s.ops.DiscardDeadLetters(c.Request().Context(), sel)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"count": n})
}
