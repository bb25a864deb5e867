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
	x, msg := o.x, &o.in.Message
	now := time.Now()
	if capItems(x) {
		s.warn("memory: extraction cut to its first items", "message", msg.ID, "limit", maxExtractionItems)
	}
	drop := func(ref itemRef, why string) {
		if o.skip == nil {
			o.skip = map[itemRef]bool{}
		}
		o.skip[ref] = true
		s.warn("memory: extracted item not written", "tenant", j.scope.Tenant, "user", j.scope.User,
			"message", msg.ID, "item", ref.String(), "err", why)
	}
	for i := range x.Memories {
		m := &x.Memories[i]
		m.ID, m.Agent, m.Supersedes, m.SupersededBy, m.CreatedAt = "", "", "", "", time.Time{}
		m.Source = []string{msg.ID}
		if err := m.normalize("", now); err != nil {
			drop(itemRef{'m', i}, err.Error())
		}
	}
	for i := range x.Entities {
		e := &x.Entities[i]
		ok := graph.ValidName(e.Name) && len(e.Type) <= graph.MaxNameLength && utf8.ValidString(e.Type) &&
			len(e.Aliases) <= graph.MaxAliases && len(e.Observations) <= graph.MaxObservations
		for _, a := range e.Aliases {
			ok = ok && graph.ValidName(a)
		}
		for _, ob := range e.Observations {
			ok = ok && ob != "" && len(ob) <= graph.MaxObservationLength && utf8.ValidString(ob)
		}
		if !ok {
			drop(itemRef{'e', i}, "bad name, type, alias or observation")
		}
		e.CreatedAt = time.Time{}
	}
	for i := range x.Facts {
		f := &x.Facts[i]
		f.ID, f.CreatedAt, f.ExpiredAt = "", time.Time{}, time.Time{}
		f.Source = msg.ID
		if f.ValidFrom.IsZero() {
			f.ValidFrom = msg.Time
		}
		switch {
		case !graph.ValidName(f.Subject) || !graph.ValidName(f.Predicate) || !graph.ValidName(f.Object):
			drop(itemRef{'f', i}, "empty or bad subject, predicate or object")
		case f.Confidence < 0 || f.Confidence > 1 || f.Confidence != f.Confidence:
			drop(itemRef{'f', i}, "confidence outside [0, 1]")
		case !f.ValidTo.IsZero() && !f.ValidTo.After(f.ValidFrom):
			drop(itemRef{'f', i}, "ValidTo not after ValidFrom")
		case engine.ValidateTime(f.ValidFrom) != nil || engine.ValidateTime(f.ValidTo) != nil:
			drop(itemRef{'f', i}, "time outside the range the store keeps")
		}
	}
	for i := range x.Invalidate {
		f := &x.Invalidate[i]
		if f.ID == "" && (!graph.ValidName(f.Subject) || !graph.ValidName(f.Predicate) || (f.Object != "" && !graph.ValidName(f.Object))) {
			drop(itemRef{'i', i}, "neither an id nor a subject and predicate")
		}
	}
	for i := range x.Updates {
		m := &x.Updates[i]
		if _, err := ulid.ParseStrict(m.ID); err != nil {
			drop(itemRef{'u', i}, "not a memory id")
			continue
		}
		check := *m
		check.Source = []string{msg.ID}
		if check.Kind == "" {
			check.Kind = KindFact
		}
		if err := check.normalize("", now); err != nil {
			drop(itemRef{'u', i}, err.Error())
		}
	}
	for i, id := range x.Deletes {
		if _, err := ulid.ParseStrict(id); err != nil {
			drop(itemRef{'d', i}, "not a memory id")
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
	x, msg := o.x, &o.in.Message
	user := Scope{Tenant: j.scope.Tenant, User: j.scope.User}
	prefix, err := user.PartitionPrefix()
	if err != nil {
		return err
	}
	var led ledger
	fail := func(ref itemRef, err error) error {
		if isItemError(err) {
			return &itemError{ref: ref, err: err}
		}
		return err
	}
	now := time.Now()
	for i := range x.Memories {
		p := o.prepared[i]
		if o.skip[itemRef{'m', i}] || p == nil {
			continue
		}
		r, err := a.s.rememberTx(a.tx, user, prefix, p, now)
		if err != nil {
			return fail(itemRef{'m', i}, err)
		}
		if r.dropped {
			a.unstored = append(a.unstored, p.m.Text)
		}
		led.Memories = append(led.Memories, ledgerMemory{ID: r.id, Created: r.created})
	}
	for i := range x.Updates {
		p := o.prepared[len(x.Memories)+i]
		if o.skip[itemRef{'u', i}] || p == nil {
			continue
		}
		m := p.m
		m.Source = []string{msg.ID}
		old, _ := ulid.ParseStrict(m.ID)
		m.ID = ""
		id, err := a.s.updateMemoryTx(a.tx, user, prefix, old, m, p.vec, now)
		if errors.Is(err, engine.ErrNotFound) {
			// Gone (or never there): nothing was written for it.
			a.s.warn("memory: extracted update of a missing memory skipped", "message", msg.ID, "memory", old.String())
			continue
		}
		if err != nil {
			return fail(itemRef{'u', i}, err)
		}
		led.Memories = append(led.Memories, ledgerMemory{ID: id, Created: true, Replaces: old.String()})
	}
	for i, id := range x.Deletes {
		if o.skip[itemRef{'d', i}] {
			continue
		}
		if _, err := deleteMemoryTx(a.tx, user, prefix, id); errors.Is(err, engine.ErrNotFound) {
			a.s.warn("memory: extracted deletion of a missing memory skipped", "message", msg.ID, "memory", id)
		} else if err != nil {
			return fail(itemRef{'d', i}, err)
		}
	}
	g, err := a.graph(user)
	if err != nil {
		return err
	}
	exists := func(name string) (bool, error) {
		_, err := g.Entity(name)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, graph.ErrEntityNotFound):
			return false, nil
		}
		return false, err
	}
	for i := range x.Entities {
		if o.skip[itemRef{'e', i}] {
			continue
		}
		e := x.Entities[i]
		before, err := g.Entity(e.Name)
		found := err == nil
		if err != nil && !errors.Is(err, graph.ErrEntityNotFound) {
			return err
		}
		if _, err := g.CreateEntities([]graph.Entity{e}); err != nil {
			return fail(itemRef{'e', i}, err)
		}
		after, err := g.Entity(e.Name)
		if err != nil {
			return err
		}
		if !found {
			led.Entities = append(led.Entities, after.Name)
			before = graph.Entity{} // so its observations and aliases are recorded too
		}
		if added := without(after.Observations, before.Observations); len(added) > 0 {
			led.Observations = append(led.Observations, graph.ObservationSet{EntityName: after.Name, Observations: added})
		}
		if added := without(after.Aliases, before.Aliases); len(added) > 0 {
			led.Aliases = append(led.Aliases, graph.ObservationSet{EntityName: after.Name, Observations: added})
		}
	}
	single := map[string]bool{}
	for _, p := range x.SingleValued {
		single[graph.Fold(p)] = true
	}
	for i := range x.Facts {
		if o.skip[itemRef{'f', i}] {
			continue
		}
		f := x.Facts[i]
		var created []string
		for _, name := range []string{f.Subject, f.Object} {
			ok, err := exists(name)
			if err != nil {
				return err
			}
			if !ok && !slices.Contains(created, name) {
				created = append(created, name)
			}
		}
		var stored Fact
		if single[graph.Fold(f.Predicate)] {
			stored, err = g.Replace(f)
		} else {
			stored, err = g.Relate(f)
		}
		if err != nil {
			return fail(itemRef{'f', i}, err)
		}
		for _, name := range created {
			if e, err := g.Entity(name); err == nil {
				led.Entities = append(led.Entities, e.Name)
			}
		}
		if stored.Source == msg.ID {
			led.Facts = append(led.Facts, stored.ID)
		}
	}
	for i, f := range x.Invalidate {
		if o.skip[itemRef{'i', i}] {
			continue
		}
		ids := []string{f.ID}
		if f.ID == "" {
			facts, err := g.Facts(graph.FactQuery{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, AsOf: msg.Time})
			if err != nil {
				return fail(itemRef{'i', i}, err)
			}
			ids = ids[:0]
			for _, cur := range facts {
				ids = append(ids, cur.ID)
			}
		}
		for _, id := range ids {
			if _, err := g.Invalidate(id, msg.Time); errors.Is(err, graph.ErrFactNotFound) {
				a.s.warn("memory: extracted invalidation of a missing fact skipped", "message", msg.ID, "fact", id)
			} else if err != nil {
				return fail(itemRef{'i', i}, err)
			}
		}
	}
	if led.empty() {
		return nil
	}
	b, _ := json.Marshal(&led) // strings and bools always marshal
	// No TTL: the ledger outlives expired messages, so that forgetting
	// their session still finds what was formed from them.
	return a.tx.Set(sessionPrefix(j.prefix).extracted(j.id), append([]byte{recordVersion}, b...))
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
			all.Memories = append(all.Memories, l.Memories...)
			all.Facts = append(all.Facts, l.Facts...)
			all.Entities = append(all.Entities, l.Entities...)
			all.Observations = append(all.Observations, l.Observations...)
			all.Aliases = append(all.Aliases, l.Aliases...)
		}
		return nil
	})
	if err != nil || all.empty() {
		return err
	}
	user := Scope{Tenant: scope.Tenant, User: scope.User}
	userPrefix, err := user.PartitionPrefix()
	if err != nil {
		return err
	}
	// The versions that updates replaced come back: read and embed them
	// outside the transaction.
	replaced := map[string]*preparedMemory{}
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		for _, lm := range all.Memories {
			old, err := ulid.ParseStrict(lm.Replaces)
			if lm.Replaces == "" || err != nil {
				continue
			}
			b, err := tx.Get(partitionPrefix(userPrefix).archive(old))
			if errors.Is(err, engine.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var m Memory
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("%w: archived memory %s: %v", ErrCorrupt, lm.Replaces, err)
			}
			replaced[lm.ID] = &preparedMemory{m: m}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range replaced {
		vecs, err := s.embed(ctx, []string{p.m.Text})
		if err != nil {
			return err
		}
		p.vec = vecs[0]
	}
	var texts []string
	err = s.db.Update(ctx, func(tx *engine.Tx) error {
		texts = texts[:0]
		for _, lm := range all.Memories {
			m, err := getMemory(tx, user, userPrefix, lm.ID)
			switch {
			case errors.Is(err, engine.ErrNotFound):
				continue
			case err != nil:
				return err
			}
			if m.SupersededBy != "" {
				continue // only the history holds it; deleting the current version is the user's call
			}
			rest := slices.DeleteFunc(slices.Clone(m.Source), func(id string) bool { return ids[id] })
			if len(rest) == len(m.Source) {
				continue
			}
			if p := replaced[lm.ID]; p != nil && len(rest) == 0 {
				// An update made from the session: drop the version it
				// wrote and bring back the one it replaced.
				if err := tx.DeleteRecord(user, spaceMemories, m.ID); err != nil {
					return err
				}
				if err := deleteHash(tx, userPrefix, &m); err != nil {
					return err
				}
				texts = append(texts, m.Text)
				back := p.m
				back.SupersededBy = ""
				old, _ := ulid.ParseStrict(back.ID)
				if err := tx.Delete(partitionPrefix(userPrefix).archive(old)); err != nil {
					return err
				}
				if err := s.putMemory(tx, user, userPrefix, nil, &back, p.vec); err != nil {
					return err
				}
				continue
			}
			if lm.Created && len(rest) == 0 {
				t, err := deleteMemoryTx(tx, user, userPrefix, m.ID)
				if err != nil {
					return err
				}
				texts = append(texts, t...)
				continue
			}
			rec, err := tx.GetRecord(user, spaceMemories, m.ID, nil)
			if err != nil {
				return err
			}
			nm := m
			nm.Source = rest
			if err := s.putMemory(tx, user, userPrefix, &m, &nm, rec.Vector); err != nil {
				return err
			}
		}
		g, err := newApplier(s, tx).graph(user)
		if err != nil {
			return err
		}
		for _, id := range all.Facts {
			if err := g.Delete(id); err != nil && !errors.Is(err, graph.ErrFactNotFound) {
				return err
			}
		}
		if err := g.DeleteObservations(all.Observations); err != nil {
			return err
		}
		for _, set := range all.Aliases {
			if _, err := g.DeleteAliases(set.EntityName, set.Observations...); err != nil && !errors.Is(err, graph.ErrEntityNotFound) {
				return err
			}
		}
		for _, name := range all.Entities {
			e, err := g.Entity(name)
			switch {
			case errors.Is(err, graph.ErrEntityNotFound):
				continue
			case err != nil:
				return err
			}
			if len(e.Observations) > 0 {
				continue
			}
			used := false
			for _, q := range []graph.FactQuery{{Subject: e.Name, History: true, Limit: 1}, {Object: e.Name, History: true, Limit: 1}} {
				fs, err := g.Facts(q)
				if err != nil {
					return err
				}
				used = used || len(fs) > 0
			}
			if !used {
				if err := g.DeleteEntities([]string{e.Name}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if root, err := graphRoot(user); err == nil {
		s.nameCache.invalidate(root)
	}
	return s.forgetTexts(ctx, texts)
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
