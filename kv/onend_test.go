package kv

import (
	"errors"
	"testing"
)

// TestTxnOnEnd: the functions registered with OnEnd run once, after the
// commit is visible (Committed), or when the transaction fails, panics,
// conflicts or only reads (Aborted).
func TestTxnOnEnd(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	var got []Outcome
	record := func(tx *Txn) { tx.OnEnd(func(o Outcome) { got = append(got, o) }) }
	visible := false
	err := db.Update(t.Context(), func(tx *Txn) error {
		tx.OnEnd(func(Outcome) {
			visible = db.View(t.Context(), func(tx *Txn) error {
				_, err := tx.Get([]byte("k"))
				return err
			}) == nil
		})
		record(tx)
		return tx.Set([]byte("k"), []byte("v"))
	})
	if err != nil || !visible {
		t.Fatalf("commit: %v, visible to OnEnd: %v", err, visible)
	}
	failed := errors.New("failed")
	if err := db.Update(t.Context(), func(tx *Txn) error { record(tx); return failed }); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = db.Update(t.Context(), func(tx *Txn) error { record(tx); panic("boom") })
	}()
	_ = db.View(t.Context(), func(tx *Txn) error { record(tx); return nil })
	want := []Outcome{Committed, Aborted, Aborted, Aborted}
	if db.Postgres() {
		// SERIALIZABLE fails only a cycle of dependencies, not this one.
		if len(got) != len(want) || got[0] != Committed || got[1] != Aborted || got[2] != Aborted || got[3] != Aborted {
			t.Fatalf("outcomes %v, want %v", got, want)
		}
		return
	}
	// A conflict (Badger): a read key written by a commit in between.
	err = db.Update(t.Context(), func(tx *Txn) error {
		record(tx)
		if _, err := tx.Get([]byte("k")); err != nil {
			return err
		}
		if err := db.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("w")) }); err != nil {
			return err
		}
		return tx.Set([]byte("j"), []byte("x"))
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("want a conflict, got %v", err)
	}
	want = append(want, Aborted)
	if len(got) != len(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("outcomes %v, want %v", got, want)
		}
	}
}
