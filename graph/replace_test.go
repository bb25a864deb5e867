package graph

import (
	"testing"
	"time"
)

// TestReplaceClosesCurrentFact: Replace holds the predicate single-valued
// for its own fact only.
func TestReplaceClosesCurrentFact(t *testing.T) {
	s, db, clock := newTestGraph(t, nil)
	clock.set(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	update(t, s, db, func(tx *Tx) error {
		if _, err := tx.Relate(Fact{Subject: "alice", Predicate: "lives_in", Object: "Paris", ValidFrom: march}); err != nil {
			return err
		}
		_, err := tx.Replace(Fact{Subject: "alice", Predicate: "lives_in", Object: "Lisbon", ValidFrom: june})
		return err
	})
	view(t, s, db, func(tx *Tx) error {
		now, err := tx.Facts(FactQuery{Subject: "alice", Predicate: "lives_in"})
		if err != nil {
			return err
		}
		if len(now) != 1 || now[0].Object != "Lisbon" {
			t.Errorf("facts now = %+v, want Lisbon alone", now)
		}
		then, err := tx.Facts(FactQuery{Subject: "alice", Predicate: "lives_in", AsOf: march.Add(24 * time.Hour)})
		if err != nil {
			return err
		}
		if len(then) != 1 || then[0].Object != "Paris" {
			t.Errorf("facts in March = %+v, want Paris", then)
		}
		return nil
	})
	// A plain Relate afterwards stands beside the current fact.
	update(t, s, db, func(tx *Tx) error {
		_, err := tx.Relate(Fact{Subject: "alice", Predicate: "lives_in", Object: "Porto", ValidFrom: june.Add(time.Hour)})
		return err
	})
	view(t, s, db, func(tx *Tx) error {
		now, err := tx.Facts(FactQuery{Subject: "alice", Predicate: "lives_in"})
		if err != nil {
			return err
		}
		if len(now) != 2 {
			t.Errorf("facts after a plain Relate = %+v, want Lisbon and Porto", now)
		}
		return nil
	})
}

// TestDeleteAliases removes an alias so it names nothing, and leaves the
// entity's name alone.
func TestDeleteAliases(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	update(t, s, db, func(tx *Tx) error {
		if _, err := tx.CreateEntities([]Entity{{Name: "alice", Aliases: []string{"Alice Smith", "Al"}}}); err != nil {
			return err
		}
		e, err := tx.DeleteAliases("alice", "al", "alice", "nobody")
		if err != nil {
			return err
		}
		if len(e.Aliases) != 1 || e.Aliases[0] != "Alice Smith" {
			t.Errorf("aliases = %v, want [Alice Smith]", e.Aliases)
		}
		return nil
	})
	view(t, s, db, func(tx *Tx) error {
		if _, err := tx.Entity("Al"); err == nil {
			t.Error("a deleted alias still names the entity")
		}
		if _, err := tx.Entity("Alice Smith"); err != nil {
			t.Errorf("the kept alias: %v", err)
		}
		if _, err := tx.Entity("alice"); err != nil {
			t.Errorf("the name: %v", err)
		}
		return nil
	})
}
