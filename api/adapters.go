package api

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// AdapterJSON is one version of a carrier's adapter. Source is present
// when the version is shown alone (GET, POST).
type AdapterJSON struct {
	CarrierID  ID        `json:"carrier_id"`
	Version    int       `json:"version"`
	Active     bool      `json:"active"`
	Note       string    `json:"note"`
	SourceSize int       `json:"source_size"`
	Source     *string   `json:"source,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

func adapterJSON(a db.CarrierAdapter, active int, withSource bool) AdapterJSON {
	out := AdapterJSON{CarrierID: ID(a.CarrierID), Version: a.Version, Active: a.Version == active, Note: a.Note,
		SourceSize: a.SourceSize, CreatedAt: a.CreatedAt}
	if withSource {
		src := a.Source
		out.Source = &src
	}
	return out
}

// AdapterListJSON is a carrier's adapter versions, newest first.
type AdapterListJSON struct {
	// ActiveVersion is the version its callbacks go through, null when none.
	ActiveVersion *int `json:"active_version"`
	// OnFailure is what a callback the adapter fails on becomes: "refuse"
	// (422) or "park".
	OnFailure string        `json:"on_failure"`
	Items     []AdapterJSON `json:"items"`
}

type createAdapterRequest struct {
	Source string `json:"source"`
	Note   string `json:"note"`
}

// createAdapter answers POST /v1/carriers/{id}/adapters: a JSON body
// {"source", "note"}, or the source itself with any other content type
// (e.g. application/javascript).
func (s *Server) createAdapter(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	var req createAdapterRequest
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	if mt == "" || isJSON(mt) {
		if err := decodeBody(c, &req); err != nil {
			return err
		}
	} else {
		body, err := readBody(c.Request(), maxRequestBytes)
		if err != nil {
			return err
		}
		req.Source, req.Note = string(body), c.QueryParam("note")
	}
	a, err := s.ops.CreateAdapter(c.Request().Context(), id, ops.NewAdapter{Source: req.Source, Note: req.Note})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, adapterJSON(a, 0, true))
}

func (s *Server) listAdapters(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	l, err := s.ops.CarrierAdapters(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, adapterListJSON(l))
}

func adapterListJSON(l ops.AdapterList) AdapterListJSON {
	out := AdapterListJSON{OnFailure: l.Carrier.AdapterOnFailure, Items: make([]AdapterJSON, len(l.Versions))}
	if v := l.Carrier.AdapterVersion; v != 0 {
		out.ActiveVersion = &v
	}
	for i, a := range l.Versions {
		out.Items[i] = adapterJSON(a, l.Carrier.AdapterVersion, false)
	}
	return out
}

// adapterPath reads the carrier id and the version of an adapter route.
func adapterPath(c echo.Context) (int64, int, error) {
	id, err := pathID(c, "carrier")
	if err != nil {
		return 0, 0, err
	}
	v, err := strconv.Atoi(c.Param("version"))
	if err != nil || v <= 0 {
		return 0, 0, hookrelay.Errorf(hookrelay.ENOTFOUND, "adapter version not found")
	}
	return id, v, nil
}

func (s *Server) getAdapter(c echo.Context) error {
	id, v, err := adapterPath(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, err := s.ops.CarrierAdapter(ctx, id, v)
	if err != nil {
		return err
	}
	car, err := s.db.CarrierGet(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, adapterJSON(a, car.AdapterVersion, true))
}

// activateAdapter answers POST /v1/carriers/{id}/adapters/{version}/activate
// (rolling back is activating an older version) with the carrier's list.
func (s *Server) activateAdapter(c echo.Context) error {
	id, v, err := adapterPath(c)
	if err != nil {
		return err
	}
	return s.setActiveAdapter(c, id, v)
}

// deactivateAdapter answers POST /v1/carriers/{id}/adapters/deactivate.
func (s *Server) deactivateAdapter(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	return s.setActiveAdapter(c, id, 0)
}

func (s *Server) setActiveAdapter(c echo.Context, id int64, v int) error {
	ctx := c.Request().Context()
	if _, err := s.ops.ActivateAdapter(ctx, id, v); err != nil {
		return err
	}
	_, _ = s.routes.Refresh(ctx)
	l, err := s.ops.CarrierAdapters(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, adapterListJSON(l))
}

type dryRunRequest struct {
	Limit int `json:"limit"`
}

// DryRunJSON is the result of a dry run.
type DryRunJSON struct {
	Version       int              `json:"version"`
	ActiveVersion *int             `json:"active_version"`
	Summary       DryRunSummary    `json:"summary"`
	Items         []DryRunItemJSON `json:"items"`
	Truncated     bool             `json:"truncated"`
}

// DryRunSummary counts a dry run's results.
type DryRunSummary struct {
	Callbacks    int `json:"callbacks"`
	OK           int `json:"ok"`
	Dropped      int `json:"dropped"`
	Failed       int `json:"failed"`
	SchemaFailed int `json:"schema_failed"`
	LimitFailed  int `json:"limit_failed"`
	Same         int `json:"same"`
	Changed      int `json:"changed"`
}

// DryRunItemJSON is a dry run's result for one stored callback, and the
// active version's when it differs.
type DryRunItemJSON struct {
	MessageID  ID             `json:"message_id"`
	ReceivedAt time.Time      `json:"received_at"`
	Result     AdapterRunJSON `json:"result"`
	// Diff is "same" or "changed" against the active version; absent
	// without one.
	Diff   string          `json:"diff,omitempty"`
	Active *AdapterRunJSON `json:"active,omitempty"`
}

// AdapterRunJSON is one version's result for one callback: "event" with
// the event (the body canonical endpoints receive), "dropped", or "failed"
// with the reason and the error.
type AdapterRunJSON struct {
	Outcome string          `json:"outcome"`
	Event   json.RawMessage `json:"event,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func adapterRunJSON(r ops.AdapterRun) AdapterRunJSON {
	return AdapterRunJSON{Outcome: r.Outcome, Event: r.Event, Reason: string(r.Reason), Error: r.Error}
}

