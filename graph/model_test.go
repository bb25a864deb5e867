package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// TestModel runs random Relate, Invalidate, Delete and Load calls against a
// Store and against refGraph, a plain slice of facts that follows the
// documented semantics, and compares every query after every step (like
// bbolt's simulation_test.go). Three ways of writing are checked:
// one kv transaction per operation, several operations sharing one
// transaction (Relate then reads the Tx's own writes through its overlay),
// and facts arriving through Store.Load, whose chunks also share
// transactions.
func TestModel(t *testing.T) {
	steps := 2000
	if testing.Short() || raceEnabled {
		steps = 300
	}
	for _, mode := range []modelMode{modelSeparate, modelShared, modelLoaded} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", mode, seed), func(t *testing.T) {
				t.Parallel()
				newModelRun(t, mode, seed).run(steps)
			})
		}
	}
}

// modelMode says how a model run groups its operations into transactions.
type modelMode int

const (
	// modelSeparate commits every operation in its own transaction.
	modelSeparate modelMode = iota
	// modelShared runs up to 30 operations, and the queries after each, in
	// one transaction.
	modelShared
	// modelLoaded starts from a Store.Load of a large dump and also loads
	// small dumps among the other operations.
	modelLoaded
)

func (m modelMode) String() string {
	switch m {
	case modelSeparate:
		return "separate"
	case modelShared:
		return "shared"
	case modelLoaded:
		return "loaded"
	}
	return fmt.Sprintf("modelMode(%d)", int(m))
}

// The universe: few names, so that operations collide often.
var (
	modelBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// modelFar is outside the years a fact may hold.
	modelFar = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)

	// modelEntities lists spellings of each entity; they fold alike,
	// except "Al", an alias of Alice created up front. The first spelling
	// used becomes the display name, so display order and folded order
	// differ in some runs ("Zed" < "dana" < "zed").
	modelEntities = [][]string{
		{"Alice", " alice ", "ALICE", "Al"},
		{"Bob", "bob", " BOB"},
		{"zed", "Zed", "ZED\t"},
		{"Mary Ann", "mary  ann", "MARY ANN "},
		{"dana", "Dana", "DANA"},
		{"Eve", "eve", " Eve "},
	}
	// modelNobody names no entity; modelGhost is used only in facts
	// Relate must refuse, so it must never name one either.
	modelNobody = "Nobody"
	modelGhost  = "Ghost"
	// modelPredicates lists spellings of each predicate; owner and
	// lives_in are single-valued (declared with other spellings).
	modelPredicates = [][]string{
		{"knows", "Knows", " KNOWS"},
		{"Works At", "works at", "WORKS  AT"},
		{"owner", "Owner", "OWNER "},
		{"lives_in", "Lives_In", " LIVES_IN"},
	}
	modelSingleValued = []string{"OWNER", " lives_in "}
)

// modelPoints are the instants every time of a run is drawn from: every
// 12 hours from a day before modelBase. Validity intervals start and end
// on them, so checking an invariant at each of them checks it everywhere.
var modelPoints = func() []time.Time {
	var p []time.Time
	for i := -2; i < 12; i++ {
		p = append(p, modelBase.Add(time.Duration(i)*12*time.Hour))
	}
	return p
}()

// refFold folds the ASCII names of the universe: lower case, white space
// trimmed and collapsed.
func refFold(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), " "))
}

