package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// itemRef names one item of an Extraction: its list and index.
type itemRef struct {
	list byte // 'm'emories, 'e'ntities, 'f'acts, 'i'nvalidate, 'u'pdates, 'd'eletes
	i    int
}

func (r itemRef) String() string {
	names := map[byte]string{'m': "memory", 'e': "entity", 'f': "fact", 'i': "invalidation", 'u': "update", 'd': "deletion"}
	return fmt.Sprintf("%s %d", names[r.list], r.i)
}

// itemError is an extracted item the store refused inside the
// transaction; the transaction is retried without it.
type itemError struct {
	job int
	ref itemRef
	err error
}

func (e *itemError) Error() string { return fmt.Sprintf("extracted %v: %v", e.ref, e.err) }
func (e *itemError) Unwrap() error { return e.err }

// isItemError reports whether err is a refusal of one item (bad input)
// rather than a failure of the store.
func isItemError(err error) bool {
	for _, e := range []error{graph.ErrInvalidName, graph.ErrInvalidFact, graph.ErrInvalidEntity, graph.ErrAliasConflict,
		graph.ErrEntityNotFound, graph.ErrFactNotFound, ErrInvalidMemory, engine.ErrNotFound, ErrInvalidTime} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// checkExtraction drops the items of o.x that cannot be written, with a
// log line each, and fills in what the store owns: sources, times.
func (s *Store) checkExtraction(j *job, o *outcome) {
	c := &extractionCheck{s: s, j: j, o: o, msg: &o.in.Message, now: time.Now()}
	if capItems(o.x) {
		s.warn("memory: extraction cut to its first items", "message", c.msg.ID, "limit", maxExtractionItems)
	}
	c.memories()
	c.entities()
	c.facts()
	c.invalidations()
	c.updates()
	c.deletes()
}

// extractionCheck is the state of one checkExtraction.
type extractionCheck struct {
	s   *Store
	j   *job
	o   *outcome
	msg *Message
	now time.Time
}

// drop marks the item ref not to be written, and logs why.
func (c *extractionCheck) drop(ref itemRef, why string) {
	if c.o.skip == nil {
		c.o.skip = map[itemRef]bool{}
	}
	c.o.skip[ref] = true
	c.s.warn("memory: extracted item not written", "tenant", c.j.scope.Tenant, "user", c.j.scope.User,
		"message", c.msg.ID, "item", ref.String(), "err", why)
}

func (c *extractionCheck) memories() {
	for i := range c.o.x.Memories {
		m := &c.o.x.Memories[i]
		m.ID, m.Agent, m.Supersedes, m.SupersededBy, m.CreatedAt = "", "", "", "", time.Time{}
		m.Source = []string{c.msg.ID}
		if err := m.normalize("", c.now); err != nil {
			c.drop(itemRef{'m', i}, err.Error())
		}
	}
}

func (c *extractionCheck) entities() {
	for i := range c.o.x.Entities {
		e := &c.o.x.Entities[i]
		if !validExtractedEntity(e) {
			c.drop(itemRef{'e', i}, "bad name, type, alias or observation")
		}
		e.CreatedAt = time.Time{}
	}
}

// validExtractedEntity reports whether e's name, type, aliases and
// observations can be stored.
func validExtractedEntity(e *graph.Entity) bool {
	ok := graph.ValidName(e.Name) && len(e.Type) <= graph.MaxNameLength && utf8.ValidString(e.Type) &&
		len(e.Aliases) <= graph.MaxAliases && len(e.Observations) <= graph.MaxObservations
	for _, a := range e.Aliases {
		ok = ok && graph.ValidName(a)
	}
	for _, ob := range e.Observations {
		ok = ok && ob != "" && len(ob) <= graph.MaxObservationLength && utf8.ValidString(ob)
	}
	return ok
}

func (c *extractionCheck) facts() {
	for i := range c.o.x.Facts {
		f := &c.o.x.Facts[i]
		f.ID, f.CreatedAt, f.ExpiredAt = "", time.Time{}, time.Time{}
		f.Source = c.msg.ID
		if f.ValidFrom.IsZero() {
			f.ValidFrom = c.msg.Time
		}
		if why := extractedFactProblem(f); why != "" {
			c.drop(itemRef{'f', i}, why)
		}
	}
}

// extractedFactProblem says what makes f impossible to store, or "".
func extractedFactProblem(f *Fact) string {
	switch {
	case !graph.ValidName(f.Subject) || !graph.ValidName(f.Predicate) || !graph.ValidName(f.Object):
		return "empty or bad subject, predicate or object"
	case f.Confidence < 0 || f.Confidence > 1 || f.Confidence != f.Confidence:
		return "confidence outside [0, 1]"
	case !f.ValidTo.IsZero() && !f.ValidTo.After(f.ValidFrom):
		return "ValidTo not after ValidFrom"
	case engine.ValidateTime(f.ValidFrom) != nil || engine.ValidateTime(f.ValidTo) != nil:
		return "time outside the range the store keeps"
	}
	return ""
}

func (c *extractionCheck) invalidations() {
	for i := range c.o.x.Invalidate {
		f := &c.o.x.Invalidate[i]
		if f.ID == "" && (!graph.ValidName(f.Subject) || !graph.ValidName(f.Predicate) || (f.Object != "" && !graph.ValidName(f.Object))) {
			c.drop(itemRef{'i', i}, "neither an id nor a subject and predicate")
		}
	}
}

func (c *extractionCheck) updates() {
	for i := range c.o.x.Updates {
		m := &c.o.x.Updates[i]
		if _, err := ulid.ParseStrict(m.ID); err != nil {
			c.drop(itemRef{'u', i}, "not a memory id")
			continue
		}
		check := *m
		check.Source = []string{c.msg.ID}
		if check.Kind == "" {
			check.Kind = KindFact
		}
		if err := check.normalize("", c.now); err != nil {
			c.drop(itemRef{'u', i}, err.Error())
		}
	}
}

func (c *extractionCheck) deletes() {
	for i, id := range c.o.x.Deletes {
		if _, err := ulid.ParseStrict(id); err != nil {
			c.drop(itemRef{'d', i}, "not a memory id")
		}
	}
}

// maxExtractionItems bounds each list of one message's extraction; what
// follows is dropped with a log line.
const maxExtractionItems = 64

// capItems cuts every list of x to maxExtractionItems and reports whether
// it cut any.
func capItems(x *Extraction) bool {
	cut := false
	trim := func(n int) int {
		if n > maxExtractionItems {
			cut = true
			return maxExtractionItems
		}
		return n
	}
	x.Memories = x.Memories[:trim(len(x.Memories))]
	x.Entities = x.Entities[:trim(len(x.Entities))]
	x.Facts = x.Facts[:trim(len(x.Facts))]
	x.Invalidate = x.Invalidate[:trim(len(x.Invalidate))]
	x.Updates = x.Updates[:trim(len(x.Updates))]
	x.Deletes = x.Deletes[:trim(len(x.Deletes))]
	return cut
}

// prepareExtraction embeds the memories and updates of o outside the
// transaction.
func (s *Store) prepareExtraction(ctx context.Context, j *job, o *outcome) error {
	user := Scope{Tenant: j.scope.Tenant, User: j.scope.User}
	o.prepared = make([]*preparedMemory, len(o.x.Memories)+len(o.x.Updates))
	for i := range o.x.Memories {
		if o.skip[itemRef{'m', i}] {
			continue
		}
		p, err := s.prepareMemory(ctx, user, o.x.Memories[i])
		if err != nil {
			return err
		}
		o.prepared[i] = p
	}
	for i := range o.x.Updates {
		if o.skip[itemRef{'u', i}] {
			continue
		}
		vecs, err := s.embed(ctx, []string{o.x.Updates[i].Text})
		if err != nil {
			return err
		}
		o.prepared[len(o.x.Memories)+i] = &preparedMemory{m: o.x.Updates[i], vec: vecs[0]}
	}
	return nil
}

// ledger is what extraction wrote from one message, kept under the
// message's session (engine.NSExtracted) so that forgetting the session
// takes it out of the user's memories and graph.
type ledger struct {
	Memories     []ledgerMemory         `json:"m,omitempty"`
	Facts        []string               `json:"f,omitempty"`
	Entities     []string               `json:"e,omitempty"` // created
	Observations []graph.ObservationSet `json:"o,omitempty"` // added
	Aliases      []graph.ObservationSet `json:"a,omitempty"` // added, as entity and aliases
}

type ledgerMemory struct {
	ID      string `json:"i"`
	Created bool   `json:"c,omitempty"` // else merged into a stored memory
	// Replaces is the memory an update made ID supersede: forgetting
	// the update brings it back.
	Replaces string `json:"r,omitempty"`
}

func (l *ledger) empty() bool {
	return len(l.Memories)+len(l.Facts)+len(l.Entities)+len(l.Observations)+len(l.Aliases) == 0
}

// applier writes extractions in one transaction.
type applier struct {
	s      *Store
	tx     *engine.Tx
	graphs map[string]*graph.Tx // one graph Tx per root, as package graph asks
	// unstored are the texts of memories embedded but merged into
	// another, whose cached embeddings go.
	unstored []string
}

func newApplier(s *Store, tx *engine.Tx) *applier {
	return &applier{s: s, tx: tx, graphs: map[string]*graph.Tx{}}
}

func (a *applier) graph(user Scope) (*graph.Tx, error) {
	root, err := graphRoot(user)
	if err != nil {
		return nil, err
	}
	g := a.graphs[string(root)]
	if g == nil {
		g = a.s.graph.Tx(a.tx.KV(), root)
		a.graphs[string(root)] = g
	}
	return g, nil
}

// roots returns the graphs written, for the name cache.
func (a *applier) roots() [][]byte {
	out := make([][]byte, 0, len(a.graphs))
	for r := range a.graphs {
		out = append(out, []byte(r))
	}
	return out
}

// apply writes one job's extraction and its ledger. An item the store
// refuses returns an *itemError.
func (a *applier) apply(j *job, o *outcome) error {
	r := &applyRun{a: a, j: j, o: o, x: o.x, msg: &o.in.Message, now: time.Now()}
	r.user = Scope{Tenant: j.scope.Tenant, User: j.scope.User}
	var err error
	if r.prefix, err = r.user.PartitionPrefix(); err != nil {
		return err
	}
	// In this order: the graph after the memories, and invalidations
	// after the facts they may close.
	for _, step := range []func() error{r.memories, r.updates, r.deletes, r.openGraph, r.entities, r.facts, r.invalidations} {
		if err := step(); err != nil {
			return err
		}
	}
	if r.led.empty() {
		return nil
	}
	b, _ := json.Marshal(&r.led) // strings and bools always marshal
	// No TTL: the ledger outlives expired messages, so that forgetting
	// their session still finds what was formed from them.
	return a.tx.Set(sessionPrefix(j.prefix).extracted(j.id), append([]byte{recordVersion}, b...))
}

// applyRun is the state of one apply: the job, its user, the graph, and
// the ledger being written.
type applyRun struct {
	a      *applier
	j      *job
	o      *outcome
	x      *Extraction
	msg    *Message
	now    time.Time
	user   Scope
	prefix []byte
	g      *graph.Tx
	led    ledger
}

// fail returns err as an *itemError for ref when it refuses the item
// rather than fails the store.
func (r *applyRun) fail(ref itemRef, err error) error {
	if isItemError(err) {
		return &itemError{ref: ref, err: err}
	}
	return err
}

func (r *applyRun) memories() error {
	for i := range r.x.Memories {
		p := r.o.prepared[i]
		if r.o.skip[itemRef{'m', i}] || p == nil {
			continue
		}
		res, err := r.a.s.rememberTx(r.a.tx, r.user, r.prefix, p, r.now)
		if err != nil {
			return r.fail(itemRef{'m', i}, err)
		}
		if res.dropped {
			r.a.unstored = append(r.a.unstored, p.m.Text)
		}
		r.led.Memories = append(r.led.Memories, ledgerMemory{ID: res.id, Created: res.created})
	}
	return nil
}

func (r *applyRun) updates() error {
	for i := range r.x.Updates {
		p := r.o.prepared[len(r.x.Memories)+i]
		if r.o.skip[itemRef{'u', i}] || p == nil {
			continue
		}
		m := p.m
		m.Source = []string{r.msg.ID}
		old, _ := ulid.ParseStrict(m.ID)
		m.ID = ""
		id, err := r.a.s.updateMemoryTx(r.a.tx, r.user, r.prefix, old, m, p.vec, r.now)
		if errors.Is(err, engine.ErrNotFound) {
			// Gone (or never there): nothing was written for it.
			r.a.s.warn("memory: extracted update of a missing memory skipped", "message", r.msg.ID, "memory", old.String())
			continue
		}
		if err != nil {
			return r.fail(itemRef{'u', i}, err)
		}
		r.led.Memories = append(r.led.Memories, ledgerMemory{ID: id, Created: true, Replaces: old.String()})
	}
	return nil
}

func (r *applyRun) deletes() error {
	for i, id := range r.x.Deletes {
		if r.o.skip[itemRef{'d', i}] {
			continue
		}
		if _, err := deleteMemoryTx(r.a.tx, r.user, r.prefix, id); errors.Is(err, engine.ErrNotFound) {
			r.a.s.warn("memory: extracted deletion of a missing memory skipped", "message", r.msg.ID, "memory", id)
		} else if err != nil {
			return r.fail(itemRef{'d', i}, err)
		}
	}
	return nil
}

func (r *applyRun) openGraph() error {
	g, err := r.a.graph(r.user)
	r.g = g
	return err
}

// exists reports whether the graph holds an entity of that name.
func (r *applyRun) exists(name string) (bool, error) {
	_, err := r.g.Entity(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, graph.ErrEntityNotFound):
		return false, nil
	}
	return false, err
}

