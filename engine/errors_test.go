package engine

import (
	"errors"
	"fmt"
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
