// Package httperr answers the requests that fail: one echo error handler for
// the whole router turns an error into its HTTP status
// (hookrelay.HTTPStatus), a code and a client-safe message, and hands them to
// a renderer: the JSON {"error":{"code","message"}} of the API by default, or
// the one registered for the request's path prefix (the dashboard's HTML
// pages).
package httperr

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
)

// Answer is what a client is told of a failed request.
type Answer struct {
	Status  int
	Code    hookrelay.ErrorCode
	Message string // safe to show: never the cause
}

// Renderer writes the answer's body with its status.
type Renderer func(c echo.Context, a Answer) error

// Body is the JSON shape of every error answer of the API.
type Body struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// JSON renders the answer as a Body.
func JSON(c echo.Context, a Answer) error {
	var b Body
	b.Error.Code, b.Error.Message = string(a.Code), a.Message
	return c.JSON(a.Status, b)
}

// codeOfStatus names echo's own errors (unknown route, wrong method, ...).
var codeOfStatus = map[int]hookrelay.ErrorCode{
	http.StatusBadRequest:            hookrelay.EINVALID,
	http.StatusUnauthorized:          hookrelay.EUNAUTHORIZED,
	http.StatusForbidden:             hookrelay.EFORBIDDEN,
	http.StatusNotFound:              hookrelay.ENOTFOUND,
	http.StatusMethodNotAllowed:      hookrelay.EMETHOD,
	http.StatusRequestEntityTooLarge: hookrelay.ETOOLARGE,
	http.StatusUnsupportedMediaType:  hookrelay.EUNSUPPORTED,
	http.StatusUnprocessableEntity:   hookrelay.EUNPROCESSABLE,
	http.StatusTooManyRequests:       hookrelay.ERATELIMIT,
	http.StatusServiceUnavailable:    hookrelay.EUNAVAILABLE,
}

// retryAfter asks the client to wait seconds before trying again.
type retryAfter struct {
	err     error
	seconds int
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// WithRetryAfter has the answer to err carry Retry-After: seconds (at least
// 1). Without it a 503 says 1.
func WithRetryAfter(err error, seconds int) error {
	return &retryAfter{err: err, seconds: max(seconds, 1)}
}

// AnswerFor settles the status, code and message for err.
func AnswerFor(err error) Answer {
	var a Answer
	var he *echo.HTTPError
	if errors.As(err, &he) && hookrelay.CodeOf(err) == hookrelay.EINTERNAL {
		// echo's own (unknown route, wrong method, ...): its status stands.
		a.Status = he.Code
		a.Code = codeOfStatus[a.Status]
		if a.Code == "" {
			a.Code = hookrelay.EINTERNAL
		}
		a.Message = http.StatusText(a.Status)
		if m, ok := he.Message.(string); ok && a.Status < 500 {
			a.Message = m
		}
	} else {
		a.Status = hookrelay.HTTPStatus(err)
		a.Code = hookrelay.CodeOf(err)
		a.Message = hookrelay.ErrorMessage(err)
	}
	if a.Status == http.StatusInternalServerError {
		a.Code, a.Message = hookrelay.EINTERNAL, "internal error"
	}
	return a
}

type prefixed struct {
	prefix string
	render Renderer
}

// Handler is the router's one error handler. Register renderers before the
// server starts: Handle reads them without a lock.
type Handler struct {
	logger    *slog.Logger
	renderers []prefixed
}

// New returns a handler that logs the causes of 5xx answers to logger (the
// cause never holds keys or secrets: those are not put into errors).
func New(logger *slog.Logger) *Handler {
	return &Handler{logger: logger}
}

// Install makes h the error handler of e.
func (h *Handler) Install(e *echo.Echo) { e.HTTPErrorHandler = h.Handle }

// Render has requests whose path is prefix or below it answered by r
// instead of JSON.
func (h *Handler) Render(prefix string, r Renderer) {
	h.renderers = append(h.renderers, prefixed{strings.TrimSuffix(prefix, "/"), r})
}

func (h *Handler) rendererFor(path string) Renderer {
	for _, p := range h.renderers {
		if path == p.prefix || strings.HasPrefix(path, p.prefix+"/") {
			return p.render
		}
	}
	return JSON
}

// Handle is the echo.HTTPErrorHandler.
func (h *Handler) Handle(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	a := AnswerFor(err)
	if a.Status >= 500 {
		h.logger.Error("request failed", "method", c.Request().Method, "path", c.Path(),
			"status", a.Status, "error", err)
	}
	var ra *retryAfter
	if errors.As(err, &ra) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ra.seconds))
	} else if a.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "1")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(a.Status)
		return
	}
	if rerr := h.rendererFor(c.Request().URL.Path)(c, a); rerr != nil && !c.Response().Committed {
		h.logger.Error("render error answer", "path", c.Path(), "error", rerr)
		_ = JSON(c, a)
	}
}