// refName reports whether a name may be stored (see ErrInvalidName).
func refName(name string) bool {
	d := strings.TrimSpace(name)
	if d == "" || len(d) > MaxNameLength || !utf8.ValidString(d) {
		return false
	}
	for _, r := range d {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// refTime reports whether a time may be stored (years 1678-2261).
func refTime(t time.Time) bool { return t.IsZero() || (t.Year() > 1677 && t.Year() < 2262) }

func refValidAt(f *Fact, at time.Time) bool {
	return !f.ValidFrom.After(at) && (f.ValidTo.IsZero() || at.Before(f.ValidTo))
}

// refFact is a stored fact of the reference with its folded names.
type refFact struct {
	Fact
	s, p, o string
}

// refGraph is the reference: every stored fact in a slice, and the names.
type refGraph struct {
	single map[string]bool   // folded single-valued predicates
	names  map[string]string // folded name or alias → display name
	facts  []refFact
}

func newRefGraph() *refGraph {
	g := &refGraph{single: map[string]bool{}, names: map[string]string{}}
	for _, p := range modelSingleValued {
		g.single[refFold(p)] = true
	}
	return g
}

// resolve returns the folded display name of the entity name names.
func (g *refGraph) resolve(name string) (string, bool) {
	d, ok := g.names[refFold(name)]
	return refFold(d), ok
}

func (g *refGraph) find(id string) int {
	return slices.IndexFunc(g.facts, func(f refFact) bool { return f.ID == id })
}

// relatePlan is what Relate does with a fact: store fact (after closing
// the facts at closes), or, when dups is set, return one of dups and store
// nothing.
type relatePlan struct {
	fact   refFact
	dups   []Fact
	closes []int
	keepID string // Load: the dump's id, when it is kept
}

// planRelate applies the documented rules of Relate to f without changing
// g. With load set it follows Store.Load instead: a dump's id, CreatedAt
// and (with a ValidTo) ExpiredAt are kept, and a fact may be closed at its
// own start.
func (g *refGraph) planRelate(f Fact, now time.Time, load bool) (relatePlan, error) {
	var pl relatePlan
	switch {
	case !refName(f.Subject) || !refName(f.Predicate) || !refName(f.Object):
		return pl, ErrInvalidFact
	case !refTime(f.ValidFrom) || !refTime(f.ValidTo):
		return pl, ErrInvalidFact
	case load && (!refTime(f.CreatedAt) || !refTime(f.ExpiredAt)):
		return pl, ErrInvalidFact
	case !f.ValidFrom.IsZero() && !f.ValidTo.IsZero() && f.ValidTo.Before(f.ValidFrom):
		return pl, ErrInvalidFact
	case !load && !f.ValidFrom.IsZero() && f.ValidTo.Equal(f.ValidFrom):
		// Only a dump may hold a fact closed at its own start (one
		// replaced at the instant it began).
		return pl, ErrInvalidFact
	case math.IsNaN(f.Confidence) || f.Confidence < 0 || f.Confidence > 1:
		return pl, ErrInvalidFact
	case len(f.Source) > MaxSourceLength || !utf8.ValidString(f.Source):
		return pl, ErrInvalidFact
	case f.ValidFrom.IsZero() && !f.ValidTo.IsZero() && !f.ValidTo.After(now):
		return pl, ErrInvalidFact
	}
	n := Fact{
		Predicate:  strings.TrimSpace(f.Predicate),
		ValidFrom:  f.ValidFrom,
		ValidTo:    f.ValidTo,
		CreatedAt:  now,
		Source:     f.Source,
		Confidence: f.Confidence,
	}
	if n.ValidFrom.IsZero() {
		n.ValidFrom = now
	}
	if n.Confidence == 0 {
		n.Confidence = 1
	}
	if load {
		if !f.CreatedAt.IsZero() {
			n.CreatedAt = f.CreatedAt
		}
		if !f.ValidTo.IsZero() {
			n.ExpiredAt = f.ExpiredAt
		}
		if u, err := ulid.ParseStrict(f.ID); err == nil && g.find(u.String()) < 0 {
			pl.keepID = u.String()
		}
	}
	// A new name makes an entity displayed as first spelled; the object
	// may be the subject's new entity.
	n.Subject = strings.TrimSpace(f.Subject)
	if d, ok := g.names[refFold(f.Subject)]; ok {
		n.Subject = d
	}
	n.Object = strings.TrimSpace(f.Object)
	if d, ok := g.names[refFold(f.Object)]; ok {
		n.Object = d
	} else if refFold(f.Object) == refFold(f.Subject) {
		n.Object = n.Subject
	}
	pl.fact = refFact{Fact: n, s: refFold(n.Subject), p: refFold(n.Predicate), o: refFold(n.Object)}

	// The single-valued rule, case by case as documented. It bounds the
	// new fact before the duplicate check, and closes facts only if the
	// new one is stored. A fact closed at its own start (only a dump holds
	// a new one) never held: it neither conflicts with another nor bounds
	// it.
	never := func(f *Fact) bool { return !f.ValidTo.IsZero() && !f.ValidTo.After(f.ValidFrom) }
	if g.single[pl.fact.p] && !never(&n) {
		from := n.ValidFrom
		for i, h := range g.facts {
			if h.s != pl.fact.s || h.p != pl.fact.p || never(&h.Fact) {
				continue
			}
			switch {
			case h.ValidFrom.Before(from) && refValidAt(&h.Fact, from):
				pl.closes = append(pl.closes, i) // began before, still valid
			case h.ValidFrom.Equal(from):
				pl.closes = append(pl.closes, i) // replaced
			case h.ValidFrom.After(from):
				if pl.fact.ValidTo.IsZero() || h.ValidFrom.Before(pl.fact.ValidTo) {
					pl.fact.ValidTo = h.ValidFrom
				}
			}
		}
	}
	for _, h := range g.facts {
		if h.s != pl.fact.s || h.p != pl.fact.p || h.o != pl.fact.o {
			continue
		}
		to := pl.fact.ValidTo
		if (h.ValidTo.IsZero() && to.IsZero()) || (h.ValidFrom.Equal(n.ValidFrom) && h.ValidTo.Equal(to)) {
			pl.dups = append(pl.dups, h.Fact)
		}
	}
	if len(pl.dups) > 0 {
		pl.closes = nil
	}
	return pl, nil
}

// commit stores a planned new fact with id.
func (g *refGraph) commit(pl relatePlan, id string, now time.Time) Fact {
	for _, name := range []string{pl.fact.Subject, pl.fact.Object} {
		if _, ok := g.names[refFold(name)]; !ok {
			g.names[refFold(name)] = name
		}
	}
	for _, i := range pl.closes {
		g.facts[i].ValidTo, g.facts[i].ExpiredAt = pl.fact.ValidFrom, now
	}
	pl.fact.ID = id
	g.facts = append(g.facts, pl.fact)
	return pl.fact.Fact
}

func (g *refGraph) invalidate(id string, at, now time.Time) (Fact, error) {
	i := g.find(id)
	if i < 0 {
		return Fact{}, ErrFactNotFound
	}
	if at.IsZero() {
		at = now
	}
	f := &g.facts[i]
	switch {
	case !refTime(at) || at.Before(f.ValidFrom):
		return Fact{}, ErrInvalidFact
	case !f.ValidTo.IsZero() && !at.Before(f.ValidTo):
		return f.Fact, nil
	}
	f.ValidTo, f.ExpiredAt = at, now
	return f.Fact, nil
}

func (g *refGraph) delete(id string) error {
	i := g.find(id)
	if i < 0 {
		return ErrFactNotFound
	}
	g.facts = slices.Delete(g.facts, i, i+1)
	return nil
}

// load plans a whole dump as Store.Load does: everything is checked first.
// New facts whose id the Store assigns get the id "".
func (g *refGraph) load(d *Dump, now time.Time) (LoadStats, error) {
	for _, f := range d.Facts {
		if _, err := g.planRelate(f, now, true); err != nil {
			return LoadStats{}, err
		}
	}
	var st LoadStats
	for _, e := range d.Entities {
		if _, ok := g.names[refFold(e.Name)]; ok {
			continue
		}
		st.Entities++
		g.names[refFold(e.Name)] = strings.TrimSpace(e.Name)
		for _, a := range e.Aliases {
			g.names[refFold(a)] = strings.TrimSpace(e.Name)
		}
	}
	for _, f := range d.Facts {
		pl, _ := g.planRelate(f, now, true)
		if len(pl.dups) > 0 {
			st.Duplicates++
			continue
		}
		st.Facts++
		g.commit(pl, pl.keepID, now)
	}
	return st, nil
}

// query answers q as Facts documents it, in index order.
func (g *refGraph) query(q FactQuery, now time.Time) []Fact {
	var s, p, o string
	var ok bool
	if q.Subject != "" {
		if s, ok = g.resolve(q.Subject); !ok {
			return nil
		}
	}
	if q.Predicate != "" {
		p = refFold(q.Predicate)
	}
	if q.Object != "" {
		if o, ok = g.resolve(q.Object); !ok {
			return nil
		}
	}
	at := q.AsOf
	if at.IsZero() {
		at = now
	}
	key := func(f *refFact) [4]string { return [4]string{f.s, f.p, f.o, f.ID} } // SPO
	switch {
	case s == "" && p != "":
		key = func(f *refFact) [4]string { return [4]string{f.p, f.o, f.s, f.ID} } // POS
	case p == "" && o != "":
		key = func(f *refFact) [4]string { return [4]string{f.o, f.s, f.p, f.ID} } // OSP
	}
	type keyed struct {
		key [4]string
		f   *refFact
	}
	var out []keyed
	for i := range g.facts {
		f := &g.facts[i]
		if (s != "" && f.s != s) || (p != "" && f.p != p) || (o != "" && f.o != o) {
			continue
		}
		if q.History || refValidAt(&f.Fact, at) {
			out = append(out, keyed{key(f), f})
		}
	}
	slices.SortFunc(out, func(a, b keyed) int { return slices.Compare(a.key[:], b.key[:]) })
	facts := make([]Fact, len(out))
	for i, k := range out {
		facts[i] = k.f.Fact
	}
	return facts
}

// history answers History: "in order of ValidFrom (then of creation)".
// The documentation leaves the order of facts with the same ValidFrom and
// CreatedAt open, so those are put in id order here and in byHistory.
func (g *refGraph) history(subject, predicate string) []Fact {
	s, ok := g.resolve(subject)
	if !ok {
		return nil
	}
	p := refFold(predicate)
	var out []refFact
	for _, f := range g.facts {
		if f.s == s && f.p == p {
			out = append(out, f)
		}
	}
	facts := plain(out)
	slices.SortFunc(facts, byHistory)
	return facts
}

func byHistory(a, b Fact) int {
	return cmp.Or(a.ValidFrom.Compare(b.ValidFrom), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
}

func plain(fs []refFact) []Fact {
	out := make([]Fact, len(fs))
	for i := range fs {
		out[i] = fs[i].Fact
	}
	return out
}

// factRep is a fact reduced to comparable fields, times in Unix ns.
type factRep struct {
	ID, S, P, O, Source        string
	From, To, Created, Expired int64
	Confidence                 float64
}

func repOf(f Fact) factRep {
	return factRep{f.ID, f.Subject, f.Predicate, f.Object, f.Source,
		nanos(f.ValidFrom), nanos(f.ValidTo), nanos(f.CreatedAt), nanos(f.ExpiredAt), f.Confidence}
}

func reps(fs []Fact) []factRep {
	out := make([]factRep, len(fs))
	for i, f := range fs {
		out[i] = repOf(f)
	}
	return out
}

// modelTime shows t as hours from modelBase when it is near it.
func modelTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := t.Sub(modelBase); d%time.Hour == 0 && d > -1000*time.Hour && d < 1000*time.Hour {
		return fmt.Sprintf("%+dh", d/time.Hour)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (r factRep) String() string {
	return fmt.Sprintf("%s %q -%q-> %q [%s, %s) created %s expired %s conf %g src %q",
		r.ID, r.S, r.P, r.O, modelTime(fromNanos(r.From)), modelTime(fromNanos(r.To)),
		modelTime(fromNanos(r.Created)), modelTime(fromNanos(r.Expired)), r.Confidence, r.Source)
}

func listReps[T fmt.Stringer](xs []T) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "  %v\n", x)
	}
	return b.String()
}

// diffReps describes how got differs from want.
func diffReps[T fmt.Stringer](want, got []T) string {
	if len(want)+len(got) <= 24 {
		return " want:\n" + listReps(want) + " got:\n" + listReps(got)
	}
	var b strings.Builder
	line := func(prefix string, x T) { fmt.Fprintf(&b, "  %s %v\n", prefix, x) }
	i := 0
	for i < len(want) && i < len(got) && want[i].String() == got[i].String() {
		i++
	}
	fmt.Fprintf(&b, " %d wanted, %d got; first difference at %d\n", len(want), len(got), i)
	for j := i; j < len(want) && j < i+6; j++ {
		line("want", want[j])
	}
	for j := i; j < len(got) && j < i+6; j++ {
		line("got ", got[j])
	}
	return b.String()
}

// modelRun is one random run against a Store and the reference.
type modelRun struct {
	t     *testing.T
	mode  modelMode
	seed  uint64
	root  []byte
	rng   *rand.Rand
	s     *Store
	db    *kv.DB
	clock *fakeClock
	ref   *refGraph

	step    int
	loaded  bool // a Load since the last full check
	log     []string
	lastGen string   // the largest id the Store generated
	deleted []string // ids of deleted facts, to reuse
	dumpIDs int      // ids made for dumps so far
}

func newModelRun(t *testing.T, mode modelMode, seed uint64) *modelRun {
	s, db, clock := newTestGraph(t, &Options{SingleValued: modelSingleValued, Annotation: testAnnotation})
	return &modelRun{t: t, mode: mode, seed: seed, root: testRoot, rng: rand.New(rand.NewPCG(seed, uint64(mode))),
		s: s, db: db, clock: clock, ref: newRefGraph()}
}

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	const keep = 60
	from := max(0, len(r.log)-keep)
	r.t.Fatalf("seed %d, %v, step %d: %s\nops %d-%d of %d:\n%s", r.seed, r.mode, r.step,
		fmt.Sprintf(format, args...), from, len(r.log)-1, len(r.log), strings.Join(r.log[from:], "\n"))
}

