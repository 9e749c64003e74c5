package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/throttle"
)

// A form post that carries no session's CSRF token (the portal link's open
// form: its visitor has no session yet) is accepted only from a page of this
// dashboard, as the browser declares it:
//
//   - Origin present: its host (with port) must be the request's Host, the
//     address the browser asked for. The scheme is not compared: behind a
//     TLS-terminating proxy this process sees plain HTTP while the page's
//     origin is https://. Origin "null" (an opaque origin: a sandboxed
//     iframe, a data: or file: document, a post after a cross-origin
//     redirect) is refused, since any site can make one.
//   - Origin absent (a proxy or an extension removed it; browsers send it on
//     every POST): Sec-Fetch-Site must be "same-origin". "none" (a request
//     the user started without a page, such as the address bar) is refused
//     too: the open form is always posted by its own page, so no real visit
//     sends it, and a rule that admits only what the page sends is the one
//     to keep.
//   - Neither header: refused. A browser sends at least one of them, and a
//     client that is not a browser has no use for a portal session's cookie.

// maxLoggedOrigin bounds the Origin header written to the log.
const maxLoggedOrigin = 200

// fromOwnPage reports whether form post r declares that a page of this
// dashboard (the origin whose host is r.Host) sent it; see above.
func fromOwnPage(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		if o == "null" {
			return false
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return false
		}
		return strings.EqualFold(u.Host, r.Host)
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// sameOrigin refuses (403) a post that does not come from a page of this
// dashboard (fromOwnPage), before its handler runs; the refusal names the
// origin the form must be posted from and is logged at info (the headers
// that decided, never the form).
func (d *Dashboard) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if fromOwnPage(r) {
			return next(c)
		}
		origin := r.Header.Get("Origin")
		if len(origin) > maxLoggedOrigin {
			origin = origin[:maxLoggedOrigin] + "…"
		}
		_, hasOrigin := r.Header["Origin"]
		d.log.Info("form post refused: not from this dashboard's origin", "path", r.URL.Path,
			"origin", origin, "origin_sent", hasOrigin, "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"),
			"host", r.Host, "client", throttle.ClientAddr(r))
		return hookrelay.Errorf(hookrelay.EFORBIDDEN, "This form must be submitted from %s, from the page the link opens; open the link again.",
			c.Scheme()+"://"+r.Host)
	}
}