func (r *applyRun) entities() error {
	for i := range r.x.Entities {
		if r.o.skip[itemRef{'e', i}] {
			continue
		}
		if err := r.entity(i, r.x.Entities[i]); err != nil {
			return err
		}
	}
	return nil
}

// entity writes the i-th extracted entity and records in the ledger what
// it created or added.
func (r *applyRun) entity(i int, e graph.Entity) error {
	before, err := r.g.Entity(e.Name)
	found := err == nil
	if err != nil && !errors.Is(err, graph.ErrEntityNotFound) {
		return err
	}
	if _, err := r.g.CreateEntities([]graph.Entity{e}); err != nil {
		return r.fail(itemRef{'e', i}, err)
	}
	after, err := r.g.Entity(e.Name)
	if err != nil {
		return err
	}
	if !found {
		r.led.Entities = append(r.led.Entities, after.Name)
		before = graph.Entity{} // so its observations and aliases are recorded too
	}
	if added := without(after.Observations, before.Observations); len(added) > 0 {
		r.led.Observations = append(r.led.Observations, graph.ObservationSet{EntityName: after.Name, Observations: added})
	}
	if added := without(after.Aliases, before.Aliases); len(added) > 0 {
		r.led.Aliases = append(r.led.Aliases, graph.ObservationSet{EntityName: after.Name, Observations: added})
	}
	return nil
}

