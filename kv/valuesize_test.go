package kv

import (
	"bytes"
	"fmt"
	"testing"
)

// TestIteratorValueSize: ValueSize is the length Value would append, on
// every backend, sealed or not, in keys-only, full, reverse and
// read-ahead scans, and for a write of the scan's own transaction. Only
// a value in Badger's value log (over its ValueThreshold) is an estimate,
// within a few bytes.
func TestIteratorValueSize(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		sizes := []int{0, 1, 100, keysOnlyInline - 28, keysOnlyInline, keysOnlyInline + 1, 600, 5000}
		if b.name != "badger-memory" { // which refuses a value over its ValueThreshold
			sizes = append(sizes, 1<<20+3)
		}
		for _, key := range [][]byte{nil, bytes.Repeat([]byte{7}, 32)} {
			t.Run(fmt.Sprintf("sealed=%v", key != nil), func(t *testing.T) {
				db := b.open(t, &Options{EncryptionKey: key})
				want := map[string]int{}
				if err := db.Update(t.Context(), func(tx *Txn) error {
					for _, n := range sizes {
						k := fmt.Sprintf("v/%08d", n)
						want[k] = n
						if err := tx.Set([]byte(k), bytes.Repeat([]byte{'x'}, n)); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				check := func(what string, it *Iterator) {
					t.Helper()
					seen := 0
					for ; it.Valid(); it.Next() {
						seen++
						n, ok := want[string(it.Key())]
						if !ok {
							t.Fatalf("%s: key %q", what, it.Key())
						}
						got := it.ValueSize()
						if got == int64(n) {
							continue
						}
						if b.name == "postgres" || n < 1<<19 || got < int64(n) || got > int64(n)+16 {
							t.Errorf("%s: ValueSize of a %d-byte value = %d", what, n, got)
						}
					}
					if seen != len(want) {
						t.Errorf("%s: %d keys, want %d", what, seen, len(want))
					}
				}
				if err := db.View(t.Context(), func(tx *Txn) error {
					for _, o := range []IterOptions{{Prefix: []byte("v/"), KeysOnly: true}, {Prefix: []byte("v/")},
						{Prefix: []byte("v/"), KeysOnly: true, Reverse: true}} {
						it := tx.NewIterator(o)
						it.Seek(nil)
						check(fmt.Sprintf("%+v", o), it)
						it.Close()
					}
					it := tx.NewIterator(IterOptions{Prefix: []byte("v/"), KeysOnly: true})
					defer it.Close()
					if err := it.PrefetchSeeks([][]byte{[]byte("v/")}); err != nil {
						return err
					}
					it.Seek([]byte("v/"))
					check("read ahead", it)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				// A write of the transaction itself, not committed yet.
				if err := db.Update(t.Context(), func(tx *Txn) error {
					if err := tx.Set([]byte("v/00000600"), bytes.Repeat([]byte{'y'}, 700)); err != nil {
						return err
					}
					want["v/00000600"] = 700
					it := tx.NewIterator(IterOptions{Prefix: []byte("v/"), KeysOnly: true})
					defer it.Close()
					it.Seek(nil)
					check("in an update", it)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// TestValueSizeNoRoundTrips: on PostgreSQL, a keys-only scan that sizes
// every value costs its pages, not a round trip per value too large to
// come with its key.
func TestValueSizeNoRoundTrips(t *testing.T) {
	db, _ := openTestPostgres(t, nil)
	const n = 100
	if err := db.Update(t.Context(), func(tx *Txn) error {
		for i := range n {
			if err := tx.Set(fmt.Appendf(nil, "v/%03d", i), bytes.Repeat([]byte{'x'}, 2000)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := db.Cluster().Traffic().RoundTrips
	var total int64
	if err := db.View(t.Context(), func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{Prefix: []byte("v/"), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			total += it.ValueSize()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A renewal of the background loop may come in between.
	if rt := db.Cluster().Traffic().RoundTrips - before; rt > 4 {
		t.Errorf("sizing %d values took %d round trips", n, rt)
	}
	if total != n*2000 {
		t.Errorf("sizes sum to %d, want %d", total, n*2000)
	}
}
