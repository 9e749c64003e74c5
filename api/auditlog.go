package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// auditQueryParams are the query parameters GET /v1/audit-log takes.
var auditQueryParams = map[string]bool{"since": true, "until": true, "actor": true, "action": true,
	"target_type": true, "target_id": true, "cursor": true, "limit": true}

// defaultAuditExport is how many entries an export without limit streams.
const defaultAuditExport = 1000

// exportAuditLog streams the audit log as JSON lines (application/x-ndjson),
// one entry per line in chain order (oldest first), those matching the
// filters: since/until (RFC 3339: at in [since, until)), actor (a name or
// a kind), action (exact, or a prefix ending with a dot), target_type,
// target_id; after the entry cursor names (the id of the last line read),
// at most limit (default 1000, at most 100,000). Admins only.
func (s *Server) exportAuditLog(c echo.Context) error {
	for name := range c.QueryParams() {
		if !auditQueryParams[name] {
			return invalidf("unknown query parameter %q", name)
		}
	}
	var f db.AuditFilter
	since, err := parseTimeParam(c, "since")
	if err != nil {
		return err
	}
	until, err := parseTimeParam(c, "until")
	if err != nil {
		return err
	}
	if since != nil {
		f.Since = *since
	}
	if until != nil {
		f.Until = *until
	}
	f.Actor, f.Action = c.QueryParam("actor"), c.QueryParam("action")
	f.TargetType, f.TargetID = c.QueryParam("target_type"), c.QueryParam("target_id")
	after, err := optIDParam(c, "cursor")
	if err != nil {
		return err
	}
	limit := defaultAuditExport
	if raw := c.QueryParam("limit"); raw != "" {
		if limit, err = strconv.Atoi(raw); err != nil {
			return invalidf("limit must be a number")
		}
	}
	w := c.Response()
	enc := json.NewEncoder(w)
	started := false
	err = s.ops.ExportAudit(c.Request().Context(), f, after, limit, func(e db.AuditEntry) error {
		if !started {
			started = true
			w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		return enc.Encode(audit.View(e))
	})
	if started {
		return nil // the status is sent: a failure cuts the stream short
	}
	if err != nil {
		return err
	}
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	return c.NoContent(http.StatusOK)
}
