package memory_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// The graph's one door: a write of several graph operations in one
// transaction, then a read from one snapshot.
func ExampleStore_UpdateGraph() {
	ctx := context.Background()
	store, err := memory.Open("", &memory.Options{SingleValued: []string{"renewal_owner"}})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	alice := memory.Scope{Tenant: "acme", User: "alice"}
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	err = store.UpdateGraph(ctx, alice, func(g *graph.Tx) error {
		if _, err := g.CreateEntities([]graph.Entity{{Name: "Dana", Type: "person", Observations: []string{"works at Acme"}}}); err != nil {
			return err
		}
		if _, err := g.Relate(graph.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: march}); err != nil {
			return err
		}
		_, err := g.Relate(graph.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Eve", ValidFrom: june})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	err = store.ViewGraph(ctx, alice, func(g *graph.Tx) error {
		history, err := g.History("alice", "renewal_owner")
		if err != nil {
			return err
		}
		for _, f := range history {
			fmt.Println(f.Object, "from", f.ValidFrom.Format("January"))
		}
		dana, err := g.Entity("dana")
		fmt.Println(dana.Name, dana.Type, dana.Observations)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// Dana from March
	// Eve from June
	// Dana person [works at Acme]
}
