package engine

import (
	"testing"
)

// TestZeroVectors: a record whose vector is zero (the hashing embedder's
// vector for "?!") is stored and readable but never indexed, and a zero
// query matches nothing without an error, in a flat partition, after
// promotion to HNSW and after a reopen from the snapshot (issue 12, defect
// 7: such a query answered 500).
func TestZeroVectors(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 30}
	vecs := randVecs(11, 60, 8)
	for i := 0; i < len(vecs); i += 6 {
		vecs[i] = make([]float32, 8)
	}
	zero := make([]float32, 8)
	check := func(db *DB, n int) {
		t.Helper()
		stored := put(t, db, vscope, vecs[:n])
		if hits, err := db.Search(ctxb, vscope, zero, 5, nil); err != nil || len(hits) != 0 {
			t.Fatalf("zero query: %d hits, %v", len(hits), err)
		}
		hits, err := db.Search(ctxb, vscope, vecs[1], 100, nil)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		for _, h := range hits {
			if allZero(stored[h.ID]) {
				t.Errorf("zero-vector record %s found by a query", h.ID)
			}
		}
		for id, v := range stored {
			if !allZero(v) {
				continue
			}
			err := db.View(ctxb, func(tx *Tx) error { _, err := tx.GetRecord(vscope, "", id, nil); return err })
			if err != nil {
				t.Errorf("zero-vector record %s: %v", id, err)
			}
		}
	}
	db := openDisk(t, dir, opts)
	check(db, 20) // flat
	check(db, 60) // promoted to HNSW
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDisk(t, dir, opts)
	defer db.Close()
	if hits, err := db.Search(ctxb, vscope, zero, 5, nil); err != nil || len(hits) != 0 {
		t.Fatalf("zero query after reopen: %d hits, %v", len(hits), err)
	}
	if _, err := db.Search(ctxb, vscope, vecs[1], 10, nil); err != nil {
		t.Fatalf("query after reopen: %v", err)
	}
}

func allZero(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return len(v) > 0
}