func (r *applyRun) facts() error {
	single := map[string]bool{}
	for _, p := range r.x.SingleValued {
		single[graph.Fold(p)] = true
	}
	for i := range r.x.Facts {
		if r.o.skip[itemRef{'f', i}] {
			continue
		}
		if err := r.fact(i, r.x.Facts[i], single[graph.Fold(r.x.Facts[i].Predicate)]); err != nil {
			return err
		}
	}
	return nil
}

// fact writes the i-th extracted fact (replacing the current value when
// its predicate is single-valued) and records it and the entities it
// created in the ledger.
func (r *applyRun) fact(i int, f Fact, single bool) error {
	var created []string
	for _, name := range []string{f.Subject, f.Object} {
		ok, err := r.exists(name)
		if err != nil {
			return err
		}
		if !ok && !slices.Contains(created, name) {
			created = append(created, name)
		}
	}
	var stored Fact
	var err error
	if single {
		stored, err = r.g.Replace(f)
	} else {
		stored, err = r.g.Relate(f)
	}
	if err != nil {
		return r.fail(itemRef{'f', i}, err)
	}
	for _, name := range created {
		if e, err := r.g.Entity(name); err == nil {
			r.led.Entities = append(r.led.Entities, e.Name)
		}
	}
	if stored.Source == r.msg.ID {
		r.led.Facts = append(r.led.Facts, stored.ID)
	}
	return nil
}

