package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv"
)

// TestConvertStorageFaults checks that kv's fault errors reach callers of
// the engine (and, through the re-exports, of package memory) as the
// engine's sentinels, keeping kv's detail (the damaged file's name).
func TestConvertStorageFaults(t *testing.T) {
	for _, tc := range []struct {
		kv, want error
	}{
		{kv.ErrCorrupt, ErrCorrupt},
		{kv.ErrDiskFull, ErrDiskFull},
	} {
		in := fmt.Errorf("%w: /data/000007.sst: checksum mismatch", tc.kv)
		got := convert(in)
		if !errors.Is(got, tc.want) {
			t.Errorf("convert(%v) = %v, want %v", in, got, tc.want)
		}
		if got.Error() == tc.want.Error() {
			t.Errorf("convert(%v) = %v: lost the detail", in, got)
		}
	}
}

// TestSentinelPrefix: every sentinel names its package, as the style asks
// ("kv: not found", "sql: no rows in result set"); they said "engram: ".
func TestSentinelPrefix(t *testing.T) {
	for _, err := range []error{
		ErrInvalidScope, ErrClosed, ErrNotFound, ErrTooLarge, ErrConflict,
		ErrLocked, ErrEncryptionKey, ErrInvalidOptions, ErrDimensionMismatch,
		ErrInvalidRecord, ErrInvalidTime, ErrCorrupt, ErrDiskFull,
	} {
		if !strings.HasPrefix(err.Error(), "engine: ") {
			t.Errorf("%q does not start with %q", err, "engine: ")
		}
	}
}

// TestUpdateRetriesStatementConflict: a conflict that a statement inside
// the transaction reports (PostgreSQL does, where Badger reports them only
// at the commit) reaches fn through Tx's methods as ErrConflict, and
// Update runs fn again instead of failing. It used to fail at once: the
// converted error no longer matched kv's, and appends to one busy user on
// PostgreSQL failed with "transaction conflict" after a single try.
func TestUpdateRetriesStatementConflict(t *testing.T) {
	db := openMemDB(t)
	runs := 0
	err := db.Update(ctxb, func(tx *Tx) error {
		runs++
		if runs == 1 {
			// What Tx.Get or Tx.Set return for a statement's 40001.
			return fmt.Errorf("append message 0: %w", convert(fmt.Errorf("%w: could not serialize access", kv.ErrConflict)))
		}
		return tx.Set([]byte("k"), []byte("v"))
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update = %v after %d runs, want nil after 2", err, runs)
	}
	if !errors.Is(convert(kv.ErrCorrupt), kv.ErrCorrupt) || !errors.Is(convert(kv.ErrCorrupt), ErrCorrupt) {
		t.Error("a converted error matches neither kv's sentinel nor engine's")
	}
}
