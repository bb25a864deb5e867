package engine

import (
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestDurabilityReachesKV checks that Options.Durability reaches the key
// value store (whose own test checks that it reaches Badger's fsync
// setting), and that Stats reports it.
func TestDurabilityReachesKV(t *testing.T) {
	kvtest.SkipOnPostgres(t, "a PostgreSQL store's commits are as durable as the server's synchronous_commit makes them: kv reports Sync whatever the option")
	for _, tt := range []struct {
		name string
		opts *Options
		want Durability
	}{
		{"nil options", nil, Sync},
		{"Sync", &Options{Durability: Sync}, Sync},
		{"Async", &Options{Durability: Async}, Async},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openDisk(t, t.TempDir(), tt.opts)
			defer db.Close()
			if got := db.KV().Durability(); got != tt.want {
				t.Errorf("kv Durability() = %v, want %v", got, tt.want)
			}
			if got := db.Stats().Durability; got != tt.want {
				t.Errorf("Stats().Durability = %v, want %v", got, tt.want)
			}
		})
	}
}
