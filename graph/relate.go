package graph

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Relate stores a fact and returns it as stored: with its id, the display
// names of the entities its subject and object resolve to (entities are
// created for names not seen before), CreatedAt, and ValidFrom and
// Confidence defaulted to now and 1.
//
// A fact with the same subject, predicate and object as a stored one is not
// stored twice: when both still hold (zero ValidTo), or both have the same
// ValidFrom and ValidTo, Relate returns the stored fact and writes nothing.
// For a single-valued predicate this is judged after the rule below has
// bounded the new fact's ValidTo, so relating a pair's history again
// changes nothing.
//
// For a single-valued predicate (see [Options.SingleValued]) the new fact,
// valid from f, is reconciled with the subject's other facts for that
// predicate, and with no other fact:
//   - a fact that began before f and is still valid at f is closed at f:
//     its ValidTo becomes f and its ExpiredAt now;
//   - a fact that began at f is closed at f too (the new fact replaces it);
//   - a fact that begins after f bounds the new fact: its ValidTo becomes the
//     earliest such start, if that is sooner.
//
// Relate returns [ErrInvalidFact] (wrapping [ErrInvalidName] for a bad
// name) and writes nothing for a fact that cannot be stored.
func (tx *Tx) Relate(f Fact) (Fact, error) {
	f, _, err := tx.relate(f)
	return f, err
}

// Replace is [Tx.Relate] with f's predicate held single-valued for this
// fact whether or not [Options.SingleValued] lists it: f closes the
// validity of the subject's current facts for the predicate, as a
// correction does ("I moved to Lisbon" after "I live in Paris"). Facts
// related later without Replace are not affected.
func (tx *Tx) Replace(f Fact) (Fact, error) {
	f, _, err := tx.relateAs(f, true)
	return f, err
}

// relate is Relate, also reporting whether the fact was new.
func (tx *Tx) relate(f Fact) (Fact, bool, error) { return tx.relateAs(f, false) }

// relateAs is relate with the predicate held single-valued when single is
// set.
func (tx *Tx) relateAs(f Fact, single bool) (Fact, bool, error) {
	c, err := checkFact(f, tx.keepRecordTimes)
	if err != nil {
		return Fact{}, false, err
	}
	now := tx.s.now()
	if c.ValidFrom.IsZero() {
		c.ValidFrom = now
		if !c.ValidTo.IsZero() && !c.ValidTo.After(c.ValidFrom) {
			return Fact{}, false, fmt.Errorf("%w: ValidTo %v is not after ValidFrom (now)", ErrInvalidFact, c.ValidTo)
		}
	}
	tx.recordTimes(&c, &f, now)
	if err := tx.endpoints(&c, now); err != nil {
		return Fact{}, false, err
	}
	// The single-valued rule may bound the new fact first; a duplicate is
	// then judged on the fact as it would be stored, and only a fact that
	// is stored closes others.
	var closes []closing
	if (single || tx.s.singleValued[c.p]) && !c.ValidTo.Equal(c.ValidFrom) {
		// A fact closed at its own start (a dump restores those) never
		// held: it neither closes nor is bounded by another.
		if closes, err = tx.reconcile(&c); err != nil {
			return Fact{}, false, err
		}
	}
	if old, ok, err := tx.duplicate(&c); err != nil || ok {
		return old, false, err
	}
	for _, cl := range closes {
		cl.fact.ValidTo, cl.fact.ExpiredAt = c.ValidFrom, now
		if err := tx.rewriteFact(c.s, c.p, cl.o, cl.id, &cl.fact); err != nil {
			return Fact{}, false, err
		}
	}
	id, err := tx.factID(&f, now)
	if err != nil {
		return Fact{}, false, err
	}
	c.ID = id.String()
	return c.Fact, true, tx.putFact(&c, id)
}

// endpoints resolves the fact's subject and object to their entities,
// creating entities for new names, and sets their display and folded names.
func (tx *Tx) endpoints(c *checkedFact, now time.Time) error {
	var err error
	if c.Subject, err = tx.ensureEntity(c.Subject, c.s, now); err != nil {
		return err
	}
	if c.Object, err = tx.ensureEntity(c.Object, c.o, now); err != nil {
		return err
	}
	c.s, c.o = Fold(c.Subject), Fold(c.Object)
	return nil
}

