package graph

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// testAnnotation is an Options.Annotation derived from the fact's text, as
// package memory's token count is: a value left behind by a removed fact
// would name its text.
func testAnnotation(f *Fact) []byte { return []byte(f.Subject + "|" + f.Predicate + "|" + f.Object) }

// checkAnnotations scans the raw keys of tx's graph and returns what is
// wrong with its annotations, "" when nothing: each fact of all (every
// fact stored, history included) has the annotation of its text as
// stored, and no annotation is left for an id that is not a fact.
func checkAnnotations(tx *Tx, all []Fact) string {
	want := map[ulid.ULID]string{}
	for i := range all {
		want[ulid.MustParseStrict(all[i].ID)] = string(testAnnotation(&all[i]))
	}
	prefix := append(bytes.Clone(tx.k.root), tagNote)
	var msgs []string
	err := tx.scan(prefix, true, func(key, val []byte) (bool, error) {
		id := ulid.ULID(key[len(prefix):])
		w, ok := want[id]
		switch {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("annotation %q of %s, no fact", val, id))
		case w != string(val):
			msgs = append(msgs, fmt.Sprintf("annotation %q of %s, want %q", val, id, w))
		}
		delete(want, id)
		return true, nil
	})
	if err != nil {
		return err.Error()
	}
	for id, w := range want {
		msgs = append(msgs, fmt.Sprintf("fact %s (%s) has no annotation", id, w))
	}
	slices.Sort(msgs)
	return strings.Join(msgs[:min(len(msgs), 5)], "; ")
}

// TestAnnotationLifecycle runs every path that stores, rewrites or deletes
// a fact, then scans the graph's raw keys: every fact has the annotation
// of its text as stored, and no annotation outlives its fact (TestModel
// checks the same after random Relate, Invalidate, Delete and Load). A
// Store without an Annotation deletes annotations too, and Annotate
// stores one for a fact written without.
func TestAnnotationLifecycle(t *testing.T) {
	s, db, _ := newTestGraph(t, &Options{SingleValued: []string{"lives_in"}, Annotation: testAnnotation})
	plain, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.now = s.now
	all := func() []Fact {
		var fs []Fact
		view(t, s, db, func(tx *Tx) (err error) {
			fs, err = tx.Facts(FactQuery{History: true, Limit: MaxPageSize})
			return err
		})
		return fs
	}
	check := func(step string, wantFacts int) {
		t.Helper()
		fs := all()
		if len(fs) != wantFacts {
			t.Fatalf("%s: %d facts, want %d", step, len(fs), wantFacts)
		}
		view(t, s, db, func(tx *Tx) error {
			if msg := checkAnnotations(tx, fs); msg != "" {
				t.Errorf("%s: %s", step, msg)
			}
			return nil
		})
	}
	var ids []string
	update(t, s, db, func(tx *Tx) error {
		for _, f := range []Fact{
			{Subject: "Alice", Predicate: "knows", Object: "Bob"},
			{Subject: "Bob", Predicate: "knows", Object: "Carol"},
			{Subject: "Alice", Predicate: "lives_in", Object: "Paris"},
			{Subject: "Dana", Predicate: "works_at", Object: "Acme"},
			{Subject: "Eve", Predicate: "knows", Object: "Dana"},
			{Subject: "Frank", Predicate: "likes", Object: "tea"},
		} {
			f, err := tx.Relate(f)
			if err != nil {
				return err
			}
			ids = append(ids, f.ID)
		}
		return nil
	})
	check("relate", 6)
	update(t, s, db, func(tx *Tx) error {
		_, err := tx.Replace(Fact{Subject: "Alice", Predicate: "lives_in", Object: "Lisbon"})
		return err
	})
	check("replace", 7)
	update(t, s, db, func(tx *Tx) error { _, err := tx.Invalidate(ids[1], time.Time{}); return err })
	check("invalidate", 7)
	update(t, s, db, func(tx *Tx) error { return tx.Delete(ids[0]) })
	check("delete", 6)
	update(t, s, db, func(tx *Tx) error {
		return tx.DeleteRelations([]Relation{{From: "Dana", To: "Acme", RelationType: "works_at"}})
	})
	check("delete relations", 5)
	update(t, s, db, func(tx *Tx) error { _, err := tx.MergeEntities("Bob", "Eve"); return err })
	check("merge entities", 5) // Eve knows Dana is now Bob knows Dana
	update(t, s, db, func(tx *Tx) error { return tx.DeleteEntities([]string{"Bob"}) })
	check("delete entities", 3) // Alice's two lives_in facts, Frank's
	// A Store without an Annotation writes none and deletes them all the
	// same.
	if err := plain.Update(t.Context(), db, testRoot, func(tx *Tx) error {
		if _, err := tx.Relate(Fact{Subject: "Gus", Predicate: "knows", Object: "Hal"}); err != nil {
			return err
		}
		return tx.DeleteEntities([]string{"Alice"})
	}); err != nil {
		t.Fatal(err)
	}
	fs := all()
	gus := fs[slices.IndexFunc(fs, func(f Fact) bool { return f.Subject == "Gus" })].ID
	view(t, s, db, func(tx *Tx) error {
		if msg := checkAnnotations(tx, fs); msg != fmt.Sprintf("fact %s (Gus|knows|Hal) has no annotation", gus) {
			t.Errorf("plain store: %s", msg)
		}
		return nil
	})
	update(t, s, db, func(tx *Tx) error { return tx.Annotate(gus) })
	check("annotate", 2)
	update(t, s, db, func(tx *Tx) error {
		if err := tx.Annotate(ids[0]); !errors.Is(err, ErrFactNotFound) {
			return fmt.Errorf("Annotate of a deleted fact: %v, want ErrFactNotFound", err)
		}
		return nil
	})
	check("annotate a deleted fact", 2)
	// Bulk and transactional loads annotate what they store.
	for _, bulk := range []bool{false, true} {
		s2, db2, _ := newTestGraph(t, &Options{Annotation: testAnnotation})
		s2.noBulk = !bulk
		d := &Dump{}
		for i := range bulkMinItems {
			d.Facts = append(d.Facts, Fact{Subject: fmt.Sprintf("e%d", i%50), Predicate: "knows", Object: fmt.Sprintf("e%d", i)})
		}
		if _, err := s2.Load(t.Context(), db2, testRoot, d, nil); err != nil {
			t.Fatal(err)
		}
		view(t, s2, db2, func(tx *Tx) error {
			fs, err := tx.Facts(FactQuery{History: true, Limit: MaxPageSize})
			if err != nil || len(fs) != bulkMinItems {
				return fmt.Errorf("bulk %v: %d facts, %v", bulk, len(fs), err)
			}
			if msg := checkAnnotations(tx, fs); msg != "" {
				t.Errorf("load (bulk %v): %s", bulk, msg)
			}
			return nil
		})
	}
}
