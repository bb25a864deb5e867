package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// MaxSourceLength bounds Fact.Source, in bytes.
const MaxSourceLength = 4096

// Fact is one triple, Subject —Predicate→ Object, with bi-temporal validity:
// it holds in the world over event time [ValidFrom, ValidTo), and the store
// has believed that since CreatedAt; ExpiredAt is when the store learned it
// stopped holding (when ValidTo was set by a later fact or by Invalidate).
//
// Subject and Object name entities; they are stored with the display name of
// the entity they resolve to (an alias resolves to its entity). Names and
// predicates are compared folded (see [Fold]).
type Fact struct {
	// ID is assigned by Relate: a ULID in the time order of creation.
	ID string `json:"id,omitempty"`

	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`

	// ValidFrom is when the fact began to hold; zero at Relate means now.
	ValidFrom time.Time `json:"valid_from"`
	// ValidTo is when it stopped holding; zero means it still holds.
	ValidTo time.Time `json:"valid_to,omitzero"`
	// CreatedAt is when the store recorded the fact; set by Relate.
	CreatedAt time.Time `json:"created_at"`
	// ExpiredAt is when the store recorded that the fact stopped holding;
	// zero while it holds.
	ExpiredAt time.Time `json:"expired_at,omitzero"`

	// Source says where the fact came from: a message id, a document, a
	// URL. Free text up to [MaxSourceLength] bytes.
	Source string `json:"source,omitempty"`
	// Confidence in [0, 1]; zero at Relate means 1.
	Confidence float64 `json:"confidence"`
}

// ValidAt reports whether the fact holds at event time t:
// ValidFrom <= t < ValidTo, or ValidTo is zero.
func (f *Fact) ValidAt(t time.Time) bool {
	return !f.ValidFrom.After(t) && (f.ValidTo.IsZero() || t.Before(f.ValidTo))
}

// Time bounds: stored times are Unix nanoseconds in an int64.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

func checkTime(what string, t time.Time) error {
	if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
		return fmt.Errorf("%w: %s %v is outside the years 1678-2261", ErrInvalidFact, what, t)
	}
	return nil
}

// nanos encodes a time as Unix nanoseconds, with 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// validity is the part of a stored fact that filters read first.
type validity struct{ from, to int64 }

func (v validity) at(t int64) bool { return v.from <= t && (v.to == 0 || t < v.to) }

func (v validity) open() bool { return v.to == 0 }

// Stored fact values (under the SPO and OSP index keys):
//
//	0      version (1)
//	1-8    ValidFrom, Unix ns, big-endian int64 (0 = zero time)
//	9-16   ValidTo
//	17-24  CreatedAt
//	25-32  ExpiredAt
//	33-40  Confidence, float64 bits
//	then   Subject, Predicate, Object, Source: each uvarint length + bytes
//
// The fixed head lets traversal test validity without decoding strings.
const (
	factVersion = 1
	factHead    = 41
)

func appendFact(b []byte, f *Fact) []byte {
	b = append(b, factVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(f.ValidFrom)))
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(f.ValidTo)))
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(f.CreatedAt)))
	b = binary.BigEndian.AppendUint64(b, uint64(nanos(f.ExpiredAt)))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(f.Confidence))
	for _, s := range [...]string{f.Subject, f.Predicate, f.Object, f.Source} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// readValidity reads the validity interval of a stored fact value.
func readValidity(b []byte) (validity, error) {
	if len(b) < factHead || b[0] != factVersion {
		return validity{}, fmt.Errorf("%w: fact value of %d bytes", ErrCorrupt, len(b))
	}
	return validity{
		from: int64(binary.BigEndian.Uint64(b[1:])),
		to:   int64(binary.BigEndian.Uint64(b[9:])),
	}, nil
}

// decodeFact decodes a stored fact value; id is the 16-byte id from its key.
func decodeFact(b []byte, id []byte) (Fact, error) {
	var f Fact
	if len(b) < factHead || b[0] != factVersion || len(id) != 16 {
		return f, fmt.Errorf("%w: fact value of %d bytes", ErrCorrupt, len(b))
	}
	// One string for all four: the fields share it (one allocation, not
	// four).
	err := decodeFactInto(&f, b, ulid.ULID(id).String(), string(b[factHead:]))
	return f, err
}

// decodeFactInto decodes a stored fact value b, whose head has been
// checked, into f: id is the fact's id as text, and all holds the bytes of
// b[factHead:] as a string, which the string fields then share. Traverse
// decodes every fact it returns this way, with the strings of all of them
// in one allocation.
func decodeFactInto(f *Fact, b []byte, id, all string) error {
	f.ID = id
	f.ValidFrom = fromNanos(int64(binary.BigEndian.Uint64(b[1:])))
	f.ValidTo = fromNanos(int64(binary.BigEndian.Uint64(b[9:])))
	f.CreatedAt = fromNanos(int64(binary.BigEndian.Uint64(b[17:])))
	f.ExpiredAt = fromNanos(int64(binary.BigEndian.Uint64(b[25:])))
	f.Confidence = math.Float64frombits(binary.BigEndian.Uint64(b[33:]))
	rest := b[factHead:]
	at := 0
	for _, dst := range [...]*string{&f.Subject, &f.Predicate, &f.Object, &f.Source} {
		n, k := binary.Uvarint(rest[at:])
		if k <= 0 || n > uint64(len(rest)-at-k) {
			*f = Fact{}
			return fmt.Errorf("%w: fact string", ErrCorrupt)
		}
		*dst = all[at+k : at+k+int(n)]
		at += k + int(n)
	}
	if at != len(rest) {
		*f = Fact{}
		return fmt.Errorf("%w: %d trailing bytes in fact", ErrCorrupt, len(rest)-at)
	}
	return nil
}

// checkedFact is a fact validated for Relate, with its folded names.
type checkedFact struct {
	Fact
	s, p, o string // folded subject, predicate and object
}

// checkFact validates a fact for storing. A dump may hold facts whose
// ValidTo equals their ValidFrom (a value replaced at the instant it was
// set: see Relate), so restoring allows that empty interval.
func checkFact(f Fact, restoring bool) (checkedFact, error) {
	c := checkedFact{Fact: f}
	var err error
	if c.Subject, c.s, err = checkName("subject", f.Subject); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	if c.Predicate, c.p, err = checkName("predicate", f.Predicate); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	if c.Object, c.o, err = checkName("object", f.Object); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	if err := checkTime("ValidFrom", f.ValidFrom); err != nil {
		return c, err
	}
	if err := checkTime("ValidTo", f.ValidTo); err != nil {
		return c, err
	}
	if !f.ValidTo.IsZero() && !f.ValidFrom.IsZero() && (f.ValidTo.Before(f.ValidFrom) || (!restoring && f.ValidTo.Equal(f.ValidFrom))) {
		return c, fmt.Errorf("%w: ValidTo %v is not after ValidFrom %v", ErrInvalidFact, f.ValidTo, f.ValidFrom)
	}
	if math.IsNaN(f.Confidence) || f.Confidence < 0 || f.Confidence > 1 {
		return c, fmt.Errorf("%w: Confidence %v is outside [0, 1]", ErrInvalidFact, f.Confidence)
	}
	if len(f.Source) > MaxSourceLength || !utf8.ValidString(f.Source) {
		return c, fmt.Errorf("%w: Source is not UTF-8 or longer than %d bytes", ErrInvalidFact, MaxSourceLength)
	}
	if c.Confidence == 0 {
		c.Confidence = 1
	}
	return c, nil
}