// ensureEntity returns the display name of the entity named folded,
// creating it with the display name given when there is none.
func (tx *Tx) ensureEntity(display, folded string, now time.Time) (string, error) {
	d, ok, err := tx.resolve(folded)
	if err != nil || ok {
		return d, err
	}
	e := Entity{Name: display, CreatedAt: now}
	if err := tx.putEntity(folded, &e); err != nil {
		return "", err
	}
	return display, tx.setName(folded, display)
}

// duplicate looks for a stored fact that the new one would repeat.
func (tx *Tx) duplicate(c *checkedFact) (Fact, bool, error) {
	// A load into an empty graph knows which triples it wrote before this
	// transaction: for any other, only this transaction's own writes can
	// hold a duplicate.
	ownOnly := tx.load != nil && !tx.load.mayRepeat(c.s, c.p, c.o)
	if ownOnly && tx.overlay[pairKey(c.s, c.p)] == nil {
		return Fact{}, false, nil
	}
	var found Fact
	var ok bool
	from, to := nanos(c.ValidFrom), nanos(c.ValidTo)
	err := tx.pairFacts(c.s, c.p, c.o, ownOnly, func(_ string, id ulid.ULID, val []byte) (bool, error) {
		v, err := readValidity(val)
		if err != nil {
			return false, err
		}
		if (v.to == 0 && to == 0) || (v.from == from && v.to == to) {
			found, err = decodeFact(val, id[:])
			ok = err == nil
			return false, err
		}
		return true, nil
	})
	return found, ok, err
}

// closing is a fact the single-valued rule closes at the new fact's start.
type closing struct {
	fact Fact
	o    string
	id   ulid.ULID
}

// reconcile applies the single-valued rule of Relate against the subject's
// other facts for the predicate: it bounds the new fact's ValidTo by the
// earliest later start and returns the facts to close.
func (tx *Tx) reconcile(c *checkedFact) ([]closing, error) {
	f := nanos(c.ValidFrom)
	var closes []closing
	err := tx.pairFacts(c.s, c.p, "", false, func(o string, id ulid.ULID, val []byte) (bool, error) {
		v, err := readValidity(val)
		if err != nil {
			return false, err
		}
		switch {
		case v.to != 0 && v.to <= v.from:
			// Closed at its own start: it never held, so it neither
			// conflicts with the new fact nor bounds it.
		case v.from <= f && (v.to == 0 || v.to > f):
			fact, err := decodeFact(val, id[:])
			if err != nil {
				return false, err
			}
			closes = append(closes, closing{fact: fact, o: o, id: id})
		case v.from > f && (c.ValidTo.IsZero() || v.from < nanos(c.ValidTo)):
			c.ValidTo = fromNanos(v.from)
		}
		return true, nil
	})
	return closes, err
}

// putFact writes a new fact's record, its three index entries and its
// annotation.
func (tx *Tx) putFact(c *checkedFact, id ulid.ULID) error {
	if err := tx.set(tx.k.fact(id), appendFactRef(nil, c.s, c.p, c.o)); err != nil {
		return err
	}
	if err := tx.rewriteFact(c.s, c.p, c.o, id, &c.Fact); err != nil {
		return err
	}
	if err := tx.set(tx.k.pos(c.s, c.p, c.o, id), nil); err != nil {
		return err
	}
	return tx.annotate(id, &c.Fact)
}

// annotate stores the annotation of f, stored under id, when the Store
// has an Annotation that gives one.
func (tx *Tx) annotate(id ulid.ULID, f *Fact) error {
	if tx.s.annotation == nil {
		return nil
	}
	v := tx.s.annotation(f)
	if v == nil || len(v) > MaxAnnotationLength {
		return nil
	}
	return tx.set(tx.k.note(id), v)
}

// Annotate stores the annotation (see [Options.Annotation]) of the fact
// id as it is stored now, replacing any; an unknown id is
// [ErrFactNotFound]. It is for facts stored without one: by a Store
// without an Annotation, or before it gave one. The fact is read in the
// transaction, so a concurrent Delete conflicts with it rather than leave
// an annotation behind.
func (tx *Tx) Annotate(id string) error {
	_, _, _, u, f, err := tx.lookup(id)
	if err != nil {
		return err
	}
	return tx.annotate(u, &f)
}

