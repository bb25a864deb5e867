package graph

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
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
// iterators reused for every entity, and buffers reused for every fact.
type walk struct {
	tx     *Tx
	dir    Direction
	preds  []string // folded and sorted; nil means all
	at     int64
	fanout int
	spo    *kv.Iterator
	osp    *kv.Iterator
	val    []byte
	prefix []byte
	e      edge // the edge visited: one per walk, not one allocation per fact
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

// firstSeekPrefetch and maxSeekPrefetch bound the entities of a hop whose
// facts prefetch reads ahead in one request: 8 at first, twice as many
// each time the walk goes past them, at most 256.
const (
	firstSeekPrefetch = 8
	maxSeekPrefetch   = 256
)

// prefetch reads ahead the first facts of each entity of a hop's frontier
// (see kv.Iterator.PrefetchSeeks), one request per direction: on
// PostgreSQL a hop then costs a round trip or two instead of two per
// entity (16 of a Recall's 23 round trips before it, see
// bench/results/postgres.md). On Badger it does nothing.
func (w *walk) prefetch(frontier []string) error {
	if !w.tx.t.Prefetches() {
		return nil
	}
	if w.spo != nil {
		keys := make([][]byte, 0, len(frontier)*max(1, len(w.preds)))
		for _, u := range frontier {
			for i := 0; i == 0 || i < len(w.preds); i++ {
				p := ""
				if w.preds != nil {
					p = w.preds[i]
				}
				keys = append(keys, bytes.Clone(w.tx.k.triple(tagSPO, u, p, "", nil)))
			}
		}
		if err := w.spo.PrefetchSeeks(keys); err != nil {
			return err
		}
	}
	if w.osp != nil {
		keys := make([][]byte, 0, len(frontier))
		for _, u := range frontier {
			keys = append(keys, bytes.Clone(w.tx.k.triple(tagOSP, u, "", "", nil)))
		}
		if err := w.osp.PrefetchSeeks(keys); err != nil {
			return err
		}
	}
	return nil
}

func (w *walk) close() {
	if w.spo != nil {
		w.spo.Close()
	}
	if w.osp != nil {
		w.osp.Close()
	}
}

// edge is one fact met while expanding an entity. It, and the slices it
// holds, are valid during the visit only.
type edge struct {
	id    ulid.ULID
	other []byte // folded name of the far end
	out   bool   // the expanded entity is the subject
	val   []byte // the stored fact
}

// expand calls visit for each fact of entity u (folded) that matches the
// walk, at most fanout per direction, outgoing first. It reports whether a
// direction had more matching facts than that. visit returns false to stop.
func (w *walk) expand(u string, visit func(*edge) (bool, error)) (cut bool, stop bool, err error) {
	if w.spo != nil {
		n := 0
		for i := 0; i == 0 || i < len(w.preds); i++ { // one prefix per predicate, in key order
			p := ""
			if w.preds != nil {
				p = w.preds[i]
			}
			w.prefix = append(w.prefix[:0], w.tx.k.triple(tagSPO, u, p, "", nil)...)
			c, s, err := w.scan(w.spo, w.prefix, true, &n, visit)
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
		w.prefix = append(w.prefix[:0], w.tx.k.triple(tagOSP, u, "", "", nil)...)
		c, s, err := w.scan(w.osp, w.prefix, false, &n, visit)
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
		e := &w.e
		e.id, e.out = ulid.ULID(id), out
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
		more, err := visit(e)
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

	// The walk records what it reaches and decodes it at the end (see
	// travState): the facts' strings, and their paths, then take a few
	// allocations per traversal instead of a few per fact. The records are
	// reused across traversals.
	ts := tx.s.getTravState()
	defer tx.s.putTravState(ts)
	ts.names = names
	index := ts.index
	for i, s := range seeds {
		index[s] = int32(i)
		ts.ents = append(ts.ents, travEntity{parent: -1, step: -1, depth: 0})
	}
	// A fact is met twice only when the walk follows both directions: from
	// its subject and from its object (or twice from an entity linked to
	// itself). Each entity is expanded once, so one direction meets each
	// fact once.
	var emitted map[ulid.ULID]struct{}
	if q.Direction == Both {
		emitted = ts.emitted
	}
	var res Traversal
	frontier := append(ts.frontier, seeds...)
	next := ts.next
	full := false // Limit reached: the walk stops (a fan-out cut does not stop it)
	var h, ui int32
	visit := func(e *edge) (bool, error) {
		if emitted != nil {
			if _, dup := emitted[e.id]; dup {
				return true, nil
			}
		}
		if len(ts.steps) == limit {
			res.Truncated, full = true, true
			return false, nil
		}
		if emitted != nil {
			emitted[e.id] = struct{}{}
		}
		st := travStep{id: e.id, val: int32(len(ts.vals)), hops: h, from: ui, out: e.out}
		ts.vals = append(ts.vals, e.val...)
		if vi, seen := index[string(e.other)]; seen {
			// Already reached (a seed, or by a shorter or earlier path):
			// the fact still links u to it.
			st.to = vi
		} else {
			st.to = int32(len(ts.ents))
			other := string(e.other)
			index[other] = st.to
			ts.ents = append(ts.ents, travEntity{parent: ui, step: int32(len(ts.steps)), depth: h})
			next = append(next, other)
		}
		ts.steps = append(ts.steps, st)
		return true, nil
	}
	for h = 1; int(h) <= hops && len(frontier) > 0 && !full; h++ {
		next = next[:0]
		ahead, chunk := 0, firstSeekPrefetch
		for i, u := range frontier {
			if i == ahead && len(frontier)-i > 1 {
				// Read ahead the next entities' facts, twice as many each
				// time: a walk that Limit stops early reads few it does
				// not expand.
				n := min(chunk, len(frontier)-i)
				if err := w.prefetch(frontier[i : i+n]); err != nil {
					return Traversal{}, err
				}
				ahead, chunk = i+n, min(2*chunk, maxSeekPrefetch)
			}
			ui = index[u]
			cut, stop, err := w.expand(u, visit)
			if err != nil {
				return Traversal{}, err
			}
			res.Truncated = res.Truncated || cut
			if stop {
				break
			}
		}
		frontier, next = next, frontier
	}
	ts.frontier, ts.next = frontier, next
	if res.Steps, err = ts.decode(); err != nil {
		return Traversal{}, err
	}
	return res, nil
}

// travState is what a traversal reached, before decoding: each fact as its
// id and stored value (in vals), and each entity by the step that reached
// it first; and the walk's maps and frontiers. A Store keeps a few for
// reuse (getTravState).
type travState struct {
	names   []string // display names of the seeds, the first entities
	ents    []travEntity
	steps   []travStep
	vals    []byte
	index   map[string]int32 // folded name → entity
	emitted map[ulid.ULID]struct{}

	frontier, next []string
}

// maxPooledSteps bounds the traversals whose records are kept for reuse:
// clearing a map costs its capacity, so a huge walk's maps are dropped.
const maxPooledSteps = 4096

func (s *Store) getTravState() *travState {
	if ts, ok := s.travStates.Get().(*travState); ok {
		return ts
	}
	return &travState{index: map[string]int32{}, emitted: map[ulid.ULID]struct{}{}}
}

func (s *Store) putTravState(ts *travState) {
	if len(ts.steps) > maxPooledSteps || len(ts.ents) > maxPooledSteps {
		return
	}
	clear(ts.index)
	clear(ts.emitted)
	clear(ts.frontier[:cap(ts.frontier)]) // drop the names they hold
	clear(ts.next[:cap(ts.next)])
	*ts = travState{
		ents: ts.ents[:0], steps: ts.steps[:0], vals: ts.vals[:0],
		index: ts.index, emitted: ts.emitted,
		frontier: ts.frontier[:0], next: ts.next[:0],
	}
	s.travStates.Put(ts)
}

type travEntity struct {
	parent int32 // entity this one was reached from; -1 for a seed
	step   int32 // index of the step that reached it; -1 for a seed
	depth  int32 // hops from the seeds
}

type travStep struct {
	id       ulid.ULID
	val      int32 // offset of the stored value in travState.vals
	hops     int32
	from, to int32 // entities the fact links, in the walk's direction
	out      bool  // from is the subject
}

// ulidTextLen is the length of a ULID as text.
const ulidTextLen = 26

// decode builds the steps: their facts, whose strings (ids, names, sources)
// share one string, and their paths, which share one array.
func (ts *travState) decode() ([]Step, error) {
	if len(ts.steps) == 0 {
		return nil, nil
	}
	end := func(i int) int32 {
		if i+1 < len(ts.steps) {
			return ts.steps[i+1].val
		}
		return int32(len(ts.vals))
	}
	size := 0
	for i := range ts.steps {
		size += ulidTextLen + int(end(i)-ts.steps[i].val) - factHead
	}
	var sb strings.Builder
	sb.Grow(size)
	var text [ulidTextLen]byte
	for i, st := range ts.steps {
		_ = st.id.MarshalTextTo(text[:])
		sb.Write(text[:])
		sb.Write(ts.vals[st.val+factHead : end(i)])
	}
	all := sb.String()
	steps := make([]Step, len(ts.steps))
	at := 0
	for i, st := range ts.steps {
		b := ts.vals[st.val:end(i)]
		n := len(b) - factHead
		if err := decodeFactInto(&steps[i].Fact, b, all[at:at+ulidTextLen], all[at+ulidTextLen:at+ulidTextLen+n]); err != nil {
			return nil, err
		}
		at += ulidTextLen + n
		steps[i].Hops = int(st.hops)
	}
	// Paths: each entity's (its parent's plus its own display name, taken
	// from the fact that reached it), shared by the step that reached it;
	// every other step gets its own (its start's plus its end's name).
	slots := 0
	for _, e := range ts.ents {
		slots += int(e.depth) + 1
	}
	for i, st := range ts.steps {
		if ts.ents[st.to].step != int32(i) {
			slots += int(st.hops) + 1
		}
	}
	slab := make([]string, 0, slots)
	take := func(prefix []string, name string) []string {
		p := append(slab[len(slab):len(slab)], prefix...)
		p = append(p, name)
		slab = slab[:len(slab)+len(p)]
		return p[:len(p):len(p)]
	}
	paths := make([][]string, len(ts.ents))
	for i, e := range ts.ents {
		if e.parent < 0 {
			paths[i] = take(nil, ts.names[i])
			continue
		}
		f := &steps[e.step].Fact
		name := f.Object
		if !ts.steps[e.step].out {
			name = f.Subject
		}
		paths[i] = take(paths[e.parent], name)
		steps[e.step].Path = paths[i]
	}
	for i, st := range ts.steps {
		if steps[i].Path == nil {
			to := paths[st.to]
			steps[i].Path = take(paths[st.from], to[len(to)-1])
		}
	}
	return steps, nil
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