func (r *modelRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%4d %s ", r.step, modelTime(r.clock.now()))+fmt.Sprintf(format, args...))
}

func (r *modelRun) run(steps int) {
	alice := Entity{Name: "Alice", Aliases: []string{"Al"}}
	if r.mode == modelLoaded {
		// The first run also checks a load of several transactions.
		if r.seed == 1 && !testing.Short() && !raceEnabled {
			r.checkLargeLoad()
		}
		d := &Dump{Entities: []Entity{alice}}
		for range 150 {
			d.Facts = append(d.Facts, r.dumpFact(d))
		}
		r.load(d)
		r.view(r.check)
	} else {
		r.update(func(tx *Tx) {
			if _, err := tx.CreateEntities([]Entity{alice}); err != nil {
				r.fail("create Alice: %v", err)
			}
		})
		r.ref.names["alice"], r.ref.names["al"] = "Alice", "Alice"
	}
	for batch := 0; r.step < steps; batch++ {
		switch r.mode {
		case modelShared:
			n := 1 + r.rng.IntN(6)
			if r.rng.IntN(8) == 0 {
				n = 30
			}
			r.update(func(tx *Tx) {
				for range n {
					r.apply(tx, r.rng.IntN(100))
					r.check(tx)
				}
			})
			if batch%4 != 0 {
				continue // checked inside; now and then after the commit too
			}
		case modelLoaded:
			if r.rng.IntN(100) < 5 && len(r.ref.facts) < modelMaxFacts {
				d := &Dump{}
				for range 1 + r.rng.IntN(8) {
					d.Facts = append(d.Facts, r.dumpFact(d))
				}
				if r.rng.IntN(8) == 0 {
					// One bad fact: Load must write nothing at all.
					f := &d.Facts[r.rng.IntN(len(d.Facts))]
					if r.rng.IntN(4) == 0 {
						f.CreatedAt = modelFar
					} else {
						r.spoil(f)
					}
				}
				r.load(d)
				break
			}
			fallthrough
		default:
			r.update(func(tx *Tx) { r.apply(tx, r.rng.IntN(100)) })
		}
		r.view(r.check)
	}
}