func (s *Server) dryRunAdapter(c echo.Context) error {
	id, v, err := adapterPath(c)
	if err != nil {
		return err
	}
	var req dryRunRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	res, err := s.ops.DryRunAdapter(c.Request().Context(), id, v, req.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DryRunJSONOf(res))
}

// DryRunJSONOf is the API's view of a dry run (the dashboard shows the same).
func DryRunJSONOf(res ops.DryRun) DryRunJSON {
	sum := res.Summary
	out := DryRunJSON{Version: res.Version, Truncated: res.Truncated, Items: make([]DryRunItemJSON, len(res.Items)),
		Summary: DryRunSummary{Callbacks: sum.Callbacks, OK: sum.Events, Dropped: sum.Dropped, Failed: sum.Failed,
			SchemaFailed: sum.SchemaFailed, LimitFailed: sum.LimitFailed, Same: sum.Same, Changed: sum.Changed}}
	if res.ActiveVersion != 0 {
		v := res.ActiveVersion
		out.ActiveVersion = &v
	}
	for i, it := range res.Items {
		out.Items[i] = DryRunItemJSON{MessageID: ID(it.MessageID), ReceivedAt: it.ReceivedAt, Result: adapterRunJSON(it.Result), Diff: it.Diff}
		if it.Active != nil && it.Diff != ops.DiffSame {
			a := adapterRunJSON(*it.Active)
			out.Items[i].Active = &a
		}
	}
	return out
}

// ParkedJSON is a parked callback: accepted, delivered to raw endpoints,
// waiting for its carrier's adapter to make its event.
type ParkedJSON struct {
	MessageID      ID        `json:"message_id"`
	ReceivedAt     time.Time `json:"received_at"`
	OrderingKey    string    `json:"ordering_key"`
	AdapterVersion int       `json:"adapter_version"`
	Error          string    `json:"error"`
}

func (s *Server) listParked(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.ops.ParkedCallbacks(c.Request().Context(), id, cur.At, cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, func(m db.StoredCallback) ParkedJSON {
		return ParkedJSON{MessageID: ID(m.ID), ReceivedAt: m.ReceivedAt, OrderingKey: m.OrderingKey, AdapterVersion: m.AdapterVersion, Error: m.AdapterError}
	}, func(m db.StoredCallback) cursor { return cursor{At: m.ReceivedAt, ID: m.ID} }))
}

type unparkRequest struct {
	Limit int `json:"limit"`
}

// UnparkJSON counts what an unpark pass did.
type UnparkJSON struct {
	Unparked   int    `json:"unparked"`
	Failed     int    `json:"failed"`
	Deliveries int    `json:"deliveries"`
	LastError  string `json:"last_error,omitempty"`
}

func (s *Server) unparkCallbacks(c echo.Context) error {
	id, err := pathID(c, "carrier")
	if err != nil {
		return err
	}
	req := unparkRequest{Limit: 100}
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	res, err := s.ops.UnparkCallbacks(c.Request().Context(), id, req.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, UnparkJSON{Unparked: res.Unparked, Failed: res.Failed, Deliveries: res.Deliveries, LastError: res.LastError})
}