func (r *applyRun) invalidations() error {
	for i, f := range r.x.Invalidate {
		if r.o.skip[itemRef{'i', i}] {
			continue
		}
		if err := r.invalidate(i, f); err != nil {
			return err
		}
	}
	return nil
}

// invalidate closes the fact f names by id, or every current fact that
// matches its subject, predicate and object.
func (r *applyRun) invalidate(i int, f Fact) error {
	ids := []string{f.ID}
	if f.ID == "" {
		facts, err := r.g.Facts(graph.FactQuery{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, AsOf: r.msg.Time})
		if err != nil {
			return r.fail(itemRef{'i', i}, err)
		}
		ids = ids[:0]
		for _, cur := range facts {
			ids = append(ids, cur.ID)
		}
	}
	for _, id := range ids {
		if _, err := r.g.Invalidate(id, r.msg.Time); errors.Is(err, graph.ErrFactNotFound) {
			r.a.s.warn("memory: extracted invalidation of a missing fact skipped", "message", r.msg.ID, "fact", id)
		} else if err != nil {
			return r.fail(itemRef{'i', i}, err)
		}
	}
	return nil
}

// without returns the items of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// forgetExtracted takes out of the user's memories and graph what
// extraction wrote from the messages of the session with prefix, as its
// ledger records: memories made from them alone are deleted (a memory
// other messages also gave keeps them as its sources), facts made from
// them, the observations and aliases they added, and the entities they
// created that nothing else refers to any more. Its queue entries go
// first, so no extraction of the session commits after the ledger is read.
func (s *Store) forgetExtracted(ctx context.Context, scope Scope, prefix []byte) error {
	for _, ns := range queues {
		if _, err := s.db.ErasePrefix(ctx, queuePrefix(ns, prefix), nil); err != nil {
			return err
		}
	}
	all, ids, err := s.readLedgers(ctx, prefix)
	if err != nil || all.empty() {
		return err
	}
	f := &extractedForget{s: s, all: all, ids: ids, user: Scope{Tenant: scope.Tenant, User: scope.User}}
	if f.userPrefix, err = f.user.PartitionPrefix(); err != nil {
		return err
	}
	// The versions that updates replaced come back: read and embed them
	// outside the transaction.
	if err := f.readReplaced(ctx); err != nil {
		return err
	}
	err = s.db.Update(ctx, func(tx *engine.Tx) error {
		f.texts = f.texts[:0]
		if err := f.memoriesTx(tx); err != nil {
			return err
		}
		return f.graphTx(tx)
	})
	if err != nil {
		return err
	}
	if root, err := graphRoot(f.user); err == nil {
		s.nameCache.invalidate(root)
	}
	return s.forgetTexts(ctx, f.texts)
}