// checkLargeLoad loads a dump that takes several transactions into an
// empty graph under another root (Load then looks for duplicates only
// among the triples it wrote itself) and checks it against a reference of
// its own.
func (r *modelRun) checkLargeLoad() {
	r.t.Helper()
	big := *r
	big.root = []byte("\x01acme\x00bob\x00\x07")
	big.ref = newRefGraph()
	big.log = nil
	d := &Dump{Entities: []Entity{{Name: "Alice", Aliases: []string{"Al"}}}}
	for range 6000 {
		f := big.dumpFact(d)
		if big.rng.IntN(10) == 0 && len(d.Facts) > 0 {
			f = d.Facts[big.rng.IntN(len(d.Facts))] // a repeat, maybe in another chunk
		}
		d.Facts = append(d.Facts, f)
	}
	// The transactional path, in chunks; load_bulk_test.go checks the bulk
	// path, which an empty store would take, against it.
	r.s.noBulk = true
	chunks := big.load(d)
	r.s.noBulk = false
	if chunks < 2 {
		big.fail("the large dump took %d transactions: make it larger", chunks)
	}
	big.view(big.check)
	r.lastGen = big.lastGen
}

// update runs fn in one transaction and commits it: errors for bad input
// are expected to have written nothing, so they are committed too.
func (r *modelRun) update(fn func(*Tx)) {
	r.t.Helper()
	err := r.s.Update(context.Background(), r.db, r.root, func(tx *Tx) error { fn(tx); return nil })
	if err != nil {
		r.fail("update: %v", err)
	}
}

