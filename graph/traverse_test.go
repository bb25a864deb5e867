package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/kv"
)

// TestTraverseBFS compares Traverse, ShortestPath and Neighbors on random
// graphs with a plain breadth-first search over the graph's facts in a
// slice, written from the documentation: frontier order; per entity its
// outgoing facts by (predicate, object, id), then its incoming facts by
// (subject, predicate, id), all folded; at most MaxFanout matching valid
// facts per entity and direction, counted whether or not they were already
// emitted; each fact once; Limit; Truncated.
func TestTraverseBFS(t *testing.T) {
	graphs := 40
	if testing.Short() || raceEnabled {
		graphs = 10
	}
	for seed := range uint64(graphs) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			g := newTravGraph(t, seed)
			// Each call on its own subtest, with its own random numbers, so
			// that one failing does not hide the others.
			for _, c := range []struct {
				name  string
				n     int
				check func(*travGraph)
			}{
				{"traverse", 40, func(g *travGraph) { g.checkTraverse(g.traverseQuery()) }},
				{"shortest", 20, (*travGraph).checkShortestPath},
				{"neighbors", 10, (*travGraph).checkNeighbors},
			} {
				t.Run(c.name, func(t *testing.T) {
					g := g.on(t, uint64(len(c.name)))
					for range c.n {
						c.check(g)
					}
				})
			}
		})
	}
}

