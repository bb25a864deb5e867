package memory

import (
	"errors"
	"strings"
	"testing"
)

// TestBlockCacheBytes checks that Options.BlockCacheBytes reaches the
// store's Badger block cache, the default included, and that a negative
// size is refused as an option.
func TestBlockCacheBytes(t *testing.T) {
	for _, c := range []struct {
		opt, want int64
	}{
		{0, 8 << 20},
		{64 << 20, 64 << 20},
	} {
		s, err := Open(t.TempDir(), &Options{BlockCacheBytes: c.opt})
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if s.db.KV().Postgres() {
			want = 0 // ENGRAM_TEST_BACKEND=postgres: no Badger, no block cache
		}
		if got := s.db.KV().BlockCacheSize(); got != want {
			t.Errorf("BlockCacheBytes %d: the block cache is %d bytes, want %d", c.opt, got, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(t.TempDir(), &Options{BlockCacheBytes: -1})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "BlockCacheBytes") {
		t.Fatalf("Open with BlockCacheBytes -1 = %v, want ErrInvalidOptions naming BlockCacheBytes", err)
	}
}