func (r *modelRun) view(fn func(*Tx)) {
	r.t.Helper()
	err := r.s.View(context.Background(), r.db, r.root, func(tx *Tx) error { fn(tx); return nil })
	if err != nil {
		r.fail("view: %v", err)
	}
}

func (r *modelRun) pick(options []string) string { return options[r.rng.IntN(len(options))] }

func (r *modelRun) entity() string { return r.pick(modelEntities[r.rng.IntN(len(modelEntities))]) }

func (r *modelRun) predicate() string {
	return r.pick(modelPredicates[r.rng.IntN(len(modelPredicates))])
}

func (r *modelRun) point() time.Time { return modelPoints[r.rng.IntN(len(modelPoints))] }

// interval returns a ValidFrom and ValidTo, often zero; with ordered
// set, in order (ValidTo after ValidFrom or, when that is zero, now).
func (r *modelRun) interval(ordered bool) (from, to time.Time) {
	if r.rng.IntN(10) >= 3 {
		from = r.point()
	}
	if r.rng.IntN(100) < 55 {
		return from, time.Time{}
	}
	start := from
	if start.IsZero() {
		start = r.clock.now()
	}
	var later []time.Time
	for _, p := range modelPoints {
		if p.After(start) {
			later = append(later, p)
		}
	}
	switch {
	case len(later) > 0 && (ordered || r.rng.IntN(100) < 85):
		return from, later[r.rng.IntN(len(later))]
	case ordered:
		return from, time.Time{}
	}
	return from, r.point()
}

// fact returns a fact for Relate, now and then one it must refuse.
func (r *modelRun) fact() Fact {
	f := r.goodFact(false)
	if r.rng.IntN(12) == 0 {
		r.spoil(&f)
	}
	return f
}

// goodFact returns a fact; with ordered set, one Relate stores.
func (r *modelRun) goodFact(ordered bool) Fact {
	f := Fact{Subject: r.entity(), Predicate: r.predicate(), Object: r.entity()}
	f.ValidFrom, f.ValidTo = r.interval(ordered)
	if r.rng.IntN(5) == 0 {
		f.Confidence = 0.5
	}
	if r.rng.IntN(6) == 0 {
		f.Source = "msg-1"
	}
	return f
}