// TestTraverseWalksOnPastFanoutBound is the smallest case of a hub that
// has more facts than the fan-out bound: the walk takes the first
// MaxFanout of them and goes on from the entities they reach, and
// ShortestPath, which "explores the facts a traversal with the same bounds
// explores", finds the same two-hop path.
func TestTraverseWalksOnPastFanoutBound(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	update(t, s, db, func(tx *Tx) error {
		for _, f := range []Fact{
			{Subject: "hub", Predicate: "r", Object: "a"},
			{Subject: "hub", Predicate: "r", Object: "b"},
			{Subject: "hub", Predicate: "r", Object: "c"},
			{Subject: "a", Predicate: "r", Object: "x"},
		} {
			if _, err := tx.Relate(f); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, db, func(tx *Tx) error {
		tr, err := tx.Traverse(TraverseQuery{From: []string{"hub"}, MaxHops: 2, Direction: Out, MaxFanout: 2})
		if err != nil {
			return err
		}
		var got []string
		for _, st := range tr.Steps {
			got = append(got, fmt.Sprintf("%d %s", st.Hops, strings.Join(st.Path, ">")))
		}
		want := []string{"1 hub>a", "1 hub>b", "2 hub>a>x"}
		if !slices.Equal(got, want) || !tr.Truncated {
			t.Errorf("Traverse from a hub over the fan-out bound:\n got %q truncated %v\nwant %q truncated true", got, tr.Truncated, want)
		}
		path, err := tx.ShortestPath(PathQuery{From: "hub", To: "x", MaxHops: 2, Direction: Out, MaxFanout: 2})
		if err != nil {
			return err
		}
		if len(path) != 2 {
			t.Errorf("ShortestPath hub to x: %d facts, want 2", len(path))
		}
		return nil
	})
}

// TestTraverseBadQueries checks the errors of malformed queries.
func TestTraverseBadQueries(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	update(t, s, db, func(tx *Tx) error {
		_, err := tx.Relate(Fact{Subject: "a", Predicate: "r", Object: "b"})
		return err
	})
	for _, c := range []struct {
		name string
		run  func(*Tx) error
		want error
	}{
		{"direction", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{"a"}, Direction: In + 1})
			return err
		}, ErrInvalidQuery},
		{"negative fan-out", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{"a"}, MaxFanout: -1})
			return err
		}, ErrInvalidQuery},
		{"hops", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{"a"}, MaxHops: MaxHopsLimit + 1})
			return err
		}, ErrInvalidQuery},
		{"limit", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{"a"}, Limit: MaxTraverseLimit + 1})
			return err
		}, ErrInvalidQuery},
		{"seed name", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{" "}})
			return err
		}, ErrInvalidName},
		{"predicate", func(tx *Tx) error {
			_, err := tx.Traverse(TraverseQuery{From: []string{"a"}, Predicates: []string{"r\x00"}})
			return err
		}, ErrInvalidName},
		{"path from unknown", func(tx *Tx) error {
			_, err := tx.ShortestPath(PathQuery{From: "nobody", To: "a"})
			return err
		}, ErrEntityNotFound},
		{"path to unknown", func(tx *Tx) error {
			_, err := tx.ShortestPath(PathQuery{From: "a", To: "nobody"})
			return err
		}, ErrEntityNotFound},
		{"path hops", func(tx *Tx) error {
			_, err := tx.ShortestPath(PathQuery{From: "a", To: "b", MaxHops: -1})
			return err
		}, ErrInvalidQuery},
		{"neighbors of unknown", func(tx *Tx) error {
			_, err := tx.Neighbors(NeighborQuery{Entity: "nobody"})
			return err
		}, ErrEntityNotFound},
		{"neighbors limit", func(tx *Tx) error {
			_, err := tx.Neighbors(NeighborQuery{Entity: "a", Limit: MaxPageSize + 1})
			return err
		}, ErrInvalidQuery},
	} {
		err := s.View(t.Context(), db, testRoot, c.run)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

var (
	travBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// travNow is the clock of every random graph: facts starting after
	// it, or closed before it, do not hold now.
	travNow = travBase.Add(3 * 24 * time.Hour)
	// travStems name entities; display order ("Bea" < "ann") differs from
	// folded order.
	travStems = []string{"ann", "Bea", "cid", "Dov", "eli", "Fay", "gus", "Hal", "ivy", "Jon"}
	// travPredicates lists spellings of each predicate.
	travPredicates = [][]string{
		{"knows", "KNOWS"},
		{"Likes", "likes "},
		{"rel  a", "REL A"},
		{"zeta", "Zeta"},
		{"Alpha", "alpha"},
	}
)

// travInstant returns travBase plus days.
func travInstant(days int) time.Time { return travBase.Add(time.Duration(days) * 24 * time.Hour) }

// travGraph is a random graph in a Store and, read back, in a slice.
type travGraph struct {
	t      *testing.T
	rng    *rand.Rand
	s      *Store
	db     *kv.DB
	fanout int        // the Store's default bound
	names  [][]string // spellings of each entity
	// display maps folded names and aliases to display names.
	display map[string]string
	facts   []Fact // every stored fact, valid or not
}

func newTravGraph(t *testing.T, seed uint64) *travGraph {
	rng := rand.New(rand.NewPCG(seed, 0x7a7))
	fanout := []int{0, 3, 6}[rng.IntN(3)]
	s, db, clock := newTestGraph(t, &Options{MaxFanout: fanout})
	clock.set(travNow)
	if fanout == 0 {
		fanout = DefaultMaxFanout
	}
	g := &travGraph{t: t, rng: rng, s: s, db: db, fanout: fanout, display: map[string]string{}}

	n := 6 + rng.IntN(25)
	hub := rng.IntN(2) == 0
	for i := range n {
		d := travStems[i%len(travStems)]
		if i >= len(travStems) {
			d += fmt.Sprint(" ", i/len(travStems))
		}
		if i == 0 && hub {
			d = "Hub"
		}
		g.names = append(g.names, []string{d, strings.ToUpper(d), " " + strings.ToLower(d) + " "})
	}
	// An alias: seeds and endpoints may name entity 1 by it.
	g.update(func(tx *Tx) {
		if _, err := tx.CreateEntities([]Entity{{Name: g.names[1][0], Aliases: []string{"Second"}}}); err != nil {
			t.Fatal(err)
		}
	})
	g.names[1] = append(g.names[1], "second")

	var batch []Fact
	relate := func(f Fact) {
		batch = append(batch, f)
		if len(batch) == 16 {
			g.relate(batch)
			batch = nil
		}
	}
	for range n + rng.IntN(3*n) {
		f := g.fact(rng.IntN(n), rng.IntN(n))
		relate(f)
		if rng.IntN(8) == 0 {
			// A parallel fact: same entities, another predicate.
			f.Predicate = g.predicate()
			relate(f)
		}
	}
	if hub {
		for range 20 + rng.IntN(40) {
			if rng.IntN(2) == 0 {
				relate(g.fact(0, rng.IntN(n)))
			} else {
				relate(g.fact(rng.IntN(n), 0))
			}
		}
	}
	g.relate(batch)

	// The display name of an entity is the first spelling Relate met.
	g.view(func(tx *Tx) {
		var err error
		if g.facts, err = tx.Facts(FactQuery{History: true, Limit: MaxPageSize}); err != nil {
			t.Fatal(err)
		}
		for _, names := range g.names {
			e, err := tx.Entity(names[0])
			if errors.Is(err, ErrEntityNotFound) {
				continue // in no fact
			} else if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				g.display[refFold(name)] = e.Name
			}
		}
	})
	return g
}

