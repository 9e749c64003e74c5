// Package openapi holds the OpenAPI 3.1 document of the HTTP API, written
// by hand next to the handlers and served at GET /openapi.json. The API's
// tests check every request they send and every answer they get against it
// (internal/apitest), so it cannot drift from the code unnoticed.
package openapi

import (
	_ "embed"
	"net/http"
)

// Document is the OpenAPI document, as JSON.
//
//go:embed openapi.json
var Document []byte

// Handler serves Document.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(Document)
	})
}
