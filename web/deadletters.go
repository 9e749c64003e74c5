package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// confirmCap bounds the count shown on the confirmation page ("more than").
const confirmCap = 10000

// maxSelected bounds how many dead letters one "selection" may name.
const maxSelected = 1000

const timeInput = "2006-01-02T15:04" // <input type="datetime-local">, UTC

// dlFilter is the dead-letter filter as the forms carry it.
type dlFilter struct {
	EndpointID, CarrierID int64
	Since                 string // timeInput, UTC; empty = open
}

func (f dlFilter) query() (db.DeadLetterFilter, error) {
	q := db.DeadLetterFilter{EndpointID: f.EndpointID, CarrierID: f.CarrierID}
	var err error
	if f.Since != "" {
		if q.Since, err = time.Parse(timeInput, f.Since); err != nil {
			return q, hookrelay.Errorf(hookrelay.EINVALID, "since: want a date and time like 2026-11-29T10:00")
		}
	}
	return q, nil
}

// selection is the dead letters the form names: ids, or else the filter.
func (a dlAction) selection() ops.DeadLetters {
	q, _ := a.Filter.query()
	return ops.DeadLetters{IDs: a.IDs, Filter: q}
}

// values renders the filter as query parameters.
func (f dlFilter) values() url.Values {
	v := url.Values{}
	if f.EndpointID > 0 {
		v.Set("endpoint_id", strconv.FormatInt(f.EndpointID, 10))
	}
	if f.CarrierID > 0 {
		v.Set("carrier_id", strconv.FormatInt(f.CarrierID, 10))
	}
	if f.Since != "" {
		v.Set("since", f.Since)
	}
	return v
}

func (f dlFilter) Empty() bool { return f == dlFilter{} }

func filterFrom(c echo.Context) (dlFilter, error) {
	var f dlFilter
	var err error
	if f.EndpointID, err = int64Query(c, "endpoint_id"); err != nil {
		return f, err
	}
	if f.CarrierID, err = int64Query(c, "carrier_id"); err != nil {
		return f, err
	}
	f.Since = strings.TrimSpace(firstNonEmpty(c.QueryParam("since"), c.FormValue("since")))
	_, err = f.query()
	return f, err
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type deadLettersData struct {
	Filter dlFilter
	Rows   []db.DeadLetter
	Next   string // query string of the next page; empty on the last
}

func (d *Dashboard) deadLetters(c echo.Context) error {
	f, err := filterFrom(c)
	if err != nil {
		return err
	}
	q, _ := f.query()
	page := db.DeadLetterPage{Newest: true}
	if cur := c.QueryParam("before"); cur != "" {
		ns, id, ok := strings.Cut(cur, "_")
		n, err1 := strconv.ParseInt(ns, 10, 64)
		i, err2 := strconv.ParseInt(id, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return hookrelay.Errorf(hookrelay.EINVALID, "bad page cursor")
		}
		page.At, page.ID = time.Unix(0, n).UTC(), i
	}
	rows, err := ops.ListDeadLettersFrom(c.Request().Context(), d.reads(c), q, page, pageSize+1)
	if err != nil {
		return err
	}
	data := deadLettersData{Filter: f}
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		lastRow := rows[len(rows)-1]
		v := f.values()
		v.Set("before", fmt.Sprintf("%d_%d", lastRow.CreatedAt.UnixNano(), lastRow.ID))
		data.Next = v.Encode()
	}
	data.Rows = rows
	return d.render(c, http.StatusOK, "deadletters", view{Title: "Dead letters", Nav: "dead", Data: data})
}

// dlAction is a retry or discard request from the forms.
type dlAction struct {
	Action   string // retry | discard
	Scope    string // selected | filter
	IDs      []int64
	Filter   dlFilter
	Count    int64
	MoreThan bool // Count is a lower bound
}

func actionFrom(c echo.Context) (dlAction, error) {
	a := dlAction{Action: c.FormValue("action"), Scope: c.FormValue("scope")}
	if a.Action != "retry" && a.Action != "discard" {
		return a, hookrelay.Errorf(hookrelay.EINVALID, "unknown action")
	}
	form, err := c.FormParams()
	if err != nil {
		return a, hookrelay.Errorf(hookrelay.EINVALID, "bad form")
	}
	switch a.Scope {
	case "selected":
		for _, s := range form["id"] {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id <= 0 {
				return a, hookrelay.Errorf(hookrelay.EINVALID, "bad dead letter id")
			}
			a.IDs = append(a.IDs, id)
		}
		if len(a.IDs) == 0 {
			return a, hookrelay.Errorf(hookrelay.EINVALID, "select at least one dead letter")
		}
		if len(a.IDs) > maxSelected {
			return a, hookrelay.Errorf(hookrelay.EINVALID, "select at most %d dead letters, or act on the filter", maxSelected)
		}
	case "filter":
		if a.Filter, err = filterFrom(c); err != nil {
			return a, err
		}
	default:
		return a, hookrelay.Errorf(hookrelay.EINVALID, "unknown scope")
	}
	return a, nil
}

func (d *Dashboard) deadLettersConfirm(c echo.Context) error {
	a, err := actionFrom(c)
	if err != nil {
		return err
	}
	if a.Scope == "selected" {
		a.Count = int64(len(a.IDs))
	} else {
		q, _ := a.Filter.query()
		n, err := d.cfg.Ops.CountDeadLetters(c.Request().Context(), q, confirmCap+1)
		if err != nil {
			return err
		}
		a.Count, a.MoreThan = min(n, confirmCap), n > confirmCap
	}
	return d.render(c, http.StatusOK, "confirm", view{Title: "Confirm", Nav: "dead", Data: a})
}

func (d *Dashboard) deadLettersApply(c echo.Context) error {
	o := d.cfg.Ops
	a, err := actionFrom(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var n int64
	if a.Action == "retry" {
		n, err = o.RetryDeadLetters(ctx, a.selection())
	} else {
		n, err = o.DiscardDeadLetters(ctx, a.selection())
	}
	if err != nil {
		return err
	}
	v := a.Filter.values()
	v.Set("done", map[string]string{"retry": "retried", "discard": "discarded"}[a.Action])
	v.Set("n", strconv.FormatInt(n, 10))
	return c.Redirect(http.StatusSeeOther, "/ui/dead-letters?"+v.Encode())
}