// spoil makes f a fact Relate must refuse; its subject is often the new
// name modelGhost, so that a refusal that created an entity anyway shows.
func (r *modelRun) spoil(f *Fact) {
	if r.rng.IntN(2) == 0 {
		f.Subject = modelGhost
	}
	switch r.rng.IntN(8) {
	case 0:
		f.Subject = "  "
	case 1:
		f.Predicate = "own\x00er"
	case 2:
		f.Object = ""
	case 3:
		f.Object = strings.Repeat("x", MaxNameLength+1)
	case 4:
		f.Confidence = []float64{1.5, -0.25, math.NaN()}[r.rng.IntN(3)]
	case 5:
		f.ValidFrom = modelFar
	case 6:
		f.Source = "\xff"
	case 7:
		f.ValidFrom, f.ValidTo = time.Time{}, r.clock.now()
	}
}

// someID returns the id of a stored fact, of a deleted one, or no fact's.
func (r *modelRun) someID() string {
	n := r.rng.IntN(100)
	switch {
	case n < 80 && len(r.ref.facts) > 0:
		return r.ref.facts[r.rng.IntN(len(r.ref.facts))].ID
	case n < 90 && len(r.deleted) > 0:
		return r.pick(r.deleted)
	case n < 95:
		return "not-an-id"
	}
	return r.newULID(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) // well-formed, unused
}

// newULID makes a ULID no Store in the test generates: the Store's ids
// carry the 2026 clock.
func (r *modelRun) newULID(at time.Time) string {
	r.dumpIDs++
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(at) + uint64(r.dumpIDs)); err != nil {
		r.fail("ulid: %v", err)
	}
	var e [10]byte
	e[0], e[9] = byte(r.mode), byte(r.seed)
	e[8] = byte(r.rng.IntN(256))
	if err := u.SetEntropy(e[:]); err != nil {
		r.fail("ulid: %v", err)
	}
	return u.String()
}

