package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"
	"unicode/utf8"
)

// Record is a unit of searchable data: a text, its embedding and metadata.
// Records live in partitions: one per (tenant, user), and one shared
// partition per tenant (a scope with an empty User).
type Record struct {
	// ID is assigned by [Tx.PutRecord] (a ULID string) unless set; setting
	// it replaces the record with that id.
	ID string
	// Text is the record's text.
	Text string
	// Context is more text the lexical index matches the record by, at
	// half the weight of Text, without it being part of Text: package
	// memory puts the message an episode answers there, since a reply's
	// words are often in the question before it.
	Context string
	// Vector is the record's embedding. All vectors of a partition have one
	// dimension, set by its first record.
	Vector []float32
	// Metadata is free-form string data (kind, tags, session, agent...).
	Metadata map[string]string
	// Time is when the record was written; zero on PutRecord means now.
	Time time.Time
	// ExpiresAt, when set on PutRecord, makes the store delete the record
	// at that time (one-second resolution): from then on no search or read
	// returns it. It is not stored with the record and is zero on reads.
	ExpiresAt time.Time
}

// recordFormat is the first byte of a stored record: 2 adds Context after
// Text; 1 (without it) is still read.
const (
	recordFormat   = 2
	recordFormatV1 = 1
)

// maxRecordDim bounds a stored vector.
const maxRecordDim = 1 << 16

// encodeRecord lays a record out as:
//
//	format u8 | time i64 | dim uvarint | dim × f32 | len uvarint text |
//	len uvarint context | pairs uvarint | (len uvarint key | len uvarint value)*
//
// little-endian, metadata sorted by key so equal records encode equally.
func encodeRecord(r *Record) []byte {
	n := 1 + 8 + binary.MaxVarintLen64*4 + 4*len(r.Vector) + len(r.Text) + len(r.Context)
	keys := make([]string, 0, len(r.Metadata))
	for k, v := range r.Metadata {
		keys = append(keys, k)
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	sort.Strings(keys)
	b := make([]byte, 0, n)
	b = append(b, recordFormat)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(r.Vector)))
	for _, f := range r.Vector {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	b = appendString(b, r.Text)
	b = appendString(b, r.Context)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, r.Metadata[k])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord is the inverse of encodeRecord; it never panics and bounds
// every length by the input's size.
func decodeRecord(b []byte) (Record, error) { return decodeRecordSkip(b, false) }

// decodeRecordSkip is decodeRecord, leaving the vector out when skip is
// set.
func decodeRecordSkip(b []byte, skip bool) (Record, error) {
	var r Record
	bad := func(what string) (Record, error) {
		return Record{}, fmt.Errorf("%w: record: %s", ErrCorrupt, what)
	}
	format, t, dim, b, what := recordHeader(b)
	if what != "" {
		return bad(what)
	}
	r.Time = t
	if dim > 0 && !skip {
		r.Vector = make([]float32, dim)
		for i := range r.Vector {
			r.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	b = b[4*dim:]
	var ok bool
	if r.Text, b, ok = readString(b); !ok {
		return bad("text")
	}
	if format >= 2 {
		if r.Context, b, ok = readString(b); !ok {
			return bad("context")
		}
	}
	pairs, n := binary.Uvarint(b)
	if n <= 0 || pairs > uint64(len(b)) {
		return bad("metadata count")
	}
	b = b[n:]
	if pairs > 0 {
		r.Metadata = make(map[string]string, pairs)
	}
	for range pairs {
		var k, v string
		if k, b, ok = readString(b); !ok {
			return bad("metadata key")
		}
		if v, b, ok = readString(b); !ok {
			return bad("metadata value")
		}
		r.Metadata[k] = v
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return r, nil
}

// recordHeader reads what every record starts with: the format byte, the
// time, and the vector's length, checked against the bytes left. It
// returns the bytes from the vector's first component on, or what is
// wrong.
func recordHeader(b []byte) (format byte, t time.Time, dim uint64, rest []byte, bad string) {
	if len(b) < 9 || (b[0] != recordFormat && b[0] != recordFormatV1) {
		return 0, time.Time{}, 0, nil, "unknown format"
	}
	format = b[0]
	t = time.Unix(0, int64(binary.LittleEndian.Uint64(b[1:9]))).UTC()
	b = b[9:]
	dim, n := binary.Uvarint(b)
	if n <= 0 || dim > maxRecordDim || uint64(len(b)-n) < 4*dim {
		return 0, time.Time{}, 0, nil, "vector length"
	}
	return format, t, dim, b[n:], ""
}

func readString(b []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return "", nil, false
	}
	return string(b[n : n+int(l)]), b[n+int(l):], true
}

// validateRecord checks what PutRecord stores.
func validateRecord(r *Record) error {
	switch {
	case len(r.Vector) == 0:
		return fmt.Errorf("%w: record has no vector", ErrDimensionMismatch)
	case len(r.Vector) > maxRecordDim:
		return fmt.Errorf("%w: vector of %d dimensions, limit %d", ErrDimensionMismatch, len(r.Vector), maxRecordDim)
	case !utf8.ValidString(r.Text) || !utf8.ValidString(r.Context):
		return fmt.Errorf("%w: record text is not valid UTF-8", ErrInvalidRecord)
	}
	if err := ValidateTime(r.Time); err != nil {
		return fmt.Errorf("%w: Time %w", ErrInvalidRecord, err)
	}
	if err := ValidateTime(r.ExpiresAt); err != nil {
		return fmt.Errorf("%w: ExpiresAt %w", ErrInvalidRecord, err)
	}
	for _, f := range r.Vector {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: vector has a NaN or infinite component", ErrInvalidRecord)
		}
	}
	for k, v := range r.Metadata {
		if err := ValidateID(k); err != nil {
			return fmt.Errorf("%w: metadata key %w", ErrInvalidRecord, err)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: metadata %q is not valid UTF-8", ErrInvalidRecord, k)
		}
	}
	return nil
}

// DecodeRecord decodes a record's stored value, as found under an NSRecord
// key by a caller that scans keys itself. The id is not part of the value:
// ID is empty.
func DecodeRecord(b []byte) (Record, error) { return decodeRecord(b) }