// readLedgers returns the ledgers of the session with prefix merged into
// one, and the ids of the messages they belong to.
func (s *Store) readLedgers(ctx context.Context, prefix []byte) (ledger, map[string]bool, error) {
	var all ledger
	ids := map[string]bool{}
	ledPrefix := sessionPrefix(prefix).extractions()
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: ledPrefix})
		defer it.Close()
		var val []byte
		for it.Seek(ledPrefix); it.Valid(); it.Next() {
			var err error
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			id := keyID(ledPrefix, it.Key())
			ids[id.String()] = true
			var l ledger
			if len(val) == 0 || val[0] != recordVersion || json.Unmarshal(val[1:], &l) != nil {
				s.warn("memory: forget skips an unreadable extraction record", "message", id.String())
				continue
			}
			all.add(&l)
		}
		return nil
	})
	return all, ids, err
}

// add appends what o records to l.
func (l *ledger) add(o *ledger) {
	l.Memories = append(l.Memories, o.Memories...)
	l.Facts = append(l.Facts, o.Facts...)
	l.Entities = append(l.Entities, o.Entities...)
	l.Observations = append(l.Observations, o.Observations...)
	l.Aliases = append(l.Aliases, o.Aliases...)
}

// extractedForget is the state of one forgetExtracted.
type extractedForget struct {
	s          *Store
	all        ledger
	ids        map[string]bool // the session's messages
	user       Scope
	userPrefix []byte
	// replaced are the archived versions that updates made from the
	// session replaced, by the id of the update, embedded.
	replaced map[string]*preparedMemory
	texts    []string // of the memories deleted, whose embeddings go
}

