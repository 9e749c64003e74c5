package hookrelay

import "net/http"

// httpStatus is the HTTP status of each error code, for the API and the
// dashboard alike.
var httpStatus = map[ErrorCode]int{
	EINVALID:       http.StatusBadRequest,
	EUNAUTHORIZED:  http.StatusUnauthorized,
	EBADSIGNATURE:  http.StatusUnauthorized,
	EFORBIDDEN:     http.StatusForbidden,
	ENOTFOUND:      http.StatusNotFound,
	ECONFLICT:      http.StatusConflict,
	EDUPLICATE:     http.StatusConflict,
	EPRECONDITION:  http.StatusConflict,
	EUNPROCESSABLE: http.StatusUnprocessableEntity,
	EGONE:          http.StatusGone,
	ETOOLARGE:      http.StatusRequestEntityTooLarge,
	EUNSUPPORTED:   http.StatusUnsupportedMediaType,
	ERATELIMIT:     http.StatusTooManyRequests,
	EUNAVAILABLE:   http.StatusServiceUnavailable,
	ETIMEOUT:       http.StatusGatewayTimeout,
	EINTERNAL:      http.StatusInternalServerError,
}

// HTTPStatus returns the HTTP status that answers err: the status of its
// code, 500 for an error without one (and 200 for nil).
func HTTPStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if s, ok := httpStatus[CodeOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}
