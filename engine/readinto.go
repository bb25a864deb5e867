package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/oklog/ulid/v2"
)

// GetRecordFields returns the record with id in a space of scope's
// partition like [Tx.GetRecord], but only its ID, Text and Time: Vector,
// Context and Metadata are left empty, and the values of the metadata keys
// named by keys are stored in vals instead, in the same order ("" for a key
// the record lacks). vals must be at least as long as keys. The record is
// decoded in the store's buffer, with no copy of the stored value and no
// metadata map, and still checked whole: a record GetRecord reports as
// corrupt is reported as corrupt here. It is for a reader that needs the
// text and a few values of many records (package memory's Recall).
func (tx *Tx) GetRecordFields(scope Scope, space, id string, keys, vals []string) (Record, error) {
	if len(vals) < len(keys) {
		return Record{}, fmt.Errorf("%w: %d values for %d keys", ErrInvalidRecord, len(vals), len(keys))
	}
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return Record{}, err
	}
	rid, err := ulid.ParseStrict(id)
	if err != nil {
		return Record{}, fmt.Errorf("%w: id %q is not a ULID", ErrNotFound, id)
	}
	var r Record
	err = tx.t.GetFunc(Key(prefix, NSRecord, rid[:]), func(b []byte) (err error) {
		r, err = decodeRecordFields(b, keys, vals)
		return err
	})
	if err != nil {
		return Record{}, convert(err)
	}
	r.ID = id
	return r, nil
}

// decodeRecordFields is decodeRecord for GetRecordFields: the same checks,
// but only Text and Time are decoded, and the values of keys into vals. The
// strings it returns are copies: b may be reused once it returns.
func decodeRecordFields(b []byte, keys, vals []string) (Record, error) {
	var r Record
	vals = vals[:len(keys)]
	clear(vals)
	bad := func(what string) (Record, error) {
		clear(vals)
		return Record{}, fmt.Errorf("%w: record: %s", ErrCorrupt, what)
	}
	format, t, dim, b, what := recordHeader(b)
	if what != "" {
		return bad(what)
	}
	r.Time = t
	b = b[4*dim:]
	text, b, ok := sliceString(b)
	if !ok {
		return bad("text")
	}
	if format >= 2 {
		if _, b, ok = sliceString(b); !ok {
			return bad("context")
		}
	}
	pairs, n := binary.Uvarint(b)
	if n <= 0 || pairs > uint64(len(b)) {
		return bad("metadata count")
	}
	b = b[n:]
	for range pairs {
		var k, v []byte
		if k, b, ok = sliceString(b); !ok {
			return bad("metadata key")
		}
		if v, b, ok = sliceString(b); !ok {
			return bad("metadata value")
		}
		for i, want := range keys {
			if string(k) == want { // a later pair wins, as in the map
				vals[i] = string(v)
			}
		}
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	r.Text = string(text)
	return r, nil
}

// sliceString is readString without the copy: the string's bytes in b.
func sliceString(b []byte) ([]byte, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
