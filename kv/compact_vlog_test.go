package kv

import (
	"bytes"
	"context"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestFaultErasureValueLog: a value large enough for the value log
// (above the value threshold) is in no file after its deletion and
// Compact, though it sat in the value-log file being written, which
// Badger's garbage collector never rewrites.
func TestFaultErasureValueLog(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's value log after Compact")
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	secret := []byte("vlog-secret-zqxwvkjq ")
	big := bytes.Repeat(secret, 900<<10/len(secret))
	if err := db.Update(ctx, func(tx *Txn) error {
		if err := tx.Set([]byte("big"), big); err != nil {
			return err
		}
		return tx.Set([]byte("kept"), []byte("small"))
	}); err != nil {
		t.Fatal(err)
	}
	if len(holdingKV(t, dir, secret)) == 0 {
		t.Fatal("the large value is in no file: the check proves nothing")
	}
	if err := db.Update(ctx, func(tx *Txn) error { return tx.Delete([]byte("big")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if hits := holdingKV(t, dir, secret); len(hits) > 0 {
		t.Errorf("after Compact the large value is in %v", hits)
	}
	// The store works on after the reopen Compact needed.
	if err := db.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("kept"))
		if err != nil || string(v) != "small" {
			t.Errorf("kept = %q, %v", v, err)
		}
		_, err = tx.Get([]byte("big"))
		if err != ErrNotFound {
			t.Errorf("big: %v, want ErrNotFound", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.TxnLimits(); n <= 0 {
		t.Errorf("TxnLimits after Compact: %d entries", n)
	}
}
