package graph

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Direction says which facts of an entity a traversal follows.
type Direction uint8

const (
	// Both follows facts the entity is the subject or the object of.
	Both Direction = iota
	// Out follows facts the entity is the subject of.
	Out
	// In follows facts the entity is the object of.
	In
)

// String returns "both", "out" or "in".
func (d Direction) String() string {
	switch d {
	case Both:
		return "both"
	case Out:
		return "out"
	case In:
		return "in"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// MaxTraverseLimit is the largest Limit a traversal accepts.
const MaxTraverseLimit = 100000

// TraverseQuery is a breadth-first walk from seed entities.
type TraverseQuery struct {
	// From names the seed entities (names or aliases); unknown names are
	// skipped.
	From []string `json:"from"`
	// MaxHops is the depth; zero means [DefaultMaxHops], at most
	// [MaxHopsLimit].
	MaxHops int `json:"max_hops,omitempty"`
	// Direction of the facts followed; zero is [Both].
	Direction Direction `json:"direction,omitempty"`
	// Predicates, when set, restricts the walk to facts with these
	// predicates (compared folded).
	Predicates []string `json:"predicates,omitempty"`
	// AsOf is the event time facts must be valid at; zero means now.
	AsOf time.Time `json:"as_of,omitzero"`
	// MaxFanout bounds how many facts one entity contributes per
	// direction; zero means the Store's bound ([Options.MaxFanout]).
	MaxFanout int `json:"max_fanout,omitempty"`
	// Limit caps the facts returned; zero means [DefaultTraverseLimit], at
	// most [MaxTraverseLimit].
	Limit int `json:"limit,omitempty"`
}

// Step is a fact reached by a traversal.
type Step struct {
	Fact
	// Hops is the fact's distance from the seeds: 1 for a seed's own facts.
	Hops int `json:"hops"`
	// Path holds the display names of the entities from a seed to the
	// entity this fact reached (Hops+1 names); the fact links the last two.
	// Steps that end at the same entity may share one Path: read, don't
	// modify.
	Path []string `json:"path"`
}

// Traversal is the result of [Tx.Traverse].
type Traversal struct {
	// Steps are in breadth-first order: by hop count, then by the order in
	// which their entities were reached, then by index order (outgoing
	// facts by predicate and object, then incoming facts by subject and
	// predicate).
	Steps []Step `json:"steps"`
	// Truncated reports that an entity had more matching facts than the
	// fan-out bound, or that Limit stopped the walk.
	Truncated bool `json:"truncated,omitempty"`
}

// walk holds what every traversal needs: the query's filters and two
// iterators reused for every entity.
type walk struct {
	tx     *Tx
	dir    Direction
	preds  []string // folded and sorted; nil means all
	at     int64
	fanout int
	spo    *kv.Iterator
	osp    *kv.Iterator
	val    []byte
}

func (tx *Tx) newWalk(dir Direction, predicates []string, asOf time.Time, fanout int) (*walk, error) {
	if dir > In {
		return nil, fmt.Errorf("%w: direction %d", ErrInvalidQuery, dir)
	}
	if fanout < 0 {
		return nil, fmt.Errorf("%w: fan-out %d is negative", ErrInvalidQuery, fanout)
	}
	if fanout == 0 {
		fanout = tx.s.maxFanout
	}
	w := &walk{tx: tx, dir: dir, fanout: fanout, at: nanos(asOf)}
	if asOf.IsZero() {
		w.at = tx.s.now().UnixNano()
	}
	for _, p := range predicates {
		_, f, err := checkName("predicate", p)
		if err != nil {
			return nil, err
		}
		w.preds = append(w.preds, f)
	}
	slices.Sort(w.preds)
	w.preds = slices.Compact(w.preds)
	if dir != In {
		w.spo = tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagSPO), KeysOnly: true})
	}
	if dir != Out {
		w.osp = tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagOSP), KeysOnly: true})
	}
	return w, nil
}

func (w *walk) close() {
	if w.spo != nil {
		w.spo.Close()
	}
	if w.osp != nil {
		w.osp.Close()
	}
}

// edge is one fact met while expanding an entity.
type edge struct {
	id    ulid.ULID
	other []byte // folded name of the far end; valid during the visit only
	out   bool   // the expanded entity is the subject
	val   []byte // the stored fact; valid during the visit only
}

// expand calls visit for each fact of entity u (folded) that matches the
// walk, at most fanout per direction, outgoing first. It reports whether a
// direction had more matching facts than that. visit returns false to stop.
func (w *walk) expand(u string, visit func(*edge) (bool, error)) (cut bool, stop bool, err error) {
	if w.spo != nil {
		var groups []string // prefixes to scan, in key order
		if w.preds == nil {
			groups = []string{""}
		} else {
			groups = w.preds
		}
		n := 0
		for _, p := range groups {
			prefix := bytes.Clone(w.tx.k.triple(tagSPO, u, p, "", nil))
			c, s, err := w.scan(w.spo, prefix, true, &n, visit)
			if err != nil || s {
				return c, s, err
			}
			if c {
				cut = true
				break
			}
		}
	}
	if w.osp != nil {
		n := 0
		prefix := bytes.Clone(w.tx.k.triple(tagOSP, u, "", "", nil))
		c, s, err := w.scan(w.osp, prefix, false, &n, visit)
		if err != nil || s {
			return cut || c, s, err
		}
		cut = cut || c
	}
	return cut, false, nil
}

