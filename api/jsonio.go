package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
)

func invalidf(format string, args ...any) error {
	return hookrelay.Errorf(hookrelay.EINVALID, format, args...)
}

// maxRequestBytes bounds the JSON body of API (non-callback) requests.
const maxRequestBytes = 1 << 20

// decodeBody decodes the request's JSON body into v, refusing unknown
// fields, trailing data and bodies over maxRequestBytes. An empty body
// decodes as {}.
func decodeBody(c echo.Context, v any) error {
	body, err := readBody(c.Request(), maxRequestBytes)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	return decodeBytes(body, v)
}

func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	}
	msg := err.Error()
	return strings.TrimPrefix(msg, "json: ")
}

// ID is a bigint id, written as a JSON string and read from a string or a number.
type ID int64

// MarshalJSON writes the id as a decimal string.
func (id ID) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(id), 10) + `"`), nil
}

// UnmarshalJSON reads a decimal string or a number.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("invalid id %s", b)
	}
	*id = ID(n)
	return nil
}

// parseID parses an id path or query parameter.
func parseID(raw, what string) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "%s must be a positive integer id", what)
	}
	return n, nil
}

// pathID parses the :id path parameter; a malformed id is 404 (no such object).
func pathID(c echo.Context, what string) (int64, error) {
	n, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || n <= 0 {
		return 0, hookrelay.Errorf(hookrelay.ENOTFOUND, "%s not found", what)
	}
	return n, nil
}

// List is the shape of every list answer.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// cursor is an opaque keyset position: a time (may be zero) and an id.
type cursor struct {
	At time.Time
	ID int64
}

func (c cursor) encode() string {
	ns := int64(0)
	if !c.At.IsZero() {
		ns = c.At.UnixNano()
	}
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("v1:%d:%d", ns, c.ID)))
}

var errBadCursor = hookrelay.Errorf(hookrelay.EINVALID, "invalid cursor")

func decodeCursor(s string) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errBadCursor
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return cursor{}, errBadCursor
	}
	ns, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return cursor{}, errBadCursor
	}
	c := cursor{ID: id}
	if ns != 0 {
		c.At = time.Unix(0, ns).UTC()
	}
	return c, nil
}

// pageParams reads a list request's ?limit= (default 100, at most 1000) and
// ?cursor= (where the previous page ended; empty for the first page).
func pageParams(c echo.Context) (limit int, cur cursor, err error) {
	limit = 100
	if raw := c.QueryParam("limit"); raw != "" {
		limit, err = strconv.Atoi(raw)
		if err != nil || limit < 1 || limit > 1000 {
			return 0, cursor{}, hookrelay.Errorf(hookrelay.EINVALID, "limit must be between 1 and 1000")
		}
	}
	cur, err = decodeCursor(c.QueryParam("cursor"))
	return limit, cur, err
}

// page builds a list answer: with limit+1 items fetched, the extra one only
// says there is a next page, whose cursor at returns.
func page[T, R any](rows []R, limit int, view func(R) T, at func(R) cursor) List[T] {
	out := List[T]{Items: make([]T, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			out.NextCursor = at(rows[limit-1]).encode()
			break
		}
		out.Items = append(out.Items, view(r))
	}
	return out
}

// decodeBytes decodes a JSON object into v like decodeBody.
func decodeBytes(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return hookrelay.Errorf(hookrelay.EINVALID, "invalid JSON body: %s", jsonErrText(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return hookrelay.Errorf(hookrelay.EINVALID, "invalid JSON body: trailing data")
	}
	return nil
}
