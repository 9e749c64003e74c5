package sso

import (
	"html/template"
	"net/http"
)

// continuePage sends the browser on with a same-site navigation.
var continuePage = template.Must(template.New("continue").Parse(`<!doctype html>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={{.}}">
<title>Signed in</title>
<p>Signed in. <a href="{{.}}">Continue</a>.</p>
`))

// Continue answers a successful callback with a page that sends the
// browser on to target (a local path; anything else becomes "/").
//
// It is not a redirect on purpose: the callback is reached by a redirect
// chain that began at the provider, another site, and browsers send no
// SameSite=Strict cookie along such a chain, so a session cookie set at
// the callback would be missing on the first page after a 302. The page's
// own navigation (a meta refresh) is same-site and carries it.
func Continue(w http.ResponseWriter, target string) {
	if !IsLocalPath(target) {
		target = "/"
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_ = continuePage.Execute(w, target)
}