// rewriteFact writes a fact's value under its SPO and OSP keys.
func (tx *Tx) rewriteFact(s, p, o string, id ulid.ULID, f *Fact) error {
	val := appendFact(nil, f)
	tx.noteWrite(s, p, o, id, val)
	if err := tx.set(tx.k.spo(s, p, o, id), val); err != nil {
		return err
	}
	return tx.set(tx.k.osp(s, p, o, id), val)
}

// deleteFact removes a fact's record, index entries and annotation.
func (tx *Tx) deleteFact(s, p, o string, id ulid.ULID) error {
	tx.noteWrite(s, p, o, id, nil)
	// One at a time: each key is built in the same buffer.
	if err := tx.del(tx.k.fact(id)); err != nil {
		return err
	}
	if err := tx.del(tx.k.spo(s, p, o, id)); err != nil {
		return err
	}
	if err := tx.del(tx.k.osp(s, p, o, id)); err != nil {
		return err
	}
	if err := tx.del(tx.k.pos(s, p, o, id)); err != nil {
		return err
	}
	// What the caller derived from the fact goes with it (even if this
	// Store has no Annotation: another one may have written it).
	return tx.del(tx.k.note(id))
}

// lookup finds a fact by id: its folded names and its stored value.
func (tx *Tx) lookup(id string) (s, p, o string, u ulid.ULID, f Fact, err error) {
	u, err = ulid.ParseStrict(id)
	if err != nil {
		return "", "", "", u, f, fmt.Errorf("%w: %q", ErrFactNotFound, id)
	}
	ref, err := tx.t.Get(tx.k.fact(u))
	if errors.Is(err, kv.ErrNotFound) {
		return "", "", "", u, f, fmt.Errorf("%w: %q", ErrFactNotFound, id)
	} else if err != nil {
		return "", "", "", u, f, err
	}
	s, p, o, ok := parseFactRef(ref)
	if !ok {
		return "", "", "", u, f, fmt.Errorf("%w: fact record %q", ErrCorrupt, id)
	}
	val, err := tx.t.Get(tx.k.spo(s, p, o, u))
	if err != nil {
		if errors.Is(err, kv.ErrNotFound) {
			err = fmt.Errorf("%w: fact %q has no index entry", ErrCorrupt, id)
		}
		return "", "", "", u, f, err
	}
	f, err = decodeFact(val, u[:])
	return s, p, o, u, f, err
}

// Invalidate closes a fact's validity at event time at (zero means now) and
// sets its ExpiredAt to now; it returns the fact as stored. A fact already
// closed at or before at is returned unchanged. at must not be before the
// fact's ValidFrom ([ErrInvalidFact]); an unknown id is [ErrFactNotFound].
func (tx *Tx) Invalidate(id string, at time.Time) (Fact, error) {
	s, p, o, u, f, err := tx.lookup(id)
	if err != nil {
		return Fact{}, err
	}
	now := tx.s.now()
	if at.IsZero() {
		at = now
	}
	if err := checkTime("invalidation time", at); err != nil {
		return Fact{}, err
	}
	if at.Before(f.ValidFrom) {
		return Fact{}, fmt.Errorf("%w: invalidation time %v is before ValidFrom %v", ErrInvalidFact, at, f.ValidFrom)
	}
	if !f.ValidTo.IsZero() && !at.Before(f.ValidTo) {
		return f, nil
	}
	f.ValidTo, f.ExpiredAt = at, now
	return f, tx.rewriteFact(s, p, o, u, &f)
}

// Delete removes a fact and every index entry of it; an unknown id is
// [ErrFactNotFound]. Prefer [Tx.Invalidate] for a fact that stopped holding:
// Delete also forgets that it ever held.
func (tx *Tx) Delete(id string) error {
	s, p, o, u, _, err := tx.lookup(id)
	if err != nil {
		return err
	}
	return tx.deleteFact(s, p, o, u)
}

// FactQuery selects facts. Subject, Predicate and Object filter when set
// (names resolve through aliases; all compare folded). By default only the
// facts valid at AsOf (zero: now) are returned.
type FactQuery struct {
	Subject   string `json:"subject,omitempty"`
	Predicate string `json:"predicate,omitempty"`
	Object    string `json:"object,omitempty"`
	// AsOf is the event time the facts must be valid at; zero means now.
	AsOf time.Time `json:"as_of,omitzero"`
	// History returns every version, valid or not; AsOf is then ignored.
	History bool `json:"history,omitempty"`
	// After continues a listing after the fact with this id (the last of
	// the previous page).
	After string `json:"after,omitempty"`
	// Limit caps the page; zero means [DefaultPageSize], at most
	// [MaxPageSize].
	Limit int `json:"limit,omitempty"`
}

