package httpapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/engramdb/engram/engine"
)

// bodyTime is a time field of a request body. Unlike a time.Time it tells a
// field left out (or null) from one given as 0001-01-01T00:00:00Z, the zero
// time, which the store reads as "unset": a message's time became now,
// expires_at no expiry, valid_to stayed open (issue 26). A value that is not
// an RFC 3339 time is kept, cut, for an error that names the field.
type bodyTime struct {
	t   time.Time
	set bool
	bad string // quoted and cut; set when the value is no RFC 3339 time
}

// UnmarshalJSON reads an RFC 3339 string or null. It never fails: check
// reports a bad value with the field's name, which a decoder's error lacks.
func (b *bodyTime) UnmarshalJSON(data []byte) error {
	*b = bodyTime{}
	if string(data) == "null" {
		return nil
	}
	b.set = true
	if err := b.t.UnmarshalJSON(data); err != nil {
		var s string
		if json.Unmarshal(data, &s) == nil {
			b.bad = quote(s)
		} else {
			b.bad = "JSON " + quote(string(data))
		}
	}
	return nil
}

// timeCheck reads the times of one request and keeps the first error, so
// a handler reads them all and checks once.
type timeCheck struct {
	code string // the error code of a bad time: the call's class of bad input
	err  error
}

// get returns b's time, or the zero time for a field left out. A value
// that is no RFC 3339 time, the zero time, or a time the store cannot keep
// (before 1677-09-21 or after 2262-04-11) sets c's error, naming field.
func (c *timeCheck) get(field string, b bodyTime) time.Time {
	if !b.set || c.err != nil {
		return b.t
	}
	c.err = timeError(c.code, field, b)
	return b.t
}

func timeError(code, field string, b bodyTime) error {
	switch {
	case b.bad != "":
		// invalid_json, as before bodyTime: the value is not of the
		// field's type.
		return badRequest("invalid_json", "%s: %s is not an RFC 3339 time such as 2026-03-01T12:00:00Z", field, b.bad)
	case b.t.IsZero():
		return badRequest(code, "%s: %s is the zero time; leave the field out for none", field, b.t.Format(time.RFC3339))
	case engine.ValidateTime(b.t) != nil:
		return badRequest(code, "%s: %s is outside the times the store keeps, 1677-09-21 to 2262-04-11", field, b.t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// indexed names the field of the i-th element of list: messages[2].time.
func indexed(list string, i int, field string) string {
	return fmt.Sprintf("%s[%d].%s", list, i, field)
}
