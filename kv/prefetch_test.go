package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
)

// prefetchBackends returns an in-memory Badger store and, with
// ENGRAM_TEST_POSTGRES, two PostgreSQL ones, the second with sealed values.
func prefetchBackends(t *testing.T) map[string]*DB {
	dbs := map[string]*DB{"badger": openTest(t, "", nil)}
	if testPostgresDSNSet() {
		dbs["postgres"], _ = openTestPostgres(t, nil)
		// Sealed values are opened wherever they are read ahead.
		dbs["postgres-sealed"], _ = openTestPostgres(t, &PostgresOptions{EncryptionKey: bytes.Repeat([]byte{7}, 32)})
	}
	return dbs
}

// TestPrefetch: Gets after Prefetch return what Gets without it return
// (present, missing, written by the transaction, deleted by it), and on
// PostgreSQL the Prefetch is one round trip and the Gets none.
func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	for name, db := range prefetchBackends(t) {
		t.Run(name, func(t *testing.T) {
			err := db.Update(ctx, func(tx *Txn) error {
				for i := range 20 {
					if err := tx.Set(fmt.Appendf(nil, "p/%02d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var keys [][]byte
			for i := range 25 { // 20..24 are missing
				keys = append(keys, fmt.Appendf(nil, "p/%02d", i))
			}
			check := func(tx *Txn, written map[string]string) {
				t.Helper()
				for i, k := range keys {
					want, ok := fmt.Sprint("v", i), i < 20
					if w, in := written[string(k)]; in {
						want, ok = w, w != ""
					}
					v, err := tx.Get(k)
					switch {
					case !ok && !errors.Is(err, ErrNotFound):
						t.Fatalf("Get(%s) = %q, %v; want ErrNotFound", k, v, err)
					case ok && (err != nil || string(v) != want):
						t.Fatalf("Get(%s) = %q, %v; want %q", k, v, err, want)
					}
				}
			}
			err = db.View(ctx, func(tx *Txn) error {
				before := traffic(db)
				if err := tx.Prefetch(append(keys, nil)); err != nil { // an empty key is skipped
					return err
				}
				mid := traffic(db)
				check(tx, nil)
				after := traffic(db)
				if db.Postgres() && (mid.RoundTrips-before.RoundTrips != 1 || after.RoundTrips != mid.RoundTrips) {
					t.Errorf("round trips: Prefetch %d, Gets after it %d; want 1 and 0",
						mid.RoundTrips-before.RoundTrips, after.RoundTrips-mid.RoundTrips)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// In a read-write transaction, its own writes win over the store.
			err = db.Update(ctx, func(tx *Txn) error {
				if err := tx.Set([]byte("p/03"), []byte("new")); err != nil {
					return err
				}
				if err := tx.Delete([]byte("p/04")); err != nil {
					return err
				}
				if err := tx.Set([]byte("p/22"), []byte("added")); err != nil {
					return err
				}
				if err := tx.Prefetch(keys); err != nil {
					return err
				}
				check(tx, map[string]string{"p/03": "new", "p/04": "", "p/22": "added"})
				return errors.New("roll back")
			})
			if err == nil || err.Error() != "roll back" {
				t.Fatal(err)
			}
		})
	}
}

// traffic is the store's Traffic, zero for Badger.
func traffic(db *DB) Traffic {
	if c := db.Cluster(); c != nil {
		return c.Traffic()
	}
	return Traffic{}
}

func testPostgresDSNSet() bool { return os.Getenv("ENGRAM_TEST_POSTGRES") != "" }

// TestIteratorSeekModel seeks a keys-only and a full iterator to random
// keys in one read-only transaction, as the graph walk does, and checks
// every key and value met against a sorted slice. Values straddle the
// size keys-only scans bring along. On PostgreSQL, seeks within a page
// read before are served without a round trip.
func TestIteratorSeekModel(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	model := map[string][]byte{}
	for i := range 600 {
		k := fmt.Sprintf("g/%04d", r.IntN(5000))
		v := bytes.Repeat([]byte{byte(i)}, []int{0, 1, 30, keysOnlyInline, keysOnlyInline + 1, 3000}[i%6])
		model[k] = v
	}
	sorted := make([]string, 0, len(model))
	for k := range model {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for name, db := range prefetchBackends(t) {
		t.Run(name, func(t *testing.T) {
			err := db.Update(ctx, func(tx *Txn) error {
				for k, v := range model {
					if err := tx.Set([]byte(k), v); err != nil {
						return err
					}
				}
				return tx.Set([]byte("h/outside"), []byte("x"))
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct{ keysOnly, prefetch bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
				keysOnly := mode.keysOnly
				err := db.View(ctx, func(tx *Txn) error {
					it := tx.NewIterator(IterOptions{Prefix: []byte("g/"), KeysOnly: keysOnly})
					defer it.Close()
					before := traffic(db)
					const seeks = 300
					targets := make([]string, seeks)
					for j := range targets {
						targets[j] = fmt.Sprintf("g/%04d", r.IntN(5100))
						if r.IntN(20) == 0 {
							targets[j] = "a" // before the prefix
						}
					}
					for j, target := range targets {
						if mode.prefetch && j%50 == 0 {
							var keys [][]byte
							for _, t := range targets[j:min(j+50, len(targets))] {
								keys = append(keys, []byte(t))
							}
							if err := it.PrefetchSeeks(keys); err != nil {
								return err
							}
						}
						i := sort.SearchStrings(sorted, target)
						it.Seek([]byte(target))
						for n := 0; n < 1+r.IntN(4); n, i = n+1, i+1 {
							if i >= len(sorted) {
								if it.Valid() {
									t.Fatalf("Seek(%s)+%d: at %q, want the end", target, n, it.Key())
								}
								break
							}
							if !it.Valid() || string(it.Key()) != sorted[i] {
								t.Fatalf("Seek(%s)+%d: valid %v, want %q", target, n, it.Valid(), sorted[i])
							}
							if readValues := !keysOnly || len(model[sorted[i]]) <= keysOnlyInline; !readValues {
								it.Next() // a value not brought along costs a round trip
								continue
							}
							v, err := it.Value(nil)
							if err != nil || !bytes.Equal(v, model[sorted[i]]) {
								t.Fatalf("value of %s: %d bytes, %v; want %d bytes", sorted[i], len(v), err, len(model[sorted[i]]))
							}
							it.Next()
						}
					}
					if name == "postgres" { // sealed values are longer than keysOnlyInline counts
						n := traffic(db).RoundTrips - before.RoundTrips
						t.Logf("%+v: %d round trips for %d seeks", mode, n, seeks)
						if keysOnly && !mode.prefetch && n >= seeks*3/4 {
							t.Errorf("keys-only: %d round trips for %d seeks; want under three for four seeks", n, seeks)
						}
						if keysOnly && mode.prefetch && n >= seeks/4 {
							t.Errorf("keys-only with PrefetchSeeks: %d round trips for %d seeks; want under one for four seeks", n, seeks)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
