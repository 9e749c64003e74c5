// Package apitest checks the API's traffic in tests against the OpenAPI
// document (package openapi): every request a test sends to an API route
// and every answer it gets. A request the document allows must get an
// answer the document describes; a request it refuses (a test sending bad
// input on purpose) must be refused. Only tests import this package, so the
// product binary does not carry the validator.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/hookrelay/hookrelay/openapi"
)

// maxCheckedRequestBody bounds the request bodies checked: API bodies are
// limited to 1 MiB, and the larger callbacks the tests send (to see them
// refused or offloaded) are any JSON object to the document.
const maxCheckedRequestBody = 1 << 20

// Checker validates exchanges against a document.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
}

// load parses the embedded document once for all the tests of a package.
var load = sync.OnceValues(func() (*Checker, error) { return NewChecker(openapi.Document) })

// Default returns the Checker of the embedded document.
func Default() (*Checker, error) { return load() }

// NewChecker parses and validates an OpenAPI 3.1 document.
func NewChecker(document []byte) (*Checker, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: router: %w", err)
	}
	return &Checker{doc: doc, router: router}, nil
}

// Document returns the parsed document.
func (c *Checker) Document() *openapi3.T { return c.doc }

// IsAPI reports whether path is one the document covers: the /v1 routes and
// the document itself (the dashboard, metrics and health are not the API).
func IsAPI(path string) bool {
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || path == "/openapi.json"
}

// bearer accepts a request that carries a bearer token. Which kind of key
// an operation takes is the server's to judge (401 or 403): the document
// names one scheme for all of them.
func bearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// Check validates one exchange. reqBody holds the request's body, or is nil
// when the caller could not see it (a streamed body), which is then not
// checked. respBody is the whole answer's body.
func (c *Checker) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	ctx := context.Background()
	probe := req.Clone(ctx)
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(probe)
	if err != nil {
		// Not in the document: the server must not know it either.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s is not in the OpenAPI document but was answered %d", req.Method, req.URL.Path, resp.StatusCode)
		}
		if err := c.checkError(respBody); err != nil {
			return fmt.Errorf("%s %s answered %d: %w", req.Method, req.URL.Path, resp.StatusCode, err)
		}
		return nil
	}
	in := &openapi3filter.RequestValidationInput{
		Request: probe, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: bearer,
			ExcludeRequestBody: reqBody == nil,
			MultiError:         true,
		},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && resp.StatusCode < 400 {
		return fmt.Errorf("%s %s: a request the OpenAPI document refuses was answered %d: %v", req.Method, req.URL.Path, resp.StatusCode, reqErr)
	}
	bodies := [][]byte{respBody}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), ndjson) {
		// JSON lines: each line is one value of the schema.
		bodies = bytes.Split(bytes.TrimSuffix(respBody, []byte("\n")), []byte("\n"))
		if len(respBody) == 0 {
			bodies = nil
		}
	}
	for _, body := range bodies {
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in,
			Status:                 resp.StatusCode,
			Header:                 resp.Header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			return fmt.Errorf("%s %s: answer %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, excerpt(body))
		}
	}
	return nil
}

// ndjson is the media type of JSON lines (GET /v1/audit-log), which Check
// validates line by line.
const ndjson = "application/x-ndjson"

func init() {
	openapi3filter.RegisterBodyDecoder(ndjson, func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		var v any
		err := json.NewDecoder(body).Decode(&v)
		return v, err
	})
}

// checkError validates an answer's body as the document's error shape.
func (c *Checker) checkError(body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the body is not JSON: %s", excerpt(body))
	}
	ref := c.doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return errors.New("the OpenAPI document has no Error schema")
	}
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("not the error shape: %v\nbody: %s", err, excerpt(body))
	}
	return nil
}

func excerpt(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "…"
	}
	return string(b)
}

// Transport is an http.RoundTripper that checks the exchanges of API routes
// (IsAPI) with Checker and hands every mismatch to Fail.
type Transport struct {
	Base    http.RoundTripper
	Checker *Checker
	Fail    func(error)
}

// RoundTrip sends req through Base and checks the exchange. The answer's
// body is read whole before it is returned.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !IsAPI(req.URL.Path) {
		return t.Base.RoundTrip(req)
	}
	var reqBody []byte
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		reqBody = []byte{}
	case req.GetBody != nil && req.ContentLength >= 0 && req.ContentLength <= maxCheckedRequestBody:
		// GetBody gives a fresh copy: req.Body is left for Base to send.
		if rc, err := req.GetBody(); err == nil {
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if err == nil {
				reqBody = b
			}
		}
	}
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, readErr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if readErr != nil {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(respBody), errReader{readErr}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err := t.Checker.Check(req, reqBody, resp, respBody); err != nil {
		t.Fail(err)
	}
	return resp, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// Wrap returns base (http.DefaultTransport when nil) checking every API
// exchange against the embedded document; a mismatch fails t.
func Wrap(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{Base: base, Checker: c, Fail: func(err error) { t.Errorf("OpenAPI: %v", err) }}
}

// Client returns an http.Client whose API exchanges are checked (Wrap).
func Client(t testing.TB) *http.Client {
	t.Helper()
	return &http.Client{Transport: Wrap(t, nil)}
}

// CloseIdleConnections closes Base's idle connections, as
// http.Client.CloseIdleConnections does for a bare transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