// on returns g for test t with its own random numbers.
func (g *travGraph) on(t *testing.T, stream uint64) *travGraph {
	c := *g
	c.t, c.rng = t, rand.New(rand.NewPCG(g.rng.Uint64(), stream))
	return &c
}

func (g *travGraph) update(fn func(*Tx)) {
	g.t.Helper()
	if err := g.s.Update(g.t.Context(), g.db, testRoot, func(tx *Tx) error { fn(tx); return nil }); err != nil {
		g.t.Fatal(err)
	}
}

func (g *travGraph) view(fn func(*Tx)) {
	g.t.Helper()
	if err := g.s.View(g.t.Context(), g.db, testRoot, func(tx *Tx) error { fn(tx); return nil }); err != nil {
		g.t.Fatal(err)
	}
}

// relate stores facts in one transaction and closes some of them.
func (g *travGraph) relate(facts []Fact) {
	g.update(func(tx *Tx) {
		for _, f := range facts {
			stored, err := tx.Relate(f)
			if err != nil {
				g.t.Fatalf("relate %+v: %v", f, err)
			}
			if g.rng.IntN(10) == 0 {
				// Closed now, or later (still valid now); an error when
				// the fact starts after then.
				at := []time.Time{{}, travInstant(1), travInstant(5)}[g.rng.IntN(3)]
				if _, err := tx.Invalidate(stored.ID, at); err != nil && !errors.Is(err, ErrInvalidFact) {
					g.t.Fatal(err)
				}
			}
		}
	})
}

func (g *travGraph) spelling(i int) string { return g.names[i][g.rng.IntN(len(g.names[i]))] }

func (g *travGraph) predicate() string {
	p := travPredicates[g.rng.IntN(len(travPredicates))]
	return p[g.rng.IntN(len(p))]
}

// fact returns a fact from entity s to entity o, mostly holding now.
func (g *travGraph) fact(s, o int) Fact {
	if g.rng.IntN(20) == 0 {
		o = s // a self-loop
	}
	f := Fact{Subject: g.spelling(s), Predicate: g.predicate(), Object: g.spelling(o)}
	switch g.rng.IntN(10) {
	case 0:
		f.ValidFrom = travInstant(g.rng.IntN(3)) // began earlier
	case 1:
		f.ValidFrom = travInstant(4 + g.rng.IntN(3)) // begins later
	case 2:
		f.ValidFrom = travInstant(g.rng.IntN(2))
		f.ValidTo = travInstant(2 + g.rng.IntN(4)) // closed before or after now
	}
	return f
}

// name returns a spelling of a random entity or, now and then, a name
// that names none.
func (g *travGraph) name() string {
	if g.rng.IntN(12) == 0 {
		return "ghost"
	}
	return g.spelling(g.rng.IntN(len(g.names)))
}

// filters returns random shared query fields: direction, predicates, AsOf
// and fan-out bound.
func (g *travGraph) filters() (Direction, []string, time.Time, int) {
	dir := Direction(g.rng.IntN(3))
	var preds []string
	if g.rng.IntN(10) < 4 {
		for range 1 + g.rng.IntN(3) {
			preds = append(preds, g.predicate())
		}
		if g.rng.IntN(5) == 0 {
			preds = append(preds, "unused")
		}
	}
	var at time.Time
	if g.rng.IntN(10) < 4 {
		at = travInstant(g.rng.IntN(7))
	}
	fanout := 0
	if g.rng.IntN(10) < 6 {
		fanout = 1 + g.rng.IntN(6)
	}
	return dir, preds, at, fanout
}

