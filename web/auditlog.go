package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// auditPerPage is how many entries the audit log page shows at once.
const auditPerPage = 50

type auditData struct {
	Filter  auditForm
	Entries []auditRow
	// Next is the query of the next (older) page; "" on the last page.
	Next string
}

// auditForm is the search as the page's form gives it.
type auditForm struct {
	Actor, Action, TargetType, TargetID, Since, Until string
}

type auditRow struct {
	db.AuditEntry
	Changes []auditChange
}

// auditChange is one field of a before/after that differs ("" when absent).
type auditChange struct {
	Path, Before, After string
}

// auditLog shows the audit log, newest first, searched by actor, action,
// target and time (since/until: dates or RFC 3339 times), a page at a time
// (before: the id the page starts below), each entry with its changes.
func (d *Dashboard) auditLog(c echo.Context) error {
	q := c.QueryParams()
	form := auditForm{Actor: q.Get("actor"), Action: q.Get("action"), TargetType: q.Get("target_type"),
		TargetID: q.Get("target_id"), Since: q.Get("since"), Until: q.Get("until")}
	f := db.AuditFilter{Actor: form.Actor, Action: form.Action, TargetType: form.TargetType, TargetID: form.TargetID}
	var err error
	if f.Since, err = formTime(form.Since, "since"); err != nil {
		return err
	}
	if f.Until, err = formTime(form.Until, "until"); err != nil {
		return err
	}
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	rows, err := d.cfg.Ops.AuditEntriesNewest(c.Request().Context(), f, max(before, 0), auditPerPage+1)
	if err != nil {
		return err
	}
	data := auditData{Filter: form}
	if len(rows) > auditPerPage {
		rows = rows[:auditPerPage]
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("before", strconv.FormatInt(rows[auditPerPage-1].ID, 10))
		data.Next = next.Encode()
	}
	for _, e := range rows {
		data.Entries = append(data.Entries, auditRow{AuditEntry: e, Changes: auditDiff(e.Before, e.After)})
	}
	return d.render(c, http.StatusOK, "audit", view{Title: "Audit log", Nav: "audit", Data: data})
}

// formTime parses a date (2006-01-02, UTC) or an RFC 3339 time ("": none).
func formTime(s, name string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, hookrelay.Errorf(hookrelay.EINVALID, "%s: give a date such as 2026-01-31 or a time such as 2026-01-31T14:00:00Z", name)
	}
	return t, nil
}

// auditDiff lists the fields of before and after (JSON, "" for none) that
// differ, by dot path, in order.
func auditDiff(before, after string) []auditChange {
	if before == "" && after == "" {
		return nil
	}
	b, a := map[string]string{}, map[string]string{}
	flatten(before, b)
	flatten(after, a)
	var paths []string
	for p := range b {
		paths = append(paths, p)
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []auditChange
	for _, p := range paths {
		if b[p] != a[p] {
			out = append(out, auditChange{Path: p, Before: b[p], After: a[p]})
		}
	}
	return out
}

// flatten puts the leaves of the JSON document s into out by dot path,
// each as compact JSON; arrays are leaves.
func flatten(s string, out map[string]string) {
	if s == "" {
		return
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		out[""] = s
		return
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, x := range m {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x)
			}
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		out[prefix] = strings.TrimSpace(buf.String())
	}
	walk("", v)
}

// auditActions are the actions the search form suggests.
var auditActions = []string{"login", "login.failed", "logout", "message.read", "endpoint.", "carrier.", "merchant.",
	"dead_letters.", "delivery.retry", "replay.", "session.revoke", "ops_endpoint.", "portal_link.create",
	"settings.", "audit_log.export", audit.ActionPruned}
