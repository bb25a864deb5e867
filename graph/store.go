package graph

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Limits and defaults.
const (
	// DefaultMaxFanout is how many facts one entity contributes per
	// direction to a traversal when neither the query nor the Options set
	// a bound. It keeps a hub entity from blowing up a query; see the
	// package benchmarks for the latency it buys.
	DefaultMaxFanout = 16
	// DefaultMaxHops is a traversal's depth when the query leaves it zero.
	DefaultMaxHops = 2
	// MaxHopsLimit is the deepest traversal allowed.
	MaxHopsLimit = 8
	// DefaultTraverseLimit caps the facts one traversal returns when the
	// query leaves Limit zero: more than a model's context holds, and
	// bounded so that a 3-hop walk costs about half a millisecond (at
	// about 2.5 µs per fact read; 1,000 facts took 2 to 7 ms).
	DefaultTraverseLimit = 200
	// DefaultPageSize is the size of a listing whose Limit is zero.
	DefaultPageSize = 100
	// MaxPageSize is the largest page a listing returns.
	MaxPageSize = 10000
)

// Options configures a [Store]. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// SingleValued lists the predicates that hold at most one object per
	// subject at a time (compared folded). A new fact for such a predicate
	// closes the validity of the subject's earlier facts for it at the new
	// fact's ValidFrom; see [Tx.Relate].
	SingleValued []string
	// MaxFanout is the default per-entity, per-direction fan-out bound of
	// traversals. Zero means [DefaultMaxFanout].
	MaxFanout int
	// Annotation, when set, derives a value from a fact's Subject,
	// Predicate and Object (display names) that is stored beside the fact
	// for the caller ([AppendAnnotationKey] names its key): each time a
	// fact is stored under its id (Relate, Replace, Load, and
	// MergeEntities, which rewrites a fact under the merged name), in the
	// same write; nil, or a value longer than [MaxAnnotationLength],
	// stores none. Every path that deletes or rewrites a fact (Delete,
	// DeleteRelations, DeleteEntities, MergeEntities) deletes its
	// annotation with it, whether or not the Store deleting has an
	// Annotation, so no value derived from a fact outlives the fact.
	// A change of validity (Invalidate, the single-valued rule) leaves it.
	// [Tx.Annotate] stores it for a fact stored without one. It must not
	// retain f. Package memory keeps a fact's token count this way.
	Annotation func(f *Fact) []byte
}

// MaxAnnotationLength bounds a fact's annotation (see
// [Options.Annotation]), in bytes.
const MaxAnnotationLength = 256

func (o *Options) validate() error {
	var errs []error
	for _, p := range o.SingleValued {
		if _, _, err := checkName("single-valued predicate", p); err != nil {
			errs = append(errs, err)
		}
	}
	if o.MaxFanout < 0 {
		errs = append(errs, fmt.Errorf("MaxFanout %d is negative", o.MaxFanout))
	}
	return errors.Join(errs...)
}

// Store holds the graph's configuration and its id source; the graphs
// themselves live in kv, reached through [Store.Tx]. A Store is safe for
// concurrent use by multiple goroutines.
type Store struct {
	singleValued map[string]bool // folded predicates
	maxFanout    int
	annotation   func(f *Fact) []byte
	now          func() time.Time // test seam
	noBulk       bool             // test seam: Load never takes its bulk path

	// travStates holds Traverse's working records for reuse.
	travStates sync.Pool

	// search holds SearchNodes' in-memory indexes (searchstate.go).
	search searchIndexes

	ids struct {
		sync.Mutex
		entropy *ulid.MonotonicEntropy
		last    ulid.ULID
	}
}

// New returns a Store. It fails only for bad options (an invalid
// single-valued predicate, a negative fan-out).
func New(opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	s := &Store{singleValued: map[string]bool{}, maxFanout: o.MaxFanout, annotation: o.Annotation, now: time.Now}
	if s.maxFanout == 0 {
		s.maxFanout = DefaultMaxFanout
	}
	for _, p := range o.SingleValued {
		s.singleValued[Fold(p)] = true
	}
	s.ids.entropy = ulid.Monotonic(rand.Reader, 0)
	return s, nil
}

// SingleValued reports whether predicate was declared single-valued.
func (s *Store) SingleValued(predicate string) bool { return s.singleValued[Fold(predicate)] }

// newID returns a ULID for time t, strictly above every id it returned
// before, whatever the clock does.
func (s *Store) newID(t time.Time) ulid.ULID {
	s.ids.Lock()
	defer s.ids.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), s.ids.entropy)
	if err != nil || id.Compare(s.ids.last) <= 0 {
		id = s.ids.last
		for i := len(id) - 1; i >= 0; i-- {
			id[i]++
			if id[i] != 0 {
				break
			}
		}
	}
	s.ids.last = id
	return id
}