func (g *travGraph) traverseQuery() TraverseQuery {
	var q TraverseQuery
	for range 1 + g.rng.IntN(3) {
		q.From = append(q.From, g.name())
	}
	q.MaxHops = g.rng.IntN(5)
	q.Direction, q.Predicates, q.AsOf, q.MaxFanout = g.filters()
	if g.rng.IntN(10) < 4 {
		q.Limit = 1 + g.rng.IntN(40)
	}
	return q
}

// travFilter is a query's selection of facts: which predicates (nil: all),
// when, and how many per entity and direction.
type travFilter struct {
	preds  map[string]bool
	at     time.Time
	fanout int
}

func (g *travGraph) filter(preds []string, at time.Time, fanout int) travFilter {
	f := travFilter{at: at, fanout: fanout}
	if at.IsZero() {
		f.at = travNow
	}
	if fanout == 0 {
		f.fanout = g.fanout
	}
	if len(preds) > 0 {
		f.preds = map[string]bool{}
		for _, p := range preds {
			f.preds[refFold(p)] = true
		}
	}
	return f
}

// candidates returns the facts of entity u (folded) in one direction that
// match f, in the documented order, and whether there are more than the
// fan-out bound (then only the first that many are returned).
func (g *travGraph) candidates(u string, out bool, f travFilter) ([]Fact, bool) {
	type keyed struct {
		key [3]string
		f   Fact
	}
	var c []keyed
	for _, x := range g.facts {
		s, p, o := refFold(x.Subject), refFold(x.Predicate), refFold(x.Object)
		if (out && s != u) || (!out && o != u) || (f.preds != nil && !f.preds[p]) || !x.ValidAt(f.at) {
			continue
		}
		if out {
			c = append(c, keyed{[3]string{p, o, x.ID}, x})
		} else {
			c = append(c, keyed{[3]string{s, p, x.ID}, x})
		}
	}
	slices.SortFunc(c, func(a, b keyed) int { return slices.Compare(a.key[:], b.key[:]) })
	cut := len(c) > f.fanout
	if cut {
		c = c[:f.fanout]
	}
	facts := make([]Fact, len(c))
	for i := range c {
		facts[i] = c[i].f
	}
	return facts, cut
}

// directions lists the directions of d: true is outgoing.
func directions(d Direction) []bool {
	switch d {
	case Out:
		return []bool{true}
	case In:
		return []bool{false}
	}
	return []bool{true, false}
}

// traverse is the reference breadth-first walk.
func (g *travGraph) traverse(q TraverseQuery) Traversal {
	hops, limit := cmpOr(q.MaxHops, DefaultMaxHops), cmpOr(q.Limit, DefaultTraverseLimit)
	f := g.filter(q.Predicates, q.AsOf, q.MaxFanout)
	paths := map[string][]string{} // reached entity → display names from a seed
	var frontier []string
	for _, name := range q.From {
		d, ok := g.display[refFold(name)]
		if u := refFold(d); ok && paths[u] == nil {
			paths[u] = []string{d}
			frontier = append(frontier, u)
		}
	}
	var res Traversal
	emitted := map[string]bool{}
	for h := 1; h <= hops && len(frontier) > 0; h++ {
		var next []string
		for _, u := range frontier {
			for _, out := range directions(q.Direction) {
				c, cut := g.candidates(u, out, f)
				res.Truncated = res.Truncated || cut
				for _, x := range c {
					if emitted[x.ID] {
						continue
					}
					if len(res.Steps) == limit {
						res.Truncated = true
						return res
					}
					emitted[x.ID] = true
					other := x.Object
					if !out {
						other = x.Subject
					}
					path := append(slices.Clone(paths[u]), other)
					if v := refFold(other); paths[v] == nil {
						paths[v] = path
						next = append(next, v)
					}
					res.Steps = append(res.Steps, Step{Fact: x, Hops: h, Path: path})
				}
			}
		}
		frontier = next
	}
	return res
}

func cmpOr(v, zero int) int {
	if v == 0 {
		return zero
	}
	return v
}

// stepRep is a step reduced to comparable text.
type stepRep struct {
	fact factRep
	hops int
	path string
}

func (s stepRep) String() string { return fmt.Sprintf("hop %d %s: %v", s.hops, s.path, s.fact) }

