package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
)

// decode reads the request's JSON body into v. Unknown fields, a second
// value after the first and an empty body are errors (400); a body over the
// limit is 413.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		if err == nil {
			return badRequest("invalid_json", "the body holds more than one JSON value")
		}
		return decodeError(err)
	}
	return nil
}

func decodeError(err error) error {
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var timeErr *time.ParseError
	switch {
	case errors.As(err, &maxErr):
		return errBodyTooLarge(maxErr.Limit)
	case errors.Is(err, io.EOF):
		return badRequest("invalid_json", "the body is empty; this call needs a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("invalid_json", "the body ends in the middle of a JSON value")
	case errors.As(err, &syntaxErr):
		return badRequest("invalid_json", "the body is not valid JSON: %v (at byte %d)", syntaxErr, syntaxErr.Offset)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the body"
		}
		return badRequest("invalid_json", "%s must be %s, not JSON %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &timeErr):
		return badRequest("invalid_json", "%s is not an RFC 3339 time such as 2026-03-01T12:00:00Z", quote(timeErr.Value))
	}
	// DisallowUnknownFields and time parsing report plain errors:
	// `json: unknown field "x"`, `parsing time ...`.
	return badRequest("invalid_json", "%v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

// query reads typed query parameters and remembers the first error, so a
// handler reads them all and checks once. A parameter given twice is an
// error: it is never clear which one the client meant.
type query struct {
	v   url.Values
	err error
}

func newQuery(r *http.Request) *query {
	return &query{v: r.URL.Query()}
}

func (q *query) get(name string) (string, bool) {
	vs, ok := q.v[name]
	if !ok {
		return "", false
	}
	if len(vs) > 1 && q.err == nil {
		q.err = badRequest("invalid_parameter", "query parameter %s is given %d times", name, len(vs))
	}
	return vs[0], true
}

func (q *query) str(name string) string {
	s, _ := q.get(name)
	return s
}

// int reads a non-negative integer no larger than max; absent is 0.
func (q *query) int(name string, max int) int {
	s, ok := q.get(name)
	if !ok || q.err != nil {
		return 0
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		q.err = badRequest("invalid_parameter", "query parameter %s=%s is not an integer", name, quote(s))
	case n < 0:
		q.err = badRequest("invalid_parameter", "query parameter %s=%d is negative", name, n)
	case n > max:
		q.err = badRequest("invalid_parameter", "query parameter %s=%d is above the limit of %d", name, n, max)
	}
	return n
}

func (q *query) bool(name string) bool {
	s, ok := q.get(name)
	if !ok || q.err != nil {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		q.err = badRequest("invalid_parameter", "query parameter %s=%s is not true or false", name, quote(s))
	}
	return b
}

// time reads an RFC 3339 time the store can keep; absent is the zero time,
// which given explicitly is an error (the store would read it as absent).
func (q *query) time(name string) time.Time {
	s, ok := q.get(name)
	if !ok || q.err != nil {
		return time.Time{}
	}
	// An unescaped "+" of an offset arrives as a space.
	t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(s, " ", "+"))
	switch {
	case err != nil:
		q.err = badRequest("invalid_parameter", "query parameter %s=%s is not an RFC 3339 time such as 2026-03-01T12:00:00Z", name, quote(s))
	case t.IsZero():
		q.err = badRequest("invalid_parameter", "query parameter %s=%s is the zero time; leave the parameter out for none", name, quote(s))
	case engine.ValidateTime(t) != nil:
		q.err = badRequest("invalid_parameter", "query parameter %s=%s is outside the times the store keeps, 1677-09-21 to 2262-04-11", name, quote(s))
	}
	return t
}

// nonNil returns s, or an empty slice for nil, so a list is [] in JSON
// rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
