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