// readReplaced reads and embeds the versions that updates made from the
// session replaced.
func (f *extractedForget) readReplaced(ctx context.Context) error {
	f.replaced = map[string]*preparedMemory{}
	err := f.s.db.View(ctx, func(tx *engine.Tx) error {
		for _, lm := range f.all.Memories {
			if err := f.readReplacedTx(tx, lm); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range f.replaced {
		vecs, err := f.s.embed(ctx, []string{p.m.Text})
		if err != nil {
			return err
		}
		p.vec = vecs[0]
	}
	return nil
}

func (f *extractedForget) readReplacedTx(tx *engine.Tx, lm ledgerMemory) error {
	old, err := ulid.ParseStrict(lm.Replaces)
	if lm.Replaces == "" || err != nil {
		return nil
	}
	b, err := tx.Get(partitionPrefix(f.userPrefix).archive(old))
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var m Memory
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: archived memory %s: %v", ErrCorrupt, lm.Replaces, err)
	}
	f.replaced[lm.ID] = &preparedMemory{m: m}
	return nil
}

// memoriesTx takes the session's messages out of the sources of the
// memories made from them, deleting those left with none and bringing
// back what updates replaced.
func (f *extractedForget) memoriesTx(tx *engine.Tx) error {
	for _, lm := range f.all.Memories {
		m, err := getMemory(tx, f.user, f.userPrefix, lm.ID)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			continue
		case err != nil:
			return err
		}
		if m.SupersededBy != "" {
			continue // only the history holds it; deleting the current version is the user's call
		}
		rest := slices.DeleteFunc(slices.Clone(m.Source), func(id string) bool { return f.ids[id] })
		if len(rest) == len(m.Source) {
			continue
		}
		if err := f.memoryTx(tx, lm, m, rest); err != nil {
			return err
		}
	}
	return nil
}

// memoryTx forgets the session in m, whose sources without the session's
// messages are rest.
func (f *extractedForget) memoryTx(tx *engine.Tx, lm ledgerMemory, m Memory, rest []string) error {
	if p := f.replaced[lm.ID]; p != nil && len(rest) == 0 {
		// An update made from the session: drop the version it wrote and
		// bring back the one it replaced.
		return f.restoreTx(tx, m, p)
	}
	if lm.Created && len(rest) == 0 {
		t, err := deleteMemoryTx(tx, f.user, f.userPrefix, m.ID)
		f.texts = append(f.texts, t...)
		return err
	}
	rec, err := tx.GetRecord(f.user, spaceMemories, m.ID, nil)
	if err != nil {
		return err
	}
	nm := m
	nm.Source = rest
	return f.s.putMemory(tx, f.user, f.userPrefix, &m, &nm, rec.Vector)
}

// restoreTx deletes m, written by an update, and puts back the version p
// it replaced.
func (f *extractedForget) restoreTx(tx *engine.Tx, m Memory, p *preparedMemory) error {
	if err := tx.DeleteRecord(f.user, spaceMemories, m.ID); err != nil {
		return err
	}
	if err := deleteHash(tx, f.userPrefix, &m); err != nil {
		return err
	}
	f.texts = append(f.texts, m.Text)
	back := p.m
	back.SupersededBy = ""
	old, _ := ulid.ParseStrict(back.ID)
	if err := tx.Delete(partitionPrefix(f.userPrefix).archive(old)); err != nil {
		return err
	}
	return f.s.putMemory(tx, f.user, f.userPrefix, nil, &back, p.vec)
}

// graphTx deletes the facts, observations and aliases the session's
// extractions added, and the entities they created that nothing uses.
func (f *extractedForget) graphTx(tx *engine.Tx) error {
	g, err := newApplier(f.s, tx).graph(f.user)
	if err != nil {
		return err
	}
	for _, id := range f.all.Facts {
		if err := g.Delete(id); err != nil && !errors.Is(err, graph.ErrFactNotFound) {
			return err
		}
	}
	if err := g.DeleteObservations(f.all.Observations); err != nil {
		return err
	}
	for _, set := range f.all.Aliases {
		if _, err := g.DeleteAliases(set.EntityName, set.Observations...); err != nil && !errors.Is(err, graph.ErrEntityNotFound) {
			return err
		}
	}
	for _, name := range f.all.Entities {
		if err := forgetEntityTx(g, name); err != nil {
			return err
		}
	}
	return nil
}

// forgetEntityTx deletes the entity name unless it has observations or a
// fact, current or past, refers to it.
func forgetEntityTx(g *graph.Tx, name string) error {
	e, err := g.Entity(name)
	switch {
	case errors.Is(err, graph.ErrEntityNotFound):
		return nil
	case err != nil:
		return err
	}
	if len(e.Observations) > 0 {
		return nil
	}
	for _, q := range []graph.FactQuery{{Subject: e.Name, History: true, Limit: 1}, {Object: e.Name, History: true, Limit: 1}} {
		fs, err := g.Facts(q)
		if err != nil || len(fs) > 0 {
			return err
		}
	}
	return g.DeleteEntities([]string{e.Name})
}

// known is the [Known] of one job: the user's memories and graph.
type known struct {
	s    *Store
	user Scope
}

// Entities links text to the user's entities (names and aliases).
func (k *known) Entities(text string) []string {
	ns, err := k.s.names(context.Background(), k.user)
	if err != nil {
		return nil
	}
	return ns.link(text)
}

// Facts returns current facts of the entities.
func (k *known) Facts(ctx context.Context, entities []string, limit int) ([]Fact, error) {
	if limit <= 0 || len(entities) == 0 {
		return nil, nil
	}
	var out []Fact
	seen := map[string]bool{}
	err := k.s.ViewGraph(ctx, k.user, func(g *graph.Tx) error {
		for _, e := range entities {
			fs, err := g.Neighbors(graph.NeighborQuery{Entity: e, Limit: min(limit, graph.MaxPageSize)})
			if errors.Is(err, graph.ErrEntityNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			for _, f := range fs {
				if !seen[f.ID] && len(out) < limit {
					seen[f.ID] = true
					out = append(out, f)
				}
			}
		}
		return nil
	})
	return out, err
}

// Memories returns the user's memories that best match text by BM25.
func (k *known) Memories(ctx context.Context, text string, limit int) ([]Memory, error) {
	if limit <= 0 || strings.TrimSpace(text) == "" {
		return nil, nil
	}
	hits, err := k.s.db.SearchText(ctx, k.user, text, limit, &engine.SearchOptions{Space: spaceMemories})
	if err != nil {
		return nil, err
	}
	out := make([]Memory, 0, len(hits))
	for _, h := range hits {
		if m, err := decodeMemory(h.Record); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}