// scan visits the matching facts under prefix; n counts them across the
// calls for one direction.
func (w *walk) scan(it *kv.Iterator, prefix []byte, out bool, n *int, visit func(*edge) (bool, error)) (cut, stop bool, err error) {
	root := len(w.tx.k.root) + 1
	for it.Seek(prefix); it.Valid() && bytes.HasPrefix(it.Key(), prefix); it.Next() {
		key := it.Key()
		_, b, c, id, ok := splitTriple(key[root:])
		if !ok {
			return false, true, fmt.Errorf("%w: index key", ErrCorrupt)
		}
		e := edge{id: ulid.ULID(id), out: out}
		if out {
			e.other = c
		} else {
			// OSP: object, subject, predicate.
			e.other = b
			if w.preds != nil {
				if _, found := slices.BinarySearch(w.preds, string(c)); !found {
					continue
				}
			}
		}
		if w.val, err = it.Value(w.val[:0]); err != nil {
			return false, true, err
		}
		v, err := readValidity(w.val)
		if err != nil {
			return false, true, err
		}
		if !v.at(w.at) {
			continue
		}
		if *n == w.fanout {
			return true, false, nil
		}
		*n++
		e.val = w.val
		more, err := visit(&e)
		if err != nil || !more {
			return false, true, err
		}
	}
	return false, false, nil
}

// seeds resolves seed names to folded names and display names, skipping
// unknown names and repeats.
func (tx *Tx) seeds(names []string) (folded, display []string, err error) {
	seen := map[string]bool{}
	for _, n := range names {
		_, f, err := checkName("seed", n)
		if err != nil {
			return nil, nil, err
		}
		d, ok, err := tx.resolve(f)
		if err != nil {
			return nil, nil, err
		}
		if !ok || seen[Fold(d)] {
			continue
		}
		seen[Fold(d)] = true
		folded = append(folded, Fold(d))
		display = append(display, d)
	}
	return folded, display, nil
}

// Traverse walks breadth-first from the seeds, up to q.MaxHops facts away,
// and returns each fact valid at q.AsOf that it reached, once, with its hop
// count and path. Each entity contributes at most q.MaxFanout facts per
// direction (the first in index order), so a hub cannot blow up the walk.
func (tx *Tx) Traverse(q TraverseQuery) (Traversal, error) {
	hops, limit, err := q.bounds()
	if err != nil {
		return Traversal{}, err
	}
	seeds, names, err := tx.seeds(q.From)
	if err != nil {
		return Traversal{}, err
	}
	w, err := tx.newWalk(q.Direction, q.Predicates, q.AsOf, q.MaxFanout)
	if err != nil {
		return Traversal{}, err
	}
	defer w.close()

	// paths[i] is the path to the i-th entity reached (seeds first): built
	// once per entity and shared by the steps that end there.
	paths := make([][]string, 0, len(seeds))
	index := map[string]int{}
	for i, s := range seeds {
		index[s] = len(paths)
		paths = append(paths, names[i:i+1:i+1])
	}
	extend := func(p []string, name string) []string {
		return append(p[:len(p):len(p)], name) // always a new array
	}
	var res Traversal
	emitted := map[ulid.ULID]bool{}
	frontier := slices.Clone(seeds)
	full := false // Limit reached: the walk stops (a fan-out cut does not stop it)
	for h := 1; h <= hops && len(frontier) > 0 && !full; h++ {
		var next []string
		for _, u := range frontier {
			ui := index[u]
			cut, stop, err := w.expand(u, func(e *edge) (bool, error) {
				if emitted[e.id] {
					return true, nil
				}
				if len(res.Steps) == limit {
					res.Truncated, full = true, true
					return false, nil
				}
				f, err := decodeFact(e.val, e.id[:])
				if err != nil {
					return false, err
				}
				emitted[e.id] = true
				other := f.Object
				if !e.out {
					other = f.Subject
				}
				var p []string
				if vi, seen := index[string(e.other)]; seen {
					// Already reached (a seed, or by a shorter or earlier
					// path): the fact still links u to it.
					p = extend(paths[ui], paths[vi][len(paths[vi])-1])
				} else {
					p = extend(paths[ui], other)
					index[string(e.other)] = len(paths)
					paths = append(paths, p)
					next = append(next, string(e.other))
				}
				res.Steps = append(res.Steps, Step{Fact: f, Hops: h, Path: p})
				return true, nil
			})
			if err != nil {
				return Traversal{}, err
			}
			res.Truncated = res.Truncated || cut
			if stop {
				break
			}
		}
		frontier = next
	}
	return res, nil
}

