package graph

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRelateAndTraverse(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	update(t, s, db, func(tx *Tx) error {
		for _, f := range []Fact{
			{Subject: "Alice", Predicate: "works_at", Object: "Acme"},
			{Subject: "acme ", Predicate: "located_in", Object: "Paris"},
			{Subject: "Bob", Predicate: "knows", Object: "ALICE"},
		} {
			if _, err := tx.Relate(f); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, db, func(tx *Tx) error {
		tr, err := tx.Traverse(TraverseQuery{From: []string{"alice"}, MaxHops: 2})
		if err != nil {
			return err
		}
		var got []string
		for _, st := range tr.Steps {
			got = append(got, st.Subject+" "+st.Predicate+" "+st.Object+" "+strings.Join(st.Path, ">"))
			_ = st.Hops
		}
		want := []string{"Alice works_at Acme Alice>Acme", "Bob knows Alice Alice>Bob", "Acme located_in Paris Alice>Acme>Paris"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("traverse:\n got %q\nwant %q", got, want)
		}
		return nil
	})
}

func TestSingleValued(t *testing.T) {
	s, db, clock := newTestGraph(t, &Options{SingleValued: []string{"Renewal Owner"}})
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	may := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	update(t, s, db, func(tx *Tx) error {
		if _, err := tx.Relate(Fact{Subject: "Alice", Predicate: "renewal owner", Object: "Dana", ValidFrom: march}); err != nil {
			return err
		}
		_, err := tx.Relate(Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Eve", ValidFrom: may})
		if err != nil {
			return err
		}
		// Different predicate spelling folds differently ("_" vs " "), so
		// Eve's fact is another predicate: nothing closed yet.
		_, err = tx.Relate(Fact{Subject: "alice", Predicate: "RENEWAL OWNER", Object: "Eve", ValidFrom: may})
		return err
	})
	clock.set(may.AddDate(0, 1, 0))
	view(t, s, db, func(tx *Tx) error {
		now, err := tx.Facts(FactQuery{Subject: "Alice", Predicate: "renewal owner"})
		if err != nil {
			return err
		}
		if len(now) != 1 || now[0].Object != "Eve" {
			t.Errorf("now: %+v", now)
		}
		then, err := tx.Facts(FactQuery{Subject: "Alice", Predicate: "renewal owner", AsOf: march.AddDate(0, 0, 10)})
		if err != nil {
			return err
		}
		if len(then) != 1 || then[0].Object != "Dana" || !then[0].ValidTo.Equal(may) {
			t.Errorf("march: %+v", then)
		}
		h, err := tx.History("ALICE", "renewal owner")
		if len(h) != 2 || h[0].Object != "Dana" || h[1].Object != "Eve" {
			t.Errorf("history: %+v", h)
		}
		return err
	})
}

func TestBadFacts(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, f := range map[string]Fact{
		"empty subject":   {Predicate: "p", Object: "o"},
		"blank predicate": {Subject: "s", Predicate: "  ", Object: "o"},
		"empty object":    {Subject: "s", Predicate: "p"},
		"long name":       {Subject: strings.Repeat("x", MaxNameLength+1), Predicate: "p", Object: "o"},
		"control":         {Subject: "a\x00b", Predicate: "p", Object: "o"},
		"to before from":  {Subject: "s", Predicate: "p", Object: "o", ValidFrom: t0, ValidTo: t0.Add(-time.Second)},
		"confidence":      {Subject: "s", Predicate: "p", Object: "o", Confidence: 1.5},
	} {
		err := s.Update(t.Context(), db, testRoot, func(tx *Tx) error {
			_, err := tx.Relate(f)
			return err
		})
		if !errors.Is(err, ErrInvalidFact) {
			t.Errorf("%s: err %v, want ErrInvalidFact", name, err)
		}
	}
	view(t, s, db, func(tx *Tx) error {
		g, err := tx.ReadGraph(ReadOptions{})
		if len(g.Entities) != 0 || len(g.Relations) != 0 {
			t.Errorf("bad facts wrote %+v", g)
		}
		return err
	})
}