// Tx returns the graph under root within the kv transaction t. The Tx is
// valid only as long as t and, like t, is not safe for concurrent use.
// Writes through it commit or roll back with t, together with anything
// else t writes.
func (s *Store) Tx(t *kv.Txn, root []byte) *Tx {
	r := append(make([]byte, 0, len(root)), root...)
	return &Tx{s: s, t: t, k: keys{root: r}, names: map[string]string{}}
}

// Update runs fn on the graph under root in a read-write transaction of db,
// committed when fn returns nil.
func (s *Store) Update(ctx context.Context, db *kv.DB, root []byte, fn func(*Tx) error) error {
	return db.Update(ctx, func(t *kv.Txn) error { return fn(s.Tx(t, root)) })
}

// View runs fn on the graph under root in a read-only transaction of db.
func (s *Store) View(ctx context.Context, db *kv.DB, root []byte, fn func(*Tx) error) error {
	return db.View(ctx, func(t *kv.Txn) error { return fn(s.Tx(t, root)) })
}

// Tx is one graph (the keys under one root) within one kv transaction. Get
// one from [Store.Tx]; it is valid only until the transaction ends and is not
// safe for concurrent use.
type Tx struct {
	s *Store
	t *kv.Txn
	k keys

	// names caches resolved names (folded name → display name of its
	// entity, "" when known to be absent) for the life of the transaction,
	// which sees its own writes; every write of a name updates it.
	names map[string]string

	// keepRecordTimes makes Relate keep a fact's CreatedAt and ExpiredAt
	// (Load restores dumps with it).
	keepRecordTimes bool

	// load is set while Store.Load writes through this Tx.
	load *loadState
	// entries and bytes estimate what this Tx added to the kv transaction,
	// as Badger counts it against its limits (see kv.DB.TxnLimits).
	entries, bytes int64

	// base and overlay serve pairFacts; see overlay.go.
	base    *kv.Iterator
	baseVal []byte
	overlay map[string]*pairOverlay

	// bulk, set in Store.Load's bulk path, takes the writes instead of t
	// (see load_bulk.go).
	bulk *bulkSink

	// sw records the entity writes for the search index (searchstate.go).
	sw *searchWrite
}

// scan calls fn for each key under prefix, in order, with its value when
// values is set, until fn returns false or an error. key and val are valid
// only during the call.
func (tx *Tx) scan(prefix []byte, values bool, fn func(key, val []byte) (bool, error)) error {
	it := tx.t.NewIterator(kv.IterOptions{Prefix: prefix, KeysOnly: true})
	defer it.Close()
	var val []byte
	var err error
	for it.Seek(nil); it.Valid(); it.Next() {
		if values {
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
		}
		more, err := fn(it.Key(), val)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// resolve returns the display name of the entity that the folded name (or
// alias) names, and whether there is one.
func (tx *Tx) resolve(folded string) (string, bool, error) {
	if d, ok := tx.names[folded]; ok {
		return d, d != "", nil
	}
	if tx.load != nil {
		if d, ok := tx.load.names[folded]; ok {
			return d, d != "", nil
		}
	}
	v, err := tx.get(tx.k.name(tagName, folded))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		tx.names[folded] = ""
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	tx.names[folded] = string(v)
	return string(v), true, nil
}

// canonical resolves a name given by a caller to its entity's folded name,
// reporting false when no entity has that name or alias.
func (tx *Tx) canonical(name string) (string, bool, error) {
	_, folded, err := checkName("name", name)
	if err != nil {
		return "", false, err
	}
	d, ok, err := tx.resolve(folded)
	if !ok || err != nil {
		return "", false, err
	}
	return Fold(d), true, nil
}

func (tx *Tx) setName(folded, display string) error {
	tx.names[folded] = display
	return tx.set(tx.k.name(tagName, folded), []byte(display))
}

func (tx *Tx) deleteName(folded string) error {
	tx.names[folded] = ""
	return tx.del(tx.k.name(tagName, folded))
}

// entryOverhead is what Badger adds to a written entry's key and value when
// it checks a transaction's size (meta, version and a margin).
const entryOverhead = 32

// set and del write through the kv transaction and count what they add.
func (tx *Tx) set(key, val []byte) error {
	tx.entries++
	tx.bytes += int64(len(key) + len(val) + entryOverhead)
	if tx.bulk != nil {
		tx.bulk.add(key, val, false)
		return nil
	}
	return tx.t.Set(key, val)
}

func (tx *Tx) del(key []byte) error {
	tx.entries++
	tx.bytes += int64(len(key) + entryOverhead)
	if tx.bulk != nil {
		tx.bulk.add(key, nil, true)
		return nil
	}
	return tx.t.Delete(key)
}
