package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// DeliveryJSON is a delivery as the API shows it.
type DeliveryJSON struct {
	ID            ID            `json:"id"`
	EndpointID    ID            `json:"endpoint_id"`
	MessageID     ID            `json:"message_id"`
	Status        string        `json:"status"` // pending | delivered | dead
	OrderingKey   string        `json:"ordering_key,omitempty"`
	Ordered       bool          `json:"ordered"`
	Attempts      int           `json:"attempts"`
	NextAttemptAt *time.Time    `json:"next_attempt_at,omitempty"`
	LastStatus    int           `json:"last_status,omitempty"`
	LastError     string        `json:"last_error,omitempty"`
	At            time.Time     `json:"at"`
	AttemptList   []AttemptJSON `json:"attempt_history,omitempty"`
}

// AttemptJSON is one attempt of a delivery.
type AttemptJSON struct {
	Attempt         int       `json:"attempt"`
	AttemptedAt     time.Time `json:"attempted_at"`
	Outcome         string    `json:"outcome"`
	StatusCode      int       `json:"status_code"`
	LatencyMS       int       `json:"latency_ms"`
	Error           string    `json:"error,omitempty"`
	ResponseExcerpt string    `json:"response_excerpt,omitempty"`
}

func deliveryJSON(d db.Delivery) DeliveryJSON {
	return DeliveryJSON{
		ID: ID(d.ID), EndpointID: ID(d.EndpointID), MessageID: ID(d.MessageID), Status: d.State,
		OrderingKey: d.OrderingKey, Ordered: d.Ordered, Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt,
		LastStatus: d.LastStatus, LastError: d.LastError, At: d.At,
	}
}

func (s *Server) listDeliveries(c echo.Context) error {
	ep, err := s.ownedEndpoint(c)
	if err != nil {
		return err
	}
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	status := c.QueryParam("status")
	rows, err := s.ops.Deliveries(c.Request().Context(), ep, ops.DeliveryPage{Status: status, At: cur.At, ID: cur.ID, Limit: limit + 1})
	if err != nil {
		return err
	}
	at := func(d db.Delivery) cursor { return cursor{At: d.At, ID: d.ID} }
	if status == "" || status == db.DeliveryPending {
		at = func(d db.Delivery) cursor { return cursor{ID: d.ID} }
	}
	return c.JSON(http.StatusOK, page(rows, limit, deliveryJSON, at))
}

// ownedDelivery loads delivery :id, 404 when its endpoint is another merchant's.
func (s *Server) ownedDelivery(c echo.Context) (db.Delivery, []db.Attempt, error) {
	id, err := pathID(c, "delivery")
	if err != nil {
		return db.Delivery{}, nil, err
	}
	return s.ops.Delivery(c.Request().Context(), actorOf(c), id)
}

func (s *Server) getDelivery(c echo.Context) error {
	d, attempts, err := s.ownedDelivery(c)
	if err != nil {
		return err
	}
	out := deliveryJSON(d)
	out.AttemptList = make([]AttemptJSON, len(attempts))
	for i, a := range attempts {
		out.AttemptList[i] = attemptJSON(a)
	}
	return c.JSON(http.StatusOK, out)
}

func attemptJSON(a db.Attempt) AttemptJSON {
	return AttemptJSON{
		Attempt: a.Attempt, AttemptedAt: a.AttemptedAt, Outcome: a.Outcome, StatusCode: a.StatusCode,
		LatencyMS: int(a.Latency.Milliseconds()), Error: a.Error, ResponseExcerpt: a.ResponseExcerpt,
	}
}

func (s *Server) retryDelivery(c echo.Context) error {
	id, err := pathID(c, "delivery")
	if err != nil {
		return err
	}
	if err := s.ops.RetryDelivery(c.Request().Context(), actorOf(c), id); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": ID(id), "status": db.DeliveryPending})
}
