package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/httperr"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds one template set per page: the layout plus the page's own file.
type pages struct {
	byName map[string]*template.Template
}

func parsePages() (*pages, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", n, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what every page template gets: the session, the CSRF token and the
// page's own data.
type view struct {
	Title   string
	Nav     string // active navigation entry
	Session *claims
	CSRF    string
	Refresh bool // auto-refresh (app.js) this page
	Flash   string
	// Replica says how current a page read from the read replica is
	// (render sets it; see Dashboard.reads).
	Replica string
	Data    any

	// names looks up the names the page shows (render sets it; see
	// view.Carrier and view.Merchant).
	names *nameBook
}

// ReadOnly reports whether the page is for a read-only portal session: it
// shows no form whose post the session would be refused (writable), and the
// layout says why.
func (v view) ReadOnly() bool { return v.Session != nil && v.Session.ReadOnly }

func (d *Dashboard) render(c echo.Context, status int, name string, v view) error {
	t, ok := d.pages.byName[name]
	if !ok {
		return fmt.Errorf("no template %q", name)
	}
	if cl, ok := c.Get("session").(claims); ok {
		v.Session = &cl
		v.CSRF = d.sessions.csrfToken(cl)
	}
	if v.Flash == "" {
		v.Flash = flashText(c.QueryParam("done"), c.QueryParam("n"))
	}
	v.names = &nameBook{ctx: c.Request().Context(), store: d.store, log: d.log}
	if c.Get(replicaReadKey) != nil {
		v.Replica = d.replicaNote(c.Request().Context())
		v.names.store = d.cfg.Replica
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// flashText turns a fixed result code from a redirect into a message (the
// text never comes from the query string).
func flashText(code, n string) string {
	num := func() string {
		for _, r := range n {
			if r < '0' || r > '9' {
				return "?"
			}
		}
		return n
	}
	switch code {
	case "retried":
		return "Retried " + num() + " dead letter(s)."
	case "discarded":
		return "Discarded " + num() + " dead letter(s)."
	case "enabled":
		return "Endpoint enabled."
	case "disabled":
		return "Endpoint disabled."
	case "retry":
		return "Delivery queued for retry."
	case "revoked":
		return "Session revoked."
	case "cancelled":
		return "Replay cancelled."
	case "opsdeleted":
		return "Ops endpoint deleted."
	case "created":
		return "Endpoint created. Reveal its signing secret below to verify deliveries."
	case "saved":
		return "Endpoint saved."
	case "deleted":
		return "Endpoint deleted."
	case "carrier-enabled":
		return "Carrier enabled: its callbacks are taken again."
	case "carrier-disabled":
		return "Carrier disabled: its callbacks are refused (403) until it is enabled."
	case "adapter-saved":
		return "Adapter version " + num() + " saved (inactive until activated)."
	case "adapter-activated":
		if n == "0" {
			return "Adapter turned off: the carrier's callbacks are relayed as they are."
		}
		return "Adapter version " + num() + " is active: the carrier's callbacks go through it."
	case "carrier-saved":
		return "Carrier saved."
	case "eventtype-created":
		return "Event type created."
	case "eventtype-saved":
		return "Event type saved."
	case "eventtype-deprecated":
		return "Event type deprecated: merchants see it marked; its events still validate."
	case "carrier-deleted":
		if n != "" && n != "0" {
			return "Carrier deleted; its " + num() + " undelivered callback(s) are still delivered."
		}
		return "Carrier deleted."
	}
	return ""
}

// renderError is the dashboard's renderer of failed requests (see Mount):
// an error page with the status and the client-safe message.
//
// A portal link's page (/ui/portal) offers no way on: its visitor is a
// merchant sent by its platform, who can neither use the dashboard nor has
// its key at hand; the message says to ask for a new link.
func (d *Dashboard) renderError(c echo.Context, a httperr.Answer) error {
	portal := strings.HasPrefix(c.Request().URL.Path, "/ui/portal")
	return d.render(c, a.Status, "error", view{Title: http.StatusText(a.Status), Data: map[string]any{"Status": a.Status, "Message": a.Message, "Portal": portal}})
}

// securityHeaders sets the headers of every /ui response: a CSP without
// inline script or style, no framing, and no caching of pages (they show
// secrets and operator data).
func (d *Dashboard) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.Contains(c.Request().URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

func (d *Dashboard) static(c echo.Context) error {
	name := path.Clean("static/" + c.Param("*"))
	if !strings.HasPrefix(name, "static/") {
		return echo.ErrNotFound
	}
	b, err := staticFS.ReadFile(name)
	if err != nil {
		return echo.ErrNotFound
	}
	ct := "application/octet-stream"
	switch path.Ext(name) {
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.Blob(http.StatusOK, ct, b)
}
