package graph

import (
	"bytes"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Relate reads the facts of one (subject, predicate) pair to find
// duplicates and to apply the single-valued rule. A Badger iterator that
// sees a transaction's own writes sorts all of them when it is created, so
// a fresh iterator per Relate costs O(w log w) in the writes w so far: a
// bulk load of thousands of facts per transaction would be quadratic.
// Instead a Tx keeps one base iterator, created on first use, and an
// overlay of the fact values it wrote itself; a pair's facts are the base's
// minus the ids the overlay holds, plus the overlay's live ones.

// pairOverlay holds the facts of one (subject, predicate) pair written by
// this Tx; a nil val is a deletion. byID indexes entries once there are
// more than a few (most pairs of a graph hold one or two facts, and a map
// per pair was a third of the overlay's cost in a bulk load).
type pairOverlay struct {
	byID    map[ulid.ULID]int
	entries []pairEntry
}

// pairIndexFrom is how many entries a pair holds before byID is built.
const pairIndexFrom = 8

// find returns the index of id's entry.
func (po *pairOverlay) find(id ulid.ULID) (int, bool) {
	if po.byID != nil {
		i, ok := po.byID[id]
		return i, ok
	}
	for i := range po.entries {
		if po.entries[i].id == id {
			return i, true
		}
	}
	return 0, false
}

type pairEntry struct {
	o   string
	id  ulid.ULID
	val []byte
}

func pairKey(s, p string) string { return s + "\x00" + p }

// noteWrite records a fact value written (val nil: deleted) in the overlay.
func (tx *Tx) noteWrite(s, p, o string, id ulid.ULID, val []byte) {
	if tx.overlay == nil {
		tx.overlay = map[string]*pairOverlay{}
	}
	k := pairKey(s, p)
	po := tx.overlay[k]
	if po == nil {
		po = &pairOverlay{}
		tx.overlay[k] = po
	}
	if i, ok := po.find(id); ok {
		po.entries[i].val = val
		return
	}
	po.entries = append(po.entries, pairEntry{o: o, id: id, val: val})
	switch n := len(po.entries); {
	case po.byID != nil:
		po.byID[id] = n - 1
	case n > pairIndexFrom:
		po.byID = make(map[ulid.ULID]int, 2*n)
		for i := range po.entries {
			po.byID[po.entries[i].id] = i
		}
	}
}

// pairFacts calls fn for each fact of (s, p) visible to this Tx, with object
// o when o is set; with ownOnly, only for those this Tx wrote. val is valid
// only during the call.
func (tx *Tx) pairFacts(s, p, o string, ownOnly bool, fn func(o string, id ulid.ULID, val []byte) (bool, error)) error {
	if tx.base == nil && !ownOnly {
		tx.base = tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagSPO), KeysOnly: true})
	}
	po := tx.overlay[pairKey(s, p)]
	prefix := bytes.Clone(tx.k.triple(tagSPO, s, p, o, nil))
	root := len(tx.k.root) + 1
	var err error
	if !ownOnly {
		tx.base.Seek(prefix)
	}
	for ; !ownOnly && tx.base.Valid() && bytes.HasPrefix(tx.base.Key(), prefix); tx.base.Next() {
		_, _, obj, id, ok := splitTriple(tx.base.Key()[root:])
		if !ok {
			return fmt.Errorf("%w: index key", ErrCorrupt)
		}
		if po != nil {
			if _, mine := po.find(ulid.ULID(id)); mine {
				continue
			}
		}
		if tx.baseVal, err = tx.base.Value(tx.baseVal[:0]); err != nil {
			return err
		}
		more, err := fn(string(obj), ulid.ULID(id), tx.baseVal)
		if err != nil || !more {
			return err
		}
	}
	if po == nil {
		return nil
	}
	for _, e := range po.entries {
		if e.val == nil || (o != "" && e.o != o) {
			continue
		}
		more, err := fn(e.o, e.id, e.val)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
