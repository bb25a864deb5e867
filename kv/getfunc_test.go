package kv

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestGetFunc: GetFunc gives fn the value Get returns, ErrNotFound and
// ErrEmptyKey as Get does, and fn's own error unchanged.
func TestGetFunc(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) { testGetFunc(t, b.open(t, nil)) })
}

func testGetFunc(t *testing.T, db *DB) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("v"), 200<<10) // large enough for the value log on disk
	err := db.Update(ctx, func(tx *Txn) error {
		if err := tx.Set([]byte("k"), []byte("value")); err != nil {
			return err
		}
		if err := tx.Set([]byte("empty"), nil); err != nil {
			return err
		}
		return tx.Set([]byte("big"), big)
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = db.View(ctx, func(tx *Txn) error {
		for _, k := range []string{"k", "empty", "big"} {
			want, err := tx.Get([]byte(k))
			if err != nil {
				return err
			}
			var got []byte
			called := false
			if err := tx.GetFunc([]byte(k), func(v []byte) error { called, got = true, bytes.Clone(v); return nil }); err != nil {
				t.Errorf("GetFunc(%q): %v", k, err)
			}
			if !called || !bytes.Equal(got, want) {
				t.Errorf("GetFunc(%q) gave %d bytes (called %v), Get %d", k, len(got), called, len(want))
			}
		}
		if err := tx.GetFunc([]byte("k"), func([]byte) error { return boom }); err != boom {
			t.Errorf("fn's error: %v", err)
		}
		if err := tx.GetFunc([]byte("missing"), func([]byte) error { t.Error("called for a missing key"); return nil }); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing key: %v", err)
		}
		if err := tx.GetFunc(nil, func([]byte) error { return nil }); !errors.Is(err, ErrEmptyKey) {
			t.Errorf("empty key: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