func (q *TraverseQuery) bounds() (hops, limit int, err error) {
	hops, limit = q.MaxHops, q.Limit
	if hops == 0 {
		hops = DefaultMaxHops
	}
	if limit == 0 {
		limit = DefaultTraverseLimit
	}
	if hops < 0 || hops > MaxHopsLimit {
		return 0, 0, fmt.Errorf("%w: MaxHops %d is outside [0, %d]", ErrInvalidQuery, q.MaxHops, MaxHopsLimit)
	}
	if limit < 0 || limit > MaxTraverseLimit {
		return 0, 0, fmt.Errorf("%w: Limit %d is outside [0, %d]", ErrInvalidQuery, q.Limit, MaxTraverseLimit)
	}
	return hops, limit, nil
}

// NeighborQuery selects the facts of one entity.
type NeighborQuery struct {
	// Entity is the entity's name or alias.
	Entity string `json:"entity"`
	// Direction of the facts; zero is [Both].
	Direction Direction `json:"direction,omitempty"`
	// Predicates, when set, keeps only facts with these predicates.
	Predicates []string `json:"predicates,omitempty"`
	// AsOf is the event time facts must be valid at; zero means now.
	AsOf time.Time `json:"as_of,omitzero"`
	// Limit caps the facts per direction; zero means [DefaultPageSize], at
	// most [MaxPageSize].
	Limit int `json:"limit,omitempty"`
}

// Neighbors returns the facts valid at q.AsOf that link the entity to its
// neighbours: outgoing facts first (by predicate, then object), then
// incoming ones (by subject, then predicate), at most q.Limit of each. With
// [Both], a fact from the entity to itself comes once from each direction.
// An unknown entity is [ErrEntityNotFound].
func (tx *Tx) Neighbors(q NeighborQuery) ([]Fact, error) {
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	u, _, err := tx.lookupEntity(q.Entity)
	if err != nil {
		return nil, err
	}
	w, err := tx.newWalk(q.Direction, q.Predicates, q.AsOf, limit)
	if err != nil {
		return nil, err
	}
	defer w.close()
	var out []Fact
	_, _, err = w.expand(u, func(e *edge) (bool, error) {
		f, err := decodeFact(e.val, e.id[:])
		out = append(out, f)
		return true, err
	})
	return out, err
}

// PathQuery asks for a shortest chain of facts between two entities.
type PathQuery struct {
	From string `json:"from"`
	To   string `json:"to"`
	// MaxHops bounds the path's length; zero means [DefaultMaxHops], at
	// most [MaxHopsLimit].
	MaxHops int `json:"max_hops,omitempty"`
	// Direction of the facts followed from From; zero is [Both].
	Direction Direction `json:"direction,omitempty"`
	// Predicates, when set, restricts the path to these predicates.
	Predicates []string `json:"predicates,omitempty"`
	// AsOf is the event time facts must be valid at; zero means now.
	AsOf time.Time `json:"as_of,omitzero"`
	// MaxFanout bounds the facts explored per entity and direction, as in
	// [TraverseQuery].
	MaxFanout int `json:"max_fanout,omitempty"`
}

// ShortestPath returns the facts of a shortest path from q.From to q.To
// among the facts a traversal with the same bounds explores (so a path
// only through facts beyond a hub's fan-out bound is not found); nil when
// there is none within q.MaxHops, and an empty path from an entity to
// itself. An unknown endpoint is [ErrEntityNotFound].
func (tx *Tx) ShortestPath(q PathQuery) ([]Fact, error) {
	hops, _, err := (&TraverseQuery{MaxHops: q.MaxHops}).bounds()
	if err != nil {
		return nil, err
	}
	from, _, err := tx.lookupEntity(q.From)
	if err != nil {
		return nil, err
	}
	to, _, err := tx.lookupEntity(q.To)
	if err != nil {
		return nil, err
	}
	if from == to {
		return []Fact{}, nil
	}
	w, err := tx.newWalk(q.Direction, q.Predicates, q.AsOf, q.MaxFanout)
	if err != nil {
		return nil, err
	}
	defer w.close()
	type link struct {
		parent string
		id     ulid.ULID
		val    []byte
	}
	reached := map[string]link{from: {}}
	frontier := []string{from}
	for h := 1; h <= hops && len(frontier) > 0; h++ {
		var next []string
		found := false
		for _, u := range frontier {
			_, _, err := w.expand(u, func(e *edge) (bool, error) {
				if _, ok := reached[string(e.other)]; ok {
					return true, nil
				}
				v := string(e.other)
				reached[v] = link{parent: u, id: e.id, val: bytes.Clone(e.val)}
				next = append(next, v)
				found = v == to
				return !found, nil
			})
			if err != nil {
				return nil, err
			}
			if found {
				var path []Fact
				for v := to; v != from; v = reached[v].parent {
					l := reached[v]
					f, err := decodeFact(l.val, l.id[:])
					if err != nil {
						return nil, err
					}
					path = append(path, f)
				}
				slices.Reverse(path)
				return path, nil
			}
		}
		frontier = next
	}
	return nil, nil
}
