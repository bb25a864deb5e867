package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// factsExtractor draws a fact from each message "subject predicate object"
// (underscores in names), a correction when the predicate is lives_in.
type factsExtractor struct{}

func (factsExtractor) Extract(_ context.Context, in *ExtractInput) (*Extraction, error) {
	w := strings.Fields(in.Message.Content)
	if len(w) != 3 {
		return nil, nil
	}
	f := Fact{Subject: strings.ReplaceAll(w[0], "_", " "), Predicate: w[1], Object: strings.ReplaceAll(w[2], "_", " ")}
	return &Extraction{Facts: []Fact{f}, SingleValued: []string{"lives_in"}}, nil
}

// checkFactCounts scans the raw keys of scope's partition and checks the
// token counts stored as facts' annotations (see graph.Options.Annotation)
// against the graph's facts (history included): no count is left for a
// fact that no longer exists. A store of this version writes no count
// (Recall counts a fact: hydrator.factTokens); the ones checked are those
// of an older store, planted by plantFactCounts. It returns the facts.
func checkFactCounts(t *testing.T, st *Store, scope Scope, step string) []Fact {
	t.Helper()
	root, err := graphRoot(scope)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := scope.PartitionPrefix()
	notes := graph.AppendAnnotationKey(nil, root, ulid.ULID{})[:len(root)+1]
	var facts []Fact
	counts := map[string][]byte{}
	err = st.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: p})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			if k := it.Key(); bytes.HasPrefix(k, notes) {
				v, err := it.Value(nil)
				if err != nil {
					return err
				}
				counts[ulid.ULID(k[len(notes):]).String()] = v
			}
		}
		for after := ""; ; {
			page, err := st.graph.Tx(tx.KV(), root).Facts(graph.FactQuery{History: true, After: after, Limit: graph.MaxPageSize})
			if err != nil || len(page) == 0 {
				return err
			}
			facts = append(facts, page...)
			after = page[len(page)-1].ID
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range facts {
		delete(counts, facts[i].ID)
	}
	for id, v := range counts {
		t.Errorf("%s: count %x left for %s, no longer a fact", step, v, id)
	}
	return facts
}

