package graph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/engramdb/engram/kv"
)

// TestTraversePostgresMatchesBadger walks the same random graph in Badger
// and in PostgreSQL, where each hop's facts are read ahead in one request
// per direction (walk.prefetch) and seeks inside a page read before cost
// none: every walk must reach the same facts in the same order, with the
// same hops, paths and truncation.
func TestTraversePostgresMatchesBadger(t *testing.T) {
	dsn := os.Getenv("ENGRAM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("ENGRAM_TEST_POSTGRES is not set: no PostgreSQL to test against (.ci/run starts one)")
	}
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "g_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	pg, err := kv.OpenPostgres(ctx, &kv.PostgresOptions{DSN: dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	s, badger, _ := newTestGraph(t, nil)

	r := mrand.New(mrand.NewPCG(5, 6))
	var facts []Fact
	seen := map[[3]int]bool{}
	for len(facts) < 500 {
		// A few hubs, many small entities.
		a, c := int(r.ExpFloat64()*8)%80, r.IntN(80)
		p := r.IntN(6)
		if a == c || seen[[3]int{a, p, c}] {
			continue
		}
		seen[[3]int{a, p, c}] = true
		facts = append(facts, Fact{Subject: fmt.Sprint("e", a), Predicate: fmt.Sprint("p", p), Object: fmt.Sprint("e", c)})
	}
	for _, db := range []*kv.DB{badger, pg} {
		update(t, s, db, func(tx *Tx) error {
			for _, f := range facts {
				if _, err := tx.Relate(f); err != nil {
					return err
				}
			}
			return nil
		})
	}
	type step struct {
		S, P, O string
		Hops    int
		Path    []string
	}
	walk := func(db *kv.DB, q TraverseQuery) (out []step, truncated bool) {
		view(t, s, db, func(tx *Tx) error {
			tr, err := tx.Traverse(q)
			if err != nil {
				return err
			}
			for _, st := range tr.Steps {
				out = append(out, step{st.Subject, st.Predicate, st.Object, st.Hops, st.Path})
			}
			truncated = tr.Truncated
			return nil
		})
		return out, truncated
	}
	for i := range 60 {
		q := TraverseQuery{MaxHops: 1 + r.IntN(3), Direction: Direction(r.IntN(3))}
		for range 1 + r.IntN(3) {
			q.From = append(q.From, fmt.Sprint("e", r.IntN(85)))
		}
		if r.IntN(3) == 0 {
			q.Predicates = []string{fmt.Sprint("p", r.IntN(6)), fmt.Sprint("p", r.IntN(6))}
		}
		if r.IntN(2) == 0 {
			q.MaxFanout = 1 + r.IntN(40)
		}
		if r.IntN(3) == 0 {
			q.Limit = 1 + r.IntN(100)
		}
		want, wantCut := walk(badger, q)
		got, gotCut := walk(pg, q)
		if !reflect.DeepEqual(got, want) || gotCut != wantCut {
			t.Fatalf("walk %d %+v: PostgreSQL reached %d facts (truncated %v), Badger %d (truncated %v)\npg:     %v\nbadger: %v",
				i, q, len(got), gotCut, len(want), wantCut, got, want)
		}
	}
}
