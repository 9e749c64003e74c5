package ingest

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
)

// statusOf maps hookrelay error codes to HTTP status codes (SPEC §3).
var statusOf = map[string]int{
	hookrelay.EINVALID:      http.StatusBadRequest,
	hookrelay.EUNAUTHORIZED: http.StatusUnauthorized,
	hookrelay.EBADSIGNATURE: http.StatusUnauthorized,
	hookrelay.EFORBIDDEN:    http.StatusForbidden,
	hookrelay.ENOTFOUND:     http.StatusNotFound,
	hookrelay.ECONFLICT:     http.StatusConflict,
	hookrelay.EDUPLICATE:    http.StatusConflict,
	hookrelay.EPRECONDITION: http.StatusConflict,
	hookrelay.EGONE:         http.StatusGone,
	hookrelay.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	hookrelay.EUNSUPPORTED:  http.StatusUnsupportedMediaType,
	hookrelay.ERATELIMIT:    http.StatusTooManyRequests,
	hookrelay.EUNAVAILABLE:  http.StatusServiceUnavailable,
	hookrelay.ETIMEOUT:      http.StatusGatewayTimeout,
	hookrelay.EINTERNAL:     http.StatusInternalServerError,
}

// codeOfStatus names echo's own errors (unknown route, wrong method, ...).
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            hookrelay.EINVALID,
	http.StatusUnauthorized:          hookrelay.EUNAUTHORIZED,
	http.StatusForbidden:             hookrelay.EFORBIDDEN,
	http.StatusNotFound:              hookrelay.ENOTFOUND,
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestEntityTooLarge: hookrelay.ETOOLARGE,
	http.StatusUnsupportedMediaType:  hookrelay.EUNSUPPORTED,
	http.StatusTooManyRequests:       hookrelay.ERATELIMIT,
	http.StatusServiceUnavailable:    hookrelay.EUNAVAILABLE,
}

// retryAfterError asks the client to wait Seconds before retrying (429, 503).
type retryAfterError struct {
	err     error
	Seconds int
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// withRetryAfter attaches a Retry-After to err.
func withRetryAfter(err error, seconds int) error {
	return &retryAfterError{err: err, Seconds: max(seconds, 1)}
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// NewHTTPErrorHandler returns the one echo error handler of the router: it
// turns hookrelay error codes into status codes and the {"error":{...}} body.
// Clients see only the error's safe message; 500s and 503s log their cause
// (which never holds keys or secrets: those are not put into errors).
func NewHTTPErrorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var body ErrorBody
		var status int
		var he *echo.HTTPError
		if errors.As(err, &he) && hookrelay.ErrorCode(err) == hookrelay.EINTERNAL {
			status = he.Code
			body.Error.Code = codeOfStatus[status]
			if body.Error.Code == "" {
				body.Error.Code = hookrelay.EINTERNAL
			}
			body.Error.Message = http.StatusText(status)
			if m, ok := he.Message.(string); ok && status < 500 {
				body.Error.Message = m
			}
		} else {
			code := hookrelay.ErrorCode(err)
			status = statusOf[code]
			if status == 0 {
				status = http.StatusInternalServerError
			}
			body.Error.Code = code
			body.Error.Message = hookrelay.ErrorMessage(err)
		}
		if status >= 500 {
			logger.Error("request failed", "method", c.Request().Method, "path", c.Path(),
				"status", status, "error", err)
			if status == http.StatusInternalServerError {
				body.Error.Code, body.Error.Message = hookrelay.EINTERNAL, "internal error"
			}
		}
		var ra *retryAfterError
		if errors.As(err, &ra) {
			c.Response().Header().Set("Retry-After", strconv.Itoa(ra.Seconds))
		} else if status == http.StatusServiceUnavailable {
			c.Response().Header().Set("Retry-After", "1")
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, body)
	}
}