// dumpFact returns a fact for a dump: sometimes with an id (new, repeated
// within d, taken, deleted or malformed), CreatedAt and ExpiredAt.
func (r *modelRun) dumpFact(d *Dump) Fact {
	f := r.goodFact(true)
	switch n := r.rng.IntN(100); {
	case n < 30:
		f.ID = r.newULID(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	case n < 40 && len(d.Facts) > 0:
		f.ID = d.Facts[r.rng.IntN(len(d.Facts))].ID
	case n < 55:
		f.ID = r.someID()
	}
	if !f.ValidFrom.IsZero() && r.rng.IntN(10) == 0 {
		f.ValidTo = f.ValidFrom // replaced at the instant it began
	}
	if r.rng.IntN(10) < 3 {
		f.CreatedAt = r.point()
	}
	if r.rng.IntN(10) < 3 {
		f.ExpiredAt = r.point()
	}
	return f
}

// modelMaxFacts is about as many facts as a run keeps: past it, half the
// Relate calls become Delete calls.
const modelMaxFacts = 60

// apply runs one random operation; n picks its kind.
func (r *modelRun) apply(tx *Tx, n int) {
	r.t.Helper()
	defer func() { r.step++ }()
	now := r.clock.now()
	if n < 60 && len(r.ref.facts) >= modelMaxFacts && r.rng.IntN(2) == 0 {
		n = 80 // delete instead: a bounded graph keeps each step cheap
	}
	switch {
	case n < 60:
		r.relate(tx, r.fact(), now)
	case n < 75:
		id := r.someID()
		var at time.Time
		switch k := r.rng.IntN(100); {
		case k < 62:
			at = r.point()
		case k < 70:
			at = modelFar
		}
		want, wantErr := r.ref.invalidate(id, at, now)
		got, err := tx.Invalidate(id, at)
		r.logf("invalidate %s at %s: %v", id, modelTime(at), errOr(err, repOf(got)))
		r.checkErr(err, wantErr)
		if err == nil && repOf(got) != repOf(want) {
			r.fail("invalidate returned\n %v\nwant\n %v", repOf(got), repOf(want))
		}
	case n < 85:
		id := r.someID()
		wantErr := r.ref.delete(id)
		err := tx.Delete(id)
		r.logf("delete %s: %v", id, err)
		r.checkErr(err, wantErr)
		if err == nil {
			r.deleted = append(r.deleted, id)
		}
	default:
		t := r.point()
		r.clock.set(t)
		r.logf("clock → %s", modelTime(t))
	}
}

func errOr(err error, v any) any {
	if err != nil {
		return err
	}
	return v
}

func (r *modelRun) checkErr(err, want error) {
	r.t.Helper()
	if (err == nil) != (want == nil) || (want != nil && !errors.Is(err, want)) {
		r.fail("error %v, want %v", err, want)
	}
}

func (r *modelRun) relate(tx *Tx, f Fact, now time.Time) {
	r.t.Helper()
	pl, wantErr := r.ref.planRelate(f, now, false)
	got, err := tx.Relate(f)
	in := fmt.Sprintf("relate %.40q -%.40q-> %.40q [%s, %s) conf %g src %q", f.Subject, f.Predicate, f.Object,
		modelTime(f.ValidFrom), modelTime(f.ValidTo), f.Confidence, f.Source)
	r.logf("%s: %v", in, errOr(err, repOf(got)))
	r.checkErr(err, wantErr)
	if err != nil {
		return
	}
	if len(pl.dups) > 0 {
		for _, d := range pl.dups {
			if repOf(d) == repOf(got) {
				return
			}
		}
		r.fail("relate returned\n %v\nwant one of the facts it repeats:\n%s", repOf(got), listReps(reps(pl.dups)))
	}
	if _, err := ulid.ParseStrict(got.ID); err != nil || got.ID <= r.lastGen || r.ref.find(got.ID) >= 0 {
		r.fail("relate returned id %q: not a new ULID after %q", got.ID, r.lastGen)
	}
	r.lastGen = got.ID
	want := r.ref.commit(pl, got.ID, now)
	if repOf(got) != repOf(want) {
		r.fail("relate returned\n %v\nwant\n %v", repOf(got), repOf(want))
	}
}

// load loads d into the Store and the reference, then learns the ids the
// Store assigned: they are the new ids, in the order of the facts. It
// returns how many transactions the load committed.
func (r *modelRun) load(d *Dump) int {
	r.t.Helper()
	now := r.clock.now()
	want, wantErr := r.ref.load(d, now)
	chunks := 0
	progress := func(done, total int) { chunks++ }
	got, err := r.s.Load(context.Background(), r.db, r.root, d, &LoadOptions{Progress: progress})
	r.logf("load %d facts in %d transactions: %+v %v", len(d.Facts), chunks, got, err)
	for i, f := range d.Facts {
		r.logf("  %d: %.40q %.40q %.40q [%s, %s) id %q created %s expired %s", i, f.Subject, f.Predicate, f.Object,
			modelTime(f.ValidFrom), modelTime(f.ValidTo), f.ID, modelTime(f.CreatedAt), modelTime(f.ExpiredAt))
	}
	r.step++
	r.loaded = true
	r.checkErr(err, wantErr)
	if got != want {
		r.fail("load stats %+v, want %+v", got, want)
	}
	if err != nil {
		return chunks
	}
	var fresh []string
	known := map[string]bool{}
	for _, f := range r.ref.facts {
		known[f.ID] = true
	}
	r.view(func(tx *Tx) {
		q := FactQuery{History: true, Limit: MaxPageSize}
		for {
			page := r.facts(tx, q)
			for _, f := range page {
				if !known[f.ID] {
					fresh = append(fresh, f.ID)
				}
			}
			if len(page) < q.Limit {
				break
			}
			q.After = page[len(page)-1].ID
		}
	})
	slices.Sort(fresh)
	for i := range r.ref.facts {
		if r.ref.facts[i].ID != "" {
			continue
		}
		if len(fresh) == 0 || fresh[0] <= r.lastGen {
			r.fail("load: the Store assigned ids %q after %q, want one for each new fact without a kept id", fresh, r.lastGen)
		}
		r.ref.facts[i].ID, r.lastGen, fresh = fresh[0], fresh[0], fresh[1:]
	}
	if len(fresh) > 0 {
		r.fail("load: facts %q are not in the reference", fresh)
	}
	return chunks
}

func (r *modelRun) facts(tx *Tx, q FactQuery) []Fact {
	r.t.Helper()
	fs, err := tx.Facts(q)
	if err != nil {
		r.fail("facts %+v: %v", q, err)
	}
	return fs
}

// queryName returns a spelling of an entity or, now and then, no entity's.
func (r *modelRun) queryName() string {
	if r.rng.IntN(10) == 0 {
		return modelNobody
	}
	return r.entity()
}

// check compares the answers of tx with the reference's.
func (r *modelRun) check(tx *Tx) {
	r.t.Helper()
	now := r.clock.now()
	// Reading every fact costs the length of the store's history (Badger
	// keeps every version in its memtable), so every third step; a wrong
	// write stays until then.
	if r.step%3 == 0 || r.loaded {
		r.loaded = false
		all := FactQuery{History: true, Limit: MaxPageSize}
		got := r.facts(tx, all)
		r.compare("every fact", r.ref.query(all, now), got)
		r.checkSingleValued(got)
		r.checkEntities(tx)
		if msg := checkAnnotations(tx, got); msg != "" {
			r.fail("%s", msg)
		}
	}

	// Every combination of names given, three per step in turn.
	for i := range 3 {
		mask := (r.step*3 + i) % 8
		q := FactQuery{Limit: MaxPageSize}
		if mask&1 != 0 {
			q.Subject = r.queryName()
		}
		if mask&2 != 0 {
			q.Predicate = r.predicate()
		}
		if mask&4 != 0 {
			q.Object = r.queryName()
		}
		switch r.rng.IntN(3) {
		case 1:
			q.AsOf = r.point()
		case 2:
			q.History = true
		}
		r.compare(fmt.Sprintf("Facts(%+v)", q), r.ref.query(q, now), r.facts(tx, q))
		if r.step%5 == 0 && i == 0 {
			r.checkPaging(tx, q, now)
		}
	}

	subject, predicate := r.queryName(), r.predicate()
	h, err := tx.History(subject, predicate)
	if err != nil {
		r.fail("history: %v", err)
	}
	if !slices.IsSortedFunc(h, func(a, b Fact) int {
		return cmp.Or(a.ValidFrom.Compare(b.ValidFrom), a.CreatedAt.Compare(b.CreatedAt))
	}) {
		r.fail("History(%q, %q) is not in order of ValidFrom, then CreatedAt:\n%s", subject, predicate, listReps(reps(h)))
	}
	slices.SortStableFunc(h, byHistory) // ties in any order
	r.compare(fmt.Sprintf("History(%q, %q)", subject, predicate), r.ref.history(subject, predicate), h)
}

// checkEntities checks which entities exist, and their display names.
func (r *modelRun) checkEntities(tx *Tx) {
	r.t.Helper()
	for _, names := range slices.Concat(modelEntities, [][]string{{modelNobody}, {modelGhost}}) {
		e, err := tx.Entity(names[0])
		d, ok := r.ref.names[refFold(names[0])]
		switch {
		case ok && (err != nil || e.Name != d):
			r.fail("entity %q: %q, %v; want %q", names[0], e.Name, err, d)
		case !ok && !errors.Is(err, ErrEntityNotFound):
			r.fail("entity %q: %+v, %v; want ErrEntityNotFound", names[0], e, err)
		}
	}
}

// checkPaging reads q a few facts at a time, each page continuing After
// the last fact of the one before.
func (r *modelRun) checkPaging(tx *Tx, q FactQuery, now time.Time) {
	r.t.Helper()
	want := r.ref.query(q, now)
	q.Limit = max(1, len(want)/3) + r.rng.IntN(2) // about three pages
	var got []Fact
	for range len(want) + 2 {
		page := r.facts(tx, q)
		if len(page) > q.Limit {
			r.fail("paged Facts(%+v) returned %d facts", q, len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		q.After = page[len(page)-1].ID
	}
	q.After = ""
	r.compare(fmt.Sprintf("paged Facts(%+v)", q), want, got)
}

func (r *modelRun) compare(what string, want, got []Fact) {
	r.t.Helper()
	w, g := reps(want), reps(got)
	if !slices.Equal(w, g) {
		r.fail("%s differs from the reference:\n%s", what, diffReps(w, g))
	}
}

// checkSingleValued checks that no two facts of a single-valued (subject,
// predicate) pair hold at one instant.
func (r *modelRun) checkSingleValued(all []Fact) {
	r.t.Helper()
	pairs := map[[2]string][]Fact{}
	for _, f := range all {
		if r.s.SingleValued(f.Predicate) {
			k := [2]string{Fold(f.Subject), Fold(f.Predicate)}
			pairs[k] = append(pairs[k], f)
		}
	}
	for k, fs := range pairs {
		for _, at := range modelPoints {
			var valid []Fact
			for _, f := range fs {
				if f.ValidAt(at) {
					valid = append(valid, f)
				}
			}
			if len(valid) > 1 {
				r.fail("single-valued %q has %d facts valid at %s:\n%s", k, len(valid), modelTime(at), listReps(reps(valid)))
			}
		}
	}
}

// TestLoadAgainSkipsStoredFacts checks what Store.Load promises after a
// failure midway: "loading the same dump again completes it, since facts
// already stored are skipped". Dana's fact is stored bounded by Eve's,
// which begins later, so its stored ValidTo is not the dump's.
func TestLoadAgainSkipsStoredFacts(t *testing.T) {
	s, db, _ := newTestGraph(t, &Options{SingleValued: []string{"owner"}})
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	may := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	d := &Dump{Facts: []Fact{
		{Subject: "Alice", Predicate: "owner", Object: "Eve", ValidFrom: may},
		{Subject: "Alice", Predicate: "owner", Object: "Dana", ValidFrom: march},
	}}
	stored := func() []Fact {
		var fs []Fact
		view(t, s, db, func(tx *Tx) error {
			var err error
			fs, err = tx.History("Alice", "owner")
			return err
		})
		return fs
	}
	if st, err := s.Load(t.Context(), db, testRoot, d, nil); err != nil || st.Facts != 2 {
		t.Fatalf("first load: %+v, %v", st, err)
	}
	before := stored()
	st, err := s.Load(t.Context(), db, testRoot, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := stored()
	if want := (LoadStats{Duplicates: 2}); st != want || !slices.Equal(reps(before), reps(after)) {
		t.Errorf("loading the dump again: %+v, want %+v\nHistory(Alice, owner) before:\n%safter:\n%s",
			st, want, listReps(reps(before)), listReps(reps(after)))
	}
}
