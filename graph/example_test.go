package graph_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv"
)

func Example() {
	ctx := context.Background()
	db, err := kv.Open("", nil) // in memory
	if err != nil {
		panic(err)
	}
	defer db.Close()
	g, err := graph.New(&graph.Options{SingleValued: []string{"renewal_owner"}})
	if err != nil {
		panic(err)
	}
	root := []byte("alice's graph/")
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

	err = g.Update(ctx, db, root, func(tx *graph.Tx) error {
		for _, f := range []graph.Fact{
			{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: march},
			{Subject: "alice ", Predicate: "renewal_owner", Object: "Eve", ValidFrom: june}, // closes Dana's
			{Subject: "Eve", Predicate: "works_at", Object: "Acme"},
		} {
			if _, err := tx.Relate(f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	err = g.View(ctx, db, root, func(tx *graph.Tx) error {
		april, err := tx.Facts(graph.FactQuery{Subject: "ALICE", Predicate: "renewal_owner", AsOf: march.AddDate(0, 1, 0)})
		if err != nil {
			return err
		}
		fmt.Println("in April:", april[0].Object, "until", april[0].ValidTo.Format(time.DateOnly))

		walk, err := tx.Traverse(graph.TraverseQuery{From: []string{"Alice"}, MaxHops: 2})
		if err != nil {
			return err
		}
		for _, s := range walk.Steps {
			fmt.Printf("hop %d: %s %s %s (%s)\n", s.Hops, s.Subject, s.Predicate, s.Object, strings.Join(s.Path, " → "))
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// in April: Dana until 2026-06-01
	// hop 1: Alice renewal_owner Eve (Alice → Eve)
	// hop 2: Eve works_at Acme (Alice → Eve → Acme)
}
