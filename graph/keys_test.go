package graph

import (
	"bytes"
	"context"
	"testing"

	"github.com/engramdb/engram/kv"
)

// TestKeyKinds counts the raw keys of a graph with IsEntityKey and
// IsFactKey, as a caller that scans keys without knowing the layout does:
// one entity key per entity (aliases and indexes are not counted) and one
// fact key per stored fact, closed facts included.
func TestKeyKinds(t *testing.T) {
	s, db, clock := newTestGraph(t, &Options{SingleValued: []string{"owner"}})
	update(t, s, db, func(tx *Tx) error {
		if _, err := tx.CreateEntities([]Entity{{Name: "Alice", Aliases: []string{"Al"}, Observations: []string{"likes tea"}}}); err != nil {
			return err
		}
		for _, o := range []string{"Dana", "Eve"} {
			if _, err := tx.Relate(Fact{Subject: "Alice", Predicate: "owner", Object: o}); err != nil {
				return err
			}
			clock.set(clock.now().Add(1))
		}
		_, err := tx.Relate(Fact{Subject: "Alice", Predicate: "knows", Object: "Bob"})
		return err
	})
	var entities, facts int
	err := db.View(context.Background(), func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: testRoot, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			rel := bytes.TrimPrefix(it.Key(), testRoot)
			if IsEntityKey(rel) {
				entities++
			}
			if IsFactKey(rel) {
				facts++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Alice, Dana, Eve, Bob; Dana's fact is closed by Eve's and still stored.
	if entities != 4 || facts != 3 {
		t.Errorf("entities %d facts %d, want 4 and 3", entities, facts)
	}
	for _, rel := range [][]byte{nil, {tagEntity}, {tagFact}, {tagFact, 1, 2}, {tagName, 'a'}} {
		if IsEntityKey(rel) || IsFactKey(rel) {
			t.Errorf("%q counted", rel)
		}
	}
}
