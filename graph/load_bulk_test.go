package graph

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// bulkDump is a dump that exercises what Load restores and decides: names
// given through aliases and in other spellings, entities named twice,
// observations, ids given (valid, repeated, invalid), validity intervals
// (some closed at their start), record times, repeated facts and a
// single-valued predicate whose facts close one another.
func bulkDump(seed uint64, n int) *Dump {
	rng := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	d := &Dump{}
	ents := max(n/8, 4)
	name := func(i int) string { return fmt.Sprintf("Entity %d", i) }
	for i := range ents {
		e := Entity{Name: name(i), Type: "thing", CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if i%3 == 0 {
			e.Observations = []string{fmt.Sprintf("observation %d", i), "shared"}
		}
		if i%5 == 0 {
			e.Aliases = []string{fmt.Sprintf("alias %d", i)}
		}
		d.Entities = append(d.Entities, e)
		if i%11 == 0 { // named again: extends the first
			d.Entities = append(d.Entities, Entity{Name: fmt.Sprintf("  ENTITY %d ", i), Observations: []string{"again"}})
		}
	}
	preds := []string{"knows", "works at", "lives in", "Owns"}
	var ids []string
	for i := range n {
		si, oi := rng.IntN(ents+ents/4), rng.IntN(ents)
		subj := name(si) // past ents: a new entity made by the fact
		if si%5 == 0 && si < ents && rng.IntN(2) == 0 {
			subj = fmt.Sprintf("ALIAS %d", si)
		}
		f := Fact{Subject: subj, Predicate: preds[rng.IntN(len(preds))], Object: name(oi),
			Source: fmt.Sprintf("message %d", i), Confidence: float64(rng.IntN(100)+1) / 100}
		switch rng.IntN(4) {
		case 0:
		case 1:
			f.ValidFrom = t0.Add(time.Duration(rng.IntN(1000)) * time.Hour)
		case 2:
			f.ValidFrom = t0.Add(time.Duration(rng.IntN(1000)) * time.Hour)
			f.ValidTo = f.ValidFrom.Add(time.Duration(rng.IntN(48)) * time.Hour)
			f.ExpiredAt = f.ValidTo.Add(time.Minute)
		case 3:
			f.ValidFrom = t0.Add(time.Duration(rng.IntN(1000)) * time.Hour)
			f.CreatedAt = f.ValidFrom.Add(time.Second)
		}
		switch rng.IntN(6) {
		case 0:
			id := ulid.MustNew(uint64(i+1), bytes.NewReader(bytes.Repeat([]byte{byte(i)}, 16))).String()
			ids = append(ids, id)
			f.ID = id
		case 1:
			if len(ids) > 0 {
				f.ID = ids[rng.IntN(len(ids))] // taken: a fresh id instead
			}
		case 2:
			f.ID = "not-an-id"
		}
		if rng.IntN(10) == 0 && len(d.Facts) > 0 {
			f = d.Facts[rng.IntN(len(d.Facts))] // a repeat
		}
		d.Facts = append(d.Facts, f)
	}
	return d
}

// loadInto loads d into a new store in dir with a fixed clock and id
// source, through the bulk path or not, and reports the stats and how
// many times Progress was called.
func loadInto(t *testing.T, dir string, opts *kv.Options, d *Dump, bulk bool) (*Store, *kv.DB, LoadStats, int) {
	t.Helper()
	db, err := kv.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := newDeterministicStore(t)
	s.noBulk = !bulk
	calls := 0
	st, err := s.Load(t.Context(), db, testRoot, d, &LoadOptions{Progress: func(int, int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	return s, db, st, calls
}

func newDeterministicStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(&Options{SingleValued: []string{"Lives In"}})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clock.now
	s.ids.entropy = ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	return s
}

// dumpKV returns every key and value of db in order.
func dumpKV(t *testing.T, db *kv.DB) (keys, vals [][]byte) {
	t.Helper()
	err := db.View(t.Context(), func(tx *kv.Txn) error {
		it := tx.NewIterator(kv.IterOptions{})
		defer it.Close()
		gen := append(bytes.Clone(testRoot), tagGen)
		for it.Seek(nil); it.Valid(); it.Next() {
			if bytes.HasPrefix(it.Key(), gen) {
				continue // generation keys: random, and the paths write their own
			}
			v, err := it.Value(nil)
			if err != nil {
				return err
			}
			keys = append(keys, bytes.Clone(it.Key()))
			vals = append(vals, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, vals
}

func sameKV(t *testing.T, what string, wantK, wantV, gotK, gotV [][]byte) {
	t.Helper()
	if len(gotK) != len(wantK) {
		t.Errorf("%s: %d keys, want %d", what, len(gotK), len(wantK))
	}
	for i := range min(len(gotK), len(wantK)) {
		if !bytes.Equal(gotK[i], wantK[i]) || !bytes.Equal(gotV[i], wantV[i]) {
			t.Fatalf("%s: key %d is %q = %q, want %q = %q", what, i, gotK[i], gotV[i], wantK[i], wantV[i])
		}
	}
}

func traverseAll(t *testing.T, s *Store, db *kv.DB, seeds []string) []Traversal {
	t.Helper()
	var out []Traversal
	view(t, s, db, func(tx *Tx) error {
		for _, seed := range seeds {
			for _, dir := range []Direction{Out, Both} {
				r, err := tx.Traverse(TraverseQuery{From: []string{seed}, MaxHops: 3, Direction: dir})
				if err != nil {
					return err
				}
				out = append(out, r)
			}
		}
		return nil
	})
	return out
}

// TestLoadBulkSameAsTransactions loads the same dumps through both paths
// and compares every key and value byte for byte, the stats and
// traversals, before and after reopening, then writes to the bulk-loaded
// store as to any other.
func TestLoadBulkSameAsTransactions(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		enc  bool
	}{{"small", 1200, false}, {"chunks", 12000, false}, {"encrypted", 3000, true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := bulkDump(uint64(tc.n), tc.n)
			var opts *kv.Options
			if tc.enc {
				opts = &kv.Options{EncryptionKey: bytes.Repeat([]byte{9}, 32)}
			}
			txDir, bulkDir := t.TempDir(), t.TempDir()
			ts, tdb, tst, tcalls := loadInto(t, txDir, opts, d, false)
			bs, bdb, bst, bcalls := loadInto(t, bulkDir, opts, d, true)
			if bcalls != 1 {
				t.Fatalf("bulk path: Progress called %d times, want once", bcalls)
			}
			// Chunks follow kv's transaction limits: Badger's are small,
			// PostgreSQL's (kv.DB.TxnLimits) take the dump in one.
			if tc.n > 10000 && tcalls < 2 && !kvtest.Postgres() {
				t.Fatalf("transactional path: %d chunks, want several", tcalls)
			}
			if tst != bst {
				t.Fatalf("stats: bulk %+v, transactions %+v", bst, tst)
			}
			if bst.Duplicates == 0 || bst.Entities == 0 {
				t.Fatalf("the dump should hold duplicates and entities: %+v", bst)
			}
			wantK, wantV := dumpKV(t, tdb)
			gotK, gotV := dumpKV(t, bdb)
			sameKV(t, "after load", wantK, wantV, gotK, gotV)

			seeds := []string{"Entity 0", "Entity 1", "alias 5", "Entity 7", "Entity 33"}
			want := traverseAll(t, ts, tdb, seeds)
			if got := traverseAll(t, bs, bdb, seeds); !reflect.DeepEqual(got, want) {
				t.Fatalf("traversals differ:\n got %+v\nwant %+v", got, want)
			}

			// Durable and readable after a reopen (the key included).
			if err := bdb.Close(); err != nil {
				t.Fatal(err)
			}
			bdb2, err := kv.Open(bulkDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bdb2.Close() })
			gotK, gotV = dumpKV(t, bdb2)
			sameKV(t, "after reopen", wantK, wantV, gotK, gotV)

			// Usable for ordinary writes afterwards, with the same result.
			more := Fact{Subject: "Entity 1", Predicate: "lives in", Object: "Entity 2", ValidFrom: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
			for _, w := range []struct {
				s  *Store
				db *kv.DB
			}{{ts, tdb}, {bs, bdb2}} {
				update(t, w.s, w.db, func(tx *Tx) error { _, err := tx.Relate(more); return err })
			}
			wantK, wantV = dumpKV(t, tdb)
			gotK, gotV = dumpKV(t, bdb2)
			sameKV(t, "after a later Relate", wantK, wantV, gotK, gotV)

			if tc.enc && !kvtest.Postgres() { // PostgreSQL's sealing: kv's TestPostgresEncryption
				// Badger encrypts the tables the stream writes.
				ssts, _ := filepath.Glob(filepath.Join(bulkDir, "*.sst"))
				if len(ssts) == 0 {
					t.Fatal("no tables")
				}
				for _, p := range ssts {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if bytes.Contains(b, []byte("entity 1")) || bytes.Contains(b, []byte("message 1")) {
						t.Fatalf("%s holds plain text", p)
					}
				}
			}
		})
	}
}

// TestLoadBulkOnlyIntoEmptyStore checks that a store holding other data
// (package memory keeps messages in the same store) is loaded through
// transactions, with the same result.
func TestLoadBulkOnlyIntoEmptyStore(t *testing.T) {
	d := bulkDump(3, 3000)
	_, tdb, tst, _ := loadInto(t, "", nil, d, false)
	db, err := kv.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other := []byte("\x00other data")
	if err := db.Update(t.Context(), func(tx *kv.Txn) error { return tx.Set(other, []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	s := newDeterministicStore(t)
	calls := 0
	st, err := s.Load(t.Context(), db, testRoot, d, &LoadOptions{Progress: func(int, int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	// Chunks follow kv's transaction limits: Badger's are small,
	// PostgreSQL's (kv.DB.TxnLimits) take the dump in one.
	if (calls < 2 && !kvtest.Postgres()) || st != tst {
		t.Fatalf("Progress called %d times (want the chunks of the transactional path), stats %+v want %+v", calls, st, tst)
	}
	wantK, wantV := dumpKV(t, tdb)
	gotK, gotV := dumpKV(t, db)
	if !bytes.Equal(gotK[0], other) {
		t.Fatalf("first key %q, want the other data", gotK[0])
	}
	sameKV(t, "beside other data", wantK, wantV, gotK[1:], gotV[1:])
}

// TestLoadBulkFailureLeavesNothing checks that an error during the bulk
// path (here an alias that two entities claim, found while building)
// leaves the store empty and usable.
func TestLoadBulkFailureLeavesNothing(t *testing.T) {
	d := bulkDump(4, 2000)
	d.Entities = append(d.Entities, Entity{Name: "Somebody", Aliases: []string{"Entity 3"}})
	db, err := kv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newDeterministicStore(t)
	if _, err := s.Load(t.Context(), db, testRoot, d, nil); err == nil {
		t.Fatal("Load of a conflicting alias succeeded")
	}
	if k, _ := dumpKV(t, db); len(k) != 0 {
		t.Fatalf("%d keys left after a failed bulk load", len(k))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Load(ctx, db, testRoot, bulkDump(5, 2000), nil); err == nil {
		t.Fatal("Load with a cancelled context succeeded")
	}
	if k, _ := dumpKV(t, db); len(k) != 0 {
		t.Fatalf("%d keys left after a cancelled bulk load", len(k))
	}
	if _, err := s.Load(t.Context(), db, testRoot, bulkDump(5, 2000), nil); err != nil {
		t.Fatal(err)
	}
}