// plantFactCounts makes scope's graph an older store's, in which every
// fact has its token count as its annotation, and checks that the store
// wrote none itself.
func plantFactCounts(t *testing.T, st *Store, scope Scope, facts []Fact) {
	t.Helper()
	root, err := graphRoot(scope)
	if err != nil {
		t.Fatal(err)
	}
	err = st.db.Update(bg, func(tx *engine.Tx) error {
		for i := range facts {
			key := graph.AppendAnnotationKey(nil, root, ulid.MustParse(facts[i].ID))
			if _, err := tx.Get(key); !errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("fact %s: the store wrote an annotation (%v)", facts[i].ID, err)
			}
			if err := tx.Set(key, []byte{3, byte(len(factText(&facts[i]))), 'o'}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFactCountsFollowFacts runs every path that writes, rewrites or
// removes a fact of a user's graph (Relate, Write, extraction and its
// corrections, UpdateGraph as the MCP graph tools and the HTTP API use it,
// ImportGraph, Delete, DeleteRelations, MergeEntities, DeleteEntities,
// forgetting a session's extractions, the retention sweep, Forget) and
// after each scans the partition's raw keys: no token count (a value
// derived from the text, stored as its annotation by stores before facts
// were counted at recall) is left for a fact that is gone (issue 29), and
// the writes store none.
func TestFactCountsFollowFacts(t *testing.T) {
	st := openMem(t, &Options{Extractor: factsExtractor{}, SingleValued: []string{"owner"}, Retention: Retention{Messages: time.Hour}})
	alice := Scope{Tenant: "acme", User: "alice"}
	find := func(facts []Fact, subject, object string) Fact {
		t.Helper()
		i := slices.IndexFunc(facts, func(f Fact) bool { return f.Subject == subject && f.Object == object })
		if i < 0 {
			t.Fatalf("no fact %s → %s in %d facts", subject, object, len(facts))
		}
		return facts[i]
	}

	// Writes: none stores a count.
	for _, f := range []Fact{
		{Subject: "Alice", Predicate: "owner", Object: "Dana"},
		{Subject: "Alice", Predicate: "owner", Object: "Eve"}, // closes Dana's
		{Subject: "Alice", Predicate: "knows", Object: "Bob"},
	} {
		if _, err := st.Relate(bg, alice, f); err != nil {
			t.Fatal(err)
		}
	}
	var b Batch
	b.Relate(alice, Fact{Subject: "Bob", Predicate: "works_at", Object: "Acme"})
	if _, err := st.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := updated(bg, st, alice, (*graph.Tx).CreateRelations, []graph.Relation{
		{From: "Carol", To: "Bob", RelationType: "manages"}, {From: "Carol", To: "Frank", RelationType: "knows"},
	}); err != nil {
		t.Fatal(err)
	}
	s1 := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, st.Session(s1), user("Gus lives_in Paris"), user("Gus lives_in Lisbon"), user("Gus knows Hal"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ImportGraph(bg, alice, &graph.Dump{Facts: []Fact{{Subject: "Ivy", Predicate: "knows", Object: "Jo"}}}, nil); err != nil {
		t.Fatal(err)
	}
	facts := checkFactCounts(t, st, alice, "writes")
	if len(facts) != 10 {
		t.Fatalf("%d facts after the writes, want 10", len(facts))
	}
	plantFactCounts(t, st, alice, facts)

	// Removals and rewrites.
	deleted := find(facts, "Ivy", "Jo")
	if err := st.UpdateGraph(bg, alice, func(g *graph.Tx) error { return g.Delete(deleted.ID) }); err != nil {
		t.Fatal(err)
	}
	checkFactCounts(t, st, alice, "Delete (DELETE /v1/facts/{id})")
	if _, err := updated(bg, st, alice, func(g *graph.Tx, r []graph.Relation) (struct{}, error) { return struct{}{}, g.DeleteRelations(r) },
		[]graph.Relation{{From: "Carol", To: "Frank", RelationType: "knows"}}); err != nil {
		t.Fatal(err)
	}
	checkFactCounts(t, st, alice, "DeleteRelations (delete_relations)")
	if _, err := updated(bg, st, alice, func(g *graph.Tx, from string) (graph.Entity, error) { return g.MergeEntities("Robert", from) }, "Bob"); err == nil {
		t.Fatal("merge into an unknown entity")
	}
	if _, err := updated(bg, st, alice, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Robert"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := updated(bg, st, alice, func(g *graph.Tx, from string) (graph.Entity, error) { return g.MergeEntities("Robert", from) }, "Bob"); err != nil {
		t.Fatal(err)
	}
	facts = checkFactCounts(t, st, alice, "MergeEntities (the facts' text changes)")
	find(facts, "Carol", "Robert")
	if _, err := updated(bg, st, alice, func(g *graph.Tx, names []string) (struct{}, error) { return struct{}{}, g.DeleteEntities(names) }, []string{"Carol"}); err != nil {
		t.Fatal(err)
	}
	checkFactCounts(t, st, alice, "DeleteEntities (delete_entities)")
	if err := st.Forget(bg, s1); err != nil {
		t.Fatal(err)
	}
	facts = checkFactCounts(t, st, alice, "Forget of a session (its extractions)")
	if slices.ContainsFunc(facts, func(f Fact) bool { return f.Subject == "Gus" }) {
		t.Fatalf("a forgotten session's facts are left: %+v", facts)
	}
	if _, err := st.retain(bg, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	checkFactCounts(t, st, alice, "retention sweep")
	// A dump may give a fact the id of one deleted: no count comes back.
	if _, err := st.ImportGraph(bg, alice, &graph.Dump{Facts: []Fact{{ID: deleted.ID, Subject: "Kim", Predicate: "knows", Object: "Lee Ann"}}}, nil); err != nil {
		t.Fatal(err)
	}
	facts = checkFactCounts(t, st, alice, "ImportGraph of a deleted fact's id")
	if find(facts, "Kim", "Lee Ann").ID != deleted.ID {
		t.Fatal("the dump's id was not kept")
	}
	if len(facts) != 5 { // Alice owner Dana, Eve; Alice knows Robert; Robert works_at Acme; Kim knows Lee Ann
		t.Errorf("%d facts at the end, want 5: %+v", len(facts), facts)
	}
	if err := st.Forget(bg, alice); err != nil {
		t.Fatal(err)
	}
	if facts := checkFactCounts(t, st, alice, "Forget of the user"); len(facts) != 0 {
		t.Fatalf("%d facts after Forget", len(facts))
	}
	p, _ := alice.PartitionPrefix()
	if err := st.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: p, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			return fmt.Errorf("key left after Forget: %q", it.Key())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBackStoresOldCounts opens a store whose memory and episode
// have no stored count (as written before counts were stored): a Recall
// counts them and queues them, the writer stores their counts, and the
// next open of the store finds them there, and Recall tokenizes neither
// again. A read-only open writes nothing back. The fact recalled with
// them is counted at each Recall (hydrator.factTokens): its short text
// stays below what the assertions count.
func TestWriteBackStoresOldCounts(t *testing.T) {
	dir := t.TempDir()
	scope := Scope{Tenant: "acme", User: "alice"}
	unique := func(head string) string {
		return head + " " + strings.Repeat("Überweisungsbestätigung München 東京都 ", 4) + time.Now().Format(time.RFC3339Nano)
	}
	memory, message := unique("Alice plans the Lisbon offsite"), unique("Alice plans the Lisbon offsite, I said")
	shortest := int64(min(len(memory), len(message)))
	q := Query{Scope: scope, Text: "What does Alice plan for the Lisbon offsite?", MaxTokens: 4000,
		Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}}
	open := func(opts *Options) *Store {
		t.Helper()
		st, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// recall recalls the three with the count caches emptied, waits for
	// the write-back, and returns how many bytes it tokenized.
	recall := func(st *Store) int64 {
		t.Helper()
		resetTokenCaches()
		before := tokenizedBytes.Load()
		rec, err := st.Recall(bg, q)
		if err != nil || len(rec.Items) != 3 {
			t.Fatalf("Recall: %d items, %v", len(rec.Items), err)
		}
		n := tokenizedBytes.Load() - before
		if err := st.writeBack.flushWait(bg); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// counts returns the stored counts of the fact, the memory and the
	// episode, "" for none.
	counts := func(st *Store) [2]string {
		t.Helper()
		var out [2]string
		err := st.db.View(bg, func(tx *engine.Tx) error {
			for i, space := range []string{spaceMemories, spaceMessages} {
				err := tx.ScanRecords(scope, space, ulid.ULID{}, func(r engine.Record) (bool, error) {
					out[i] = r.Metadata[memoryTokensKey]
					return true, nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	st := open(nil)
	if _, err := st.Relate(bg, scope, Fact{Subject: "Alice", Predicate: "plans", Object: "the Lisbon offsite"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remember(bg, scope, Memory{Text: memory}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st.Session(Scope{Tenant: "acme", User: "alice", Session: "s-1"}), user(message))
	want := counts(st)
	if slices.Contains(want[:], "") {
		t.Fatalf("counts not stored when written: %q", want)
	}
	// Make it an old store: no count anywhere.
	if err := st.db.Update(bg, func(tx *engine.Tx) error {
		for _, space := range []string{spaceMemories, spaceMessages} {
			var recs []engine.Record
			if err := tx.ScanRecords(scope, space, ulid.ULID{}, func(r engine.Record) (bool, error) {
				recs = append(recs, r)
				return true, nil
			}); err != nil {
				return err
			}
			for _, r := range recs {
				delete(r.Metadata, memoryTokensKey)
				if _, err := tx.PutRecord(scope, space, r); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c := counts(st); c != [2]string{} {
		t.Fatalf("counts left: %q", c)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A read-only store does not try (the engine would refuse the write).
	var log bytes.Buffer
	st = open(&Options{ReadOnly: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if n := recall(st); n < 2*shortest {
		t.Errorf("read-only, old records: Recall tokenized %d bytes, less than the two texts", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "write back") {
		t.Errorf("a read-only store tried to write counts back: %s", log.String())
	}
	st = open(nil)
	if c := counts(st); c != [2]string{} {
		t.Fatalf("a read-only store wrote counts back: %q", c)
	}
	if n := recall(st); n < 2*shortest {
		t.Errorf("old records: Recall tokenized %d bytes, less than the two texts", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(nil)
	defer st.Close()
	if got := counts(st); got != want {
		t.Fatalf("counts written back %q, want those stored when written %q", got, want)
	}
	if n := recall(st); n >= shortest {
		t.Errorf("written back: Recall tokenized %d bytes, a text %d", n, shortest)
	}
}