func stepReps(steps []Step) []stepRep {
	out := make([]stepRep, len(steps))
	for i, s := range steps {
		out[i] = stepRep{repOf(s.Fact), s.Hops, strings.Join(s.Path, " > ")}
	}
	return out
}

func (g *travGraph) checkTraverse(q TraverseQuery) {
	g.t.Helper()
	var got Traversal
	g.view(func(tx *Tx) {
		var err error
		if got, err = tx.Traverse(q); err != nil {
			g.t.Fatalf("Traverse(%+v): %v", q, err)
		}
	})
	want := g.traverse(q)
	w, gs := stepReps(want.Steps), stepReps(got.Steps)
	if !slices.Equal(w, gs) || want.Truncated != got.Truncated {
		g.t.Fatalf("Traverse(%+v) (store fan-out %d) differs from the reference (truncated: want %v, got %v):\n%s\ngraph:\n%s",
			q, g.fanout, want.Truncated, got.Truncated, diffReps(w, gs), g.dump())
	}
	// The bound, checked on the answer itself: the entity a step was
	// reached from is the last but one of its path. A self-loop may count
	// in either direction.
	f := g.filter(q.Predicates, q.AsOf, q.MaxFanout)
	type count struct{ out, in, all int }
	counts := map[string]*count{}
	for _, st := range got.Steps {
		u := refFold(st.Path[len(st.Path)-2])
		c := counts[u]
		if c == nil {
			c = &count{}
			counts[u] = c
		}
		c.all++
		switch s, o := refFold(st.Subject), refFold(st.Object); {
		case s == u && o != u:
			c.out++
		case o == u && s != u:
			c.in++
		}
	}
	for u, c := range counts {
		if c.out > f.fanout || c.in > f.fanout || c.all > f.fanout*len(directions(q.Direction)) {
			g.t.Fatalf("Traverse(%+v): %q contributes %+v facts, bound %d per direction", q, u, *c, f.fanout)
		}
	}
}

// distance returns the number of hops from entity from to entity to over
// the facts the reference walk explores, and false beyond hops.
func (g *travGraph) distance(from, to string, hops int, dir Direction, f travFilter) (int, bool) {
	dist := map[string]int{from: 0}
	frontier := []string{from}
	for h := 1; h <= hops && len(frontier) > 0; h++ {
		var next []string
		for _, u := range frontier {
			for _, out := range directions(dir) {
				c, _ := g.candidates(u, out, f)
				for _, x := range c {
					v := refFold(x.Object)
					if !out {
						v = refFold(x.Subject)
					}
					if _, ok := dist[v]; !ok {
						dist[v] = h
						next = append(next, v)
					}
				}
			}
		}
		frontier = next
	}
	d, ok := dist[to]
	return d, ok
}

func (g *travGraph) checkShortestPath() {
	g.t.Helper()
	q := PathQuery{From: g.name(), To: g.name(), MaxHops: g.rng.IntN(5)}
	if g.rng.IntN(10) == 0 {
		q.To = q.From
	}
	q.Direction, q.Predicates, q.AsOf, q.MaxFanout = g.filters()
	var got []Fact
	var err error
	g.view(func(tx *Tx) { got, err = tx.ShortestPath(q) })
	fd, fok := g.display[refFold(q.From)]
	td, tok := g.display[refFold(q.To)]
	if !fok || !tok {
		if !errors.Is(err, ErrEntityNotFound) {
			g.t.Fatalf("ShortestPath(%+v): %v, %v; want ErrEntityNotFound", q, got, err)
		}
		return
	}
	if err != nil {
		g.t.Fatalf("ShortestPath(%+v): %v", q, err)
	}
	from, to := refFold(fd), refFold(td)
	f := g.filter(q.Predicates, q.AsOf, q.MaxFanout)
	d, ok := g.distance(from, to, cmpOr(q.MaxHops, DefaultMaxHops), q.Direction, f)
	switch {
	case !ok && got != nil:
		g.t.Fatalf("ShortestPath(%+v) = %v, want nil: no path within the bounds\ngraph:\n%s", q, reps(got), g.dump())
	case ok && (got == nil || len(got) != d):
		g.t.Fatalf("ShortestPath(%+v) = %d facts %v, want %d\ngraph:\n%s", q, len(got), reps(got), d, g.dump())
	case !ok:
		return
	}
	// The facts chain from From to To, each one explored from the entity
	// the chain has reached.
	cur := from
	for i, x := range got {
		next := ""
		for _, out := range directions(q.Direction) {
			c, _ := g.candidates(cur, out, f)
			if slices.ContainsFunc(c, func(y Fact) bool { return repOf(y) == repOf(x) }) {
				next = refFold(x.Object)
				if !out {
					next = refFold(x.Subject)
				}
				break
			}
		}
		if next == "" {
			g.t.Fatalf("ShortestPath(%+v): fact %d %v is not explored from %q\ngraph:\n%s", q, i, repOf(x), cur, g.dump())
		}
		cur = next
	}
	if cur != to {
		g.t.Fatalf("ShortestPath(%+v) ends at %q: %v", q, cur, reps(got))
	}
}

