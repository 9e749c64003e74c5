// Package hookrelay holds the domain types and error kinds shared by the
// api, ingest, ops, dispatch, web and db packages. It imports only the
// standard library.
package hookrelay

import (
	"errors"
	"fmt"
	"hash/fnv"
)

// ErrorCode names a kind of error a caller may need to tell apart. It is
// what API clients see in {"error":{"code":...}}, so its values never change.
type ErrorCode string

// Error codes. Every error a caller may need to tell apart carries one;
// HTTPStatus maps them to HTTP statuses for the API and the dashboard.
const (
	ECONFLICT     ErrorCode = "conflict"          // the object exists or is in the wrong state
	EINTERNAL     ErrorCode = "internal"          // a bug or an unexpected failure
	EINVALID      ErrorCode = "invalid"           // the input is wrong; the message says how
	ENOTFOUND     ErrorCode = "not_found"         // no such object (or not yours)
	EUNAUTHORIZED ErrorCode = "unauthorized"      // missing or bad credentials
	EFORBIDDEN    ErrorCode = "forbidden"         // credentials of the wrong kind
	ETOOLARGE     ErrorCode = "too_large"         // a body over the limit
	EUNSUPPORTED  ErrorCode = "unsupported"       // e.g. a content type we do not take
	ERATELIMIT    ErrorCode = "rate_limited"      // over a configured rate
	EUNAVAILABLE  ErrorCode = "unavailable"       // a dependency (database, S3) cannot take it now
	EDUPLICATE    ErrorCode = "duplicate"         // an idempotency key seen before
	ETIMEOUT      ErrorCode = "timeout"           // the operation took too long
	EGONE         ErrorCode = "gone"              // the object was deleted
	EPRECONDITION ErrorCode = "precondition"      // the request conflicts with current state
	EBADSIGNATURE ErrorCode = "invalid_signature" // an HMAC that does not verify
	// EUNPROCESSABLE is a well-formed request whose content cannot be
	// used: a callback its carrier's adapter fails on, or whose canonical
	// event fails its type's schema (422).
	EUNPROCESSABLE ErrorCode = "unprocessable"
	// EMETHOD is a route asked with a method it does not serve (echo's own
	// 405; no handler returns it).
	EMETHOD ErrorCode = "method_not_allowed"
)

// Error is an application error with a code and a message safe to show to the
// client. The wrapped cause (if any) is for logs only.
type Error struct {
	Code    ErrorCode
	Message string
	Err     error
}

// Error returns the message and, for logs, the cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the code and message wrapping cause.
func WrapError(code ErrorCode, message string, cause error) *Error {
	return &Error{Code: code, Message: message, Err: cause}
}

// CodeOf returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error and "" for nil.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the message of the
// first *Error in its chain, or a generic text for anything else.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// DefaultQueues is the default number of logical queues.
const DefaultQueues = 32

// QueueFor maps an ordering key onto one of n logical queues. It is the one
// function used everywhere a key's queue is computed (FNV-1a, 32 bit).
func QueueFor(orderingKey string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderingKey))
	return int(h.Sum32() % uint32(n))
}
