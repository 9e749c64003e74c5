package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// ReplayJSON is a replay and its progress as the API shows it.
type ReplayJSON struct {
	ID          ID         `json:"id"`
	EndpointID  ID         `json:"endpoint_id"`
	Status      string     `json:"status"`
	OrderingKey string     `json:"ordering_key,omitempty"`
	Since       time.Time  `json:"since"`
	Until       time.Time  `json:"until"`
	Total       int64      `json:"total"`
	Done        int64      `json:"done"`
	Failed      int64      `json:"failed"`
	State       string     `json:"state"`
	CreatedAt   time.Time  `json:"created_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

func replayJSON(rp db.Replay) ReplayJSON {
	return ReplayJSON{
		ID: ID(rp.ID), EndpointID: ID(rp.EndpointID), Status: rp.Status, OrderingKey: rp.OrderingKey,
		Since: rp.Since, Until: rp.Until, Total: rp.Total, Done: rp.Done, Failed: rp.Failed,
		State: rp.State, CreatedAt: rp.CreatedAt, FinishedAt: rp.FinishedAt,
	}
}

type replayRequest struct {
	Since       string `json:"since"`
	Until       string `json:"until"`
	Status      string `json:"status"`
	OrderingKey string `json:"ordering_key"`
}

// replayTime parses a required RFC 3339 bound of the window.
func replayTime(raw, what string) (time.Time, error) {
	if raw == "" {
		return time.Time{}, invalidf("%s is required (an RFC 3339 time such as 2026-11-29T00:00:00Z)", what)
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, invalidf("%s must be an RFC 3339 time such as 2026-11-29T00:00:00Z", what)
	}
	return t, nil
}

func (s *Server) startReplay(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	var req replayRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	since, err := replayTime(req.Since, "since")
	if err != nil {
		return err
	}
	until, err := replayTime(req.Until, "until")
	if err != nil {
		return err
	}
	rp, err := s.ops.StartReplay(c.Request().Context(), actorOf(c), id, ops.ReplayRequest{
		Since: since, Until: until, Status: req.Status, OrderingKey: req.OrderingKey,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": ID(rp.ID), "count": rp.Total})
}

func (s *Server) getReplay(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	rp, err := s.ops.Replay(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, replayJSON(rp))
}

func (s *Server) cancelReplay(c echo.Context) error {
	id, err := pathID(c, "replay")
	if err != nil {
		return err
	}
	rp, err := s.ops.CancelReplay(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, replayJSON(rp))
}