func (g *travGraph) checkNeighbors() {
	g.t.Helper()
	q := NeighborQuery{Entity: g.name()}
	var fanout int
	q.Direction, q.Predicates, q.AsOf, fanout = g.filters()
	q.Limit = fanout // a small page, or the default
	var got []Fact
	var err error
	g.view(func(tx *Tx) { got, err = tx.Neighbors(q) })
	d, ok := g.display[refFold(q.Entity)]
	if !ok {
		if !errors.Is(err, ErrEntityNotFound) {
			g.t.Fatalf("Neighbors(%+v): %v, %v; want ErrEntityNotFound", q, got, err)
		}
		return
	}
	if err != nil {
		g.t.Fatalf("Neighbors(%+v): %v", q, err)
	}
	var want []Fact
	for _, out := range directions(q.Direction) {
		c, _ := g.candidates(refFold(d), out, g.filter(q.Predicates, q.AsOf, cmpOr(q.Limit, DefaultPageSize)))
		want = append(want, c...)
	}
	if w, gs := reps(want), reps(got); !slices.Equal(w, gs) {
		g.t.Fatalf("Neighbors(%+v) differs from the reference:\n%s", q, diffReps(w, gs))
	}
}

// dump lists the graph's facts for a failure message, when they are few.
func (g *travGraph) dump() string {
	if len(g.facts) > 60 {
		return fmt.Sprintf("  (%d facts)\n", len(g.facts))
	}
	var b strings.Builder
	for _, f := range g.facts {
		fmt.Fprintf(&b, "  %s %q -%q-> %q [%s, %s)\n", f.ID, f.Subject, f.Predicate, f.Object, modelTime(f.ValidFrom), modelTime(f.ValidTo))
	}
	return b.String()
}

// TestTraverseConcurrentReuse runs traversals of different shapes from
// many goroutines on one Store, whose working records are reused across
// calls, and checks each result against the same query on a Store that
// has never traversed (so reused records leak nothing into a result).
func TestTraverseConcurrentReuse(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	update(t, s, db, func(tx *Tx) error {
		for i, x := range names {
			for j, y := range names {
				if (i*7+j*3)%4 == 0 {
					if _, err := tx.Relate(Fact{Subject: x, Predicate: fmt.Sprintf("r%d", (i+j)%3), Object: y}); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	var queries []TraverseQuery
	for _, from := range names {
		for _, dir := range []Direction{Both, Out, In} {
			queries = append(queries,
				TraverseQuery{From: []string{from}, MaxHops: 3, Direction: dir},
				TraverseQuery{From: []string{from, "nobody"}, MaxHops: 2, Direction: dir, Limit: 5, MaxFanout: 2},
				TraverseQuery{From: []string{from}, MaxHops: 2, Direction: dir, Predicates: []string{"R1"}})
		}
	}
	want := make([]Traversal, len(queries))
	for i, q := range queries {
		fresh, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		fresh.now = s.now
		view(t, fresh, db, func(tx *Tx) (err error) {
			want[i], err = tx.Traverse(q)
			return err
		})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 5 {
				for k := range queries {
					i := (k*5 + g + r) % len(queries)
					var got Traversal
					err := s.View(context.Background(), db, testRoot, func(tx *Tx) (err error) {
						got, err = tx.Traverse(queries[i])
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					if !reflect.DeepEqual(got, want[i]) {
						t.Errorf("query %+v: got %+v, want %+v", queries[i], got, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
