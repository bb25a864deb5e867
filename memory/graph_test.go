package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

func TestRelateRenewalOwner(t *testing.T) {
	s := openMem(t, &Options{SingleValued: []string{"renewal_owner"}})
	alice := Scope{Tenant: "acme", User: "alice"}
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []Fact{
		{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: march},
		{Subject: "alice", Predicate: "Renewal_Owner", Object: "Eve", ValidFrom: june, Source: "msg-7", Confidence: 0.9},
		{Subject: "Eve", Predicate: "works_at", Object: "Acme"},
	} {
		if _, err := s.Relate(bg, alice, f); err != nil {
			t.Fatal(err)
		}
	}
	now, err := viewed(bg, s, alice, (*graph.Tx).Facts, graph.FactQuery{Subject: "ALICE", Predicate: "renewal_owner"})
	if err != nil || len(now) != 1 || now[0].Object != "Eve" || now[0].Confidence != 0.9 {
		t.Fatalf("now: %+v, %v", now, err)
	}
	april, err := viewed(bg, s, alice, (*graph.Tx).Facts, graph.FactQuery{Subject: "Alice", Predicate: "renewal_owner", AsOf: march.AddDate(0, 1, 0)})
	if err != nil || len(april) != 1 || april[0].Object != "Dana" || !april[0].ValidTo.Equal(june) || april[0].ExpiredAt.IsZero() {
		t.Fatalf("april: %+v, %v", april, err)
	}
	tr, err := viewed(bg, s, alice, (*graph.Tx).Traverse, graph.TraverseQuery{From: []string{"alice"}, MaxHops: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 2 || tr.Steps[0].Object != "Eve" || tr.Steps[1].Hops != 2 || tr.Steps[1].Object != "Acme" {
		t.Fatalf("traverse: %+v", tr.Steps)
	}
	var h []Fact
	err = s.ViewGraph(bg, alice, func(g *graph.Tx) (err error) {
		h, err = g.History("Alice", "renewal_owner")
		return err
	})
	if err != nil || len(h) != 2 {
		t.Fatalf("history: %+v, %v", h, err)
	}
}

func TestGraphIsolation(t *testing.T) {
	s := openMem(t, nil)
	scopes := []Scope{
		{Tenant: "acme", User: "alice"},
		{Tenant: "acme", User: "bob"},
		{Tenant: "acme"}, // the tenant's shared graph
		{Tenant: "globex", User: "alice"},
	}
	for i, sc := range scopes {
		if _, err := s.Relate(bg, sc, Fact{Subject: "X", Predicate: "p", Object: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i, sc := range scopes {
		got, err := viewed(bg, s, sc, (*graph.Tx).Facts, graph.FactQuery{})
		if err != nil || len(got) != 1 || got[0].Object != string(rune('a'+i)) {
			t.Errorf("%+v sees %+v, %v", sc, got, err)
		}
		// A session scope names its user's graph.
		sc.Session = "s1"
		if sc.User != "" {
			if got, err := viewed(bg, s, sc, (*graph.Tx).Facts, graph.FactQuery{}); err != nil || len(got) != 1 {
				t.Errorf("%+v sees %+v, %v", sc, got, err)
			}
		}
	}
	for _, bad := range []Scope{{}, {User: "alice"}, {Tenant: "acme", Session: "s1"}, {Tenant: "a\x00b", User: "x"}} {
		if _, err := s.Relate(bg, bad, Fact{Subject: "a", Predicate: "p", Object: "b"}); !errors.Is(err, ErrInvalidScope) {
			t.Errorf("scope %+v: err %v, want ErrInvalidScope", bad, err)
		}
	}
}

// TestWriteAtomic: a fact written with the message it came from commits
// with it, and a failure of either leaves neither.
func TestWriteAtomic(t *testing.T) {
	s := openMem(t, nil)
	sc := testScope
	count := func() (msgs, facts int) {
		t.Helper()
		m, err := s.Session(sc).Messages(bg, MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := viewed(bg, s, sc, (*graph.Tx).Facts, graph.FactQuery{History: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(m), len(f)
	}

	var bad Batch
	bad.Append(sc, user("Dana owns my renewal now."))
	bad.Relate(sc, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: ""})
	if _, err := s.Write(bg, &bad); !errors.Is(err, ErrInvalidFact) {
		t.Fatalf("bad fact: err %v, want ErrInvalidFact", err)
	}
	if m, f := count(); m != 0 || f != 0 {
		t.Fatalf("after a bad fact: %d messages, %d facts", m, f)
	}

	var orphan Batch
	orphan.Relate(sc, Fact{Subject: "Alice", Predicate: "likes", Object: "tea"})
	orphan.Append(sc, result("nope"))
	if _, err := s.Write(bg, &orphan); !errors.Is(err, ErrOrphanToolResult) {
		t.Fatalf("orphan: err %v, want ErrOrphanToolResult", err)
	}
	if m, f := count(); m != 0 || f != 0 {
		t.Fatalf("after a bad message: %d messages, %d facts", m, f)
	}
	// Entities a failed batch created implicitly are gone too.
	if g, err := viewed(bg, s, sc, (*graph.Tx).ReadGraph, graph.ReadOptions{}); err != nil || len(g.Entities) != 0 {
		t.Fatalf("entities after failures: %+v, %v", g.Entities, err)
	}

	ctx, cancel := context.WithCancel(bg)
	cancel()
	var canceled Batch
	canceled.Append(sc, user("hello"))
	canceled.Relate(sc, Fact{Subject: "Alice", Predicate: "likes", Object: "tea"})
	if _, err := s.Write(ctx, &canceled); err == nil {
		t.Fatal("a canceled context wrote")
	}
	if m, f := count(); m != 0 || f != 0 {
		t.Fatalf("after a canceled write: %d messages, %d facts", m, f)
	}

	var good Batch
	good.Append(sc, user("Dana owns my renewal now."))
	good.Relate(sc, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"})
	good.Relate(sc, Fact{Subject: "Dana", Predicate: "works_at", Object: "Acme", Source: "crm"})
	res, err := s.Write(bg, &good)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.MessageIDs) != 1 || len(res.Facts) != 2 {
		t.Fatalf("result %+v", res)
	}
	if res.Facts[0].Source != res.MessageIDs[0] || res.Facts[1].Source != "crm" {
		t.Errorf("sources %q, %q; message %q", res.Facts[0].Source, res.Facts[1].Source, res.MessageIDs[0])
	}
	if m, f := count(); m != 1 || f != 2 {
		t.Fatalf("after a good batch: %d messages, %d facts", m, f)
	}
}

func TestForgetErasesGraph(t *testing.T) {
	s := openMem(t, nil)
	alice := Scope{Tenant: "acme", User: "alice"}
	shared := Scope{Tenant: "acme"}
	for _, sc := range []Scope{alice, shared} {
		if _, err := updated(bg, s, sc, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Alice", Type: "person", Observations: []string{"likes tea"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Relate(bg, sc, Fact{Subject: "Alice", Predicate: "knows", Object: "Bob"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Forget(bg, Scope{Tenant: "acme", User: "alice", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if f, _ := viewed(bg, s, alice, (*graph.Tx).Facts, graph.FactQuery{}); len(f) != 1 {
		t.Fatalf("forgetting a session erased the user's facts: %+v", f)
	}
	// Searches build each graph's in-memory index: the user's text.
	for _, sc := range []Scope{alice, shared} {
		search := func(tx *graph.Tx, q string) (graph.Graph, error) { return tx.SearchNodes(q, graph.SearchOptions{}) }
		if g, err := viewed(bg, s, sc, search, "tea"); err != nil || len(g.Entities) != 1 {
			t.Fatalf("search: %+v, %v", g, err)
		}
	}
	userPrefix := alice.Prefix(engine.LevelUser)
	if s.graph.SearchIndexBytes(userPrefix) == 0 {
		t.Fatal("no search index held for the user")
	}
	if err := s.Forget(bg, alice); err != nil {
		t.Fatal(err)
	}
	if n := s.graph.SearchIndexBytes(userPrefix); n != 0 {
		t.Fatalf("Forget left %d bytes of the user's search index in memory", n)
	}
	if s.graph.SearchIndexBytes(nil) == 0 {
		t.Fatal("Forget of a user dropped the shared graph's index")
	}
	if f, err := viewed(bg, s, alice, (*graph.Tx).Facts, graph.FactQuery{History: true}); err != nil || len(f) != 0 {
		t.Fatalf("facts after Forget: %+v, %v", f, err)
	}
	if g, err := viewed(bg, s, alice, (*graph.Tx).ReadGraph, graph.ReadOptions{}); err != nil || len(g.Entities) != 0 {
		t.Fatalf("entities after Forget: %+v, %v", g, err)
	}
	// No key of the user's graph is left, and the tenant's shared graph is.
	err := s.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: alice.Prefix(engine.LevelUser), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			t.Errorf("key left after Forget: %q", it.Key())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := viewed(bg, s, shared, (*graph.Tx).Facts, graph.FactQuery{}); err != nil || len(f) != 1 {
		t.Fatalf("shared facts after forgetting a user: %+v, %v", f, err)
	}
}

func TestEntityMethods(t *testing.T) {
	s := openMem(t, nil)
	sc := Scope{Tenant: "acme", User: "alice"}
	created, err := updated(bg, s, sc, (*graph.Tx).CreateEntities, []graph.Entity{
		{Name: "Alice", Type: "person", Observations: []string{"prefers email"}},
		{Name: "Acme Corp", Type: "company"},
	})
	if err != nil || len(created) != 2 {
		t.Fatalf("create: %+v, %v", created, err)
	}
	if again, err := updated(bg, s, sc, (*graph.Tx).CreateEntities, []graph.Entity{{Name: " alice "}}); err != nil || len(again) != 0 {
		t.Fatalf("re-create: %+v, %v", again, err)
	}
	rels, err := updated(bg, s, sc, (*graph.Tx).CreateRelations, []graph.Relation{{From: "alice", To: "acme corp", RelationType: "works_at"}, {From: "Alice", To: "Acme Corp", RelationType: "works_at"}})
	if err != nil || len(rels) != 1 || rels[0] != (graph.Relation{From: "Alice", To: "Acme Corp", RelationType: "works_at"}) {
		t.Fatalf("relations: %+v, %v", rels, err)
	}
	if _, err := updated(bg, s, sc, (*graph.Tx).AddObservations, []graph.ObservationSet{{EntityName: "Nobody", Observations: []string{"x"}}}); !errors.Is(err, ErrEntityNotFound) {
		t.Fatalf("observation on unknown entity: %v", err)
	}
	added, err := updated(bg, s, sc, (*graph.Tx).AddObservations, []graph.ObservationSet{{EntityName: "Alice", Observations: []string{"prefers email", "in Paris"}}})
	if err != nil || len(added) != 1 || len(added[0].Observations) != 1 || added[0].Observations[0] != "in Paris" {
		t.Fatalf("add observations: %+v, %v", added, err)
	}
	if err := s.UpdateGraph(bg, sc, func(g *graph.Tx) error { _, err := g.AddAliases("Acme Corp", "ACME"); return err }); err != nil {
		t.Fatal(err)
	}
	var g graph.Graph
	err = s.ViewGraph(bg, sc, func(tx *graph.Tx) (err error) {
		g, err = tx.SearchNodes("PARIS", graph.SearchOptions{})
		return err
	})
	if err != nil || len(g.Entities) != 1 || g.Entities[0].Name != "Alice" {
		t.Fatalf("search: %+v, %v", g, err)
	}
	g, err = viewed(bg, s, sc, (*graph.Tx).OpenNodes, []string{"acme", "alice", "nobody"})
	if err != nil || len(g.Entities) != 2 || len(g.Relations) != 1 {
		t.Fatalf("open: %+v, %v", g, err)
	}
	if err := s.UpdateGraph(bg, sc, func(g *graph.Tx) error {
		return g.DeleteObservations([]graph.ObservationSet{{EntityName: "Alice", Observations: []string{"in Paris"}}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateGraph(bg, sc, func(g *graph.Tx) error {
		return g.DeleteRelations([]graph.Relation{{From: "Alice", To: "ACME", RelationType: "works_at"}})
	}); err != nil {
		t.Fatal(err)
	}
	page, err := viewed(bg, s, sc, (*graph.Tx).ReadGraph, graph.ReadOptions{})
	if err != nil || len(page.Entities) != 2 || len(page.Relations) != 0 || page.Next != "" {
		t.Fatalf("read: %+v, %v", page, err)
	}
	if err := s.UpdateGraph(bg, sc, func(g *graph.Tx) error { return g.DeleteEntities([]string{"Acme Corp"}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := viewed(bg, s, sc, (*graph.Tx).Entity, "ACME"); !errors.Is(err, ErrEntityNotFound) {
		t.Fatalf("deleted entity's alias still resolves: %v", err)
	}
	e, err := viewed(bg, s, sc, (*graph.Tx).Entity, "alice")
	if err != nil || e.Name != "Alice" || len(e.Observations) != 1 {
		t.Fatalf("entity: %+v, %v", e, err)
	}
}

// viewed calls one graph.Tx method with arg through [Store.ViewGraph], the
// way the store's graph is read.
func viewed[A, R any](ctx context.Context, s *Store, scope Scope, m func(*graph.Tx, A) (R, error), arg A) (R, error) {
	var out R
	err := s.ViewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = m(g, arg)
		return err
	})
	return out, err
}

// updated calls one graph.Tx method with arg through [Store.UpdateGraph],
// the way the store's graph is written.
func updated[A, R any](ctx context.Context, s *Store, scope Scope, m func(*graph.Tx, A) (R, error), arg A) (R, error) {
	var out R
	err := s.UpdateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = m(g, arg)
		return err
	})
	return out, err
}