// Facts returns the facts that match q, in index order: by subject, then
// predicate, then object when Subject is set or nothing is; by object
// otherwise (by predicate first when only Predicate, or Predicate and
// Object, are set). A name that names no entity matches nothing.
func (tx *Tx) Facts(q FactQuery) ([]Fact, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	var s, p, o string
	for _, part := range []struct {
		name   string
		dst    *string
		entity bool
	}{{q.Subject, &s, true}, {q.Predicate, &p, false}, {q.Object, &o, true}} {
		if part.name == "" {
			continue
		}
		if !part.entity {
			if _, *part.dst, err = checkName("predicate", part.name); err != nil {
				return nil, err
			}
			continue
		}
		folded, ok, err := tx.canonical(part.name)
		if err != nil || !ok {
			return nil, err
		}
		*part.dst = folded
	}
	// Pick the index whose prefix covers every name given.
	tag, a, b, c := tagSPO, s, p, o
	switch {
	case s != "" && p == "" && o != "":
		tag, a, b, c = tagOSP, o, s, ""
	case s == "" && p != "":
		tag, a, b, c = tagPOS, p, o, ""
	case s == "" && o != "":
		tag, a, b, c = tagOSP, o, "", ""
	}
	if b == "" {
		c = ""
	}
	prefix := bytes.Clone(tx.k.triple(tag, a, b, c, nil))
	it := tx.t.NewIterator(kv.IterOptions{Prefix: prefix, KeysOnly: true})
	defer it.Close()
	it.Seek(nil)
	if q.After != "" {
		as, ap, ao, u, _, err := tx.lookup(q.After)
		if err != nil {
			return nil, fmt.Errorf("%w: after: %w", ErrInvalidCursor, err)
		}
		var k []byte
		switch tag {
		case tagSPO:
			k = tx.k.spo(as, ap, ao, u)
		case tagOSP:
			k = tx.k.osp(as, ap, ao, u)
		default:
			k = tx.k.pos(as, ap, ao, u)
		}
		it.Seek(append(k, 0)) // the smallest key after k
	}
	at := nanos(q.AsOf)
	if q.AsOf.IsZero() {
		at = tx.s.now().UnixNano()
	}
	var out []Fact
	var val []byte
	for ; it.Valid() && len(out) < limit; it.Next() {
		key := it.Key()
		x, y, z, id, ok := splitTriple(key[len(tx.k.root)+1:])
		if !ok {
			return nil, fmt.Errorf("%w: index key", ErrCorrupt)
		}
		if tag == tagPOS {
			// POS keys hold no value: read the fact under SPO.
			val, err = tx.t.Get(tx.k.triple(tagSPO, string(z), string(x), string(y), (*ulid.ULID)(id)))
		} else {
			val, err = it.Value(val[:0])
		}
		if err != nil {
			return nil, err
		}
		v, err := readValidity(val)
		if err != nil {
			return nil, err
		}
		if !q.History && !v.at(at) {
			continue
		}
		f, err := decodeFact(val, id)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// History returns every fact of subject and predicate, valid or not, in
// order of ValidFrom, then CreatedAt, then id (creation order): how the
// pair's value changed.
func (tx *Tx) History(subject, predicate string) ([]Fact, error) {
	s, ok, err := tx.canonical(subject)
	if err != nil || !ok {
		return nil, err
	}
	_, p, err := checkName("predicate", predicate)
	if err != nil {
		return nil, err
	}
	var out []Fact
	prefix := bytes.Clone(tx.k.triple(tagSPO, s, p, "", nil))
	err = tx.scan(prefix, true, func(key, val []byte) (bool, error) {
		f, err := decodeFact(val, key[len(key)-16:])
		out = append(out, f)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Fact) int {
		if c := a.ValidFrom.Compare(b.ValidFrom); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID) // ULIDs: creation order
	})
	return out, nil
}

func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n < 0 || n > MaxPageSize:
		return 0, fmt.Errorf("%w: limit %d is outside [0, %d]", ErrInvalidQuery, n, MaxPageSize)
	}
	return n, nil
}
