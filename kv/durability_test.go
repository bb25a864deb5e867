package kv

import (
	"context"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestDurabilityReachesDisk checks, through the unexported handle, that
// the durability the store was opened with decides whether commits are
// fsynced: with Sync every Update waits for a sync of the logs (group
// commit, groupsync.go; Badger's own SyncWrites stays off), with Async
// none does. TestDurabilityKill9 in package memory cannot tell the two
// apart, because a killed process leaves its writes in the OS page cache;
// only a power loss would, so this test is what fails when Sync stops
// reaching the disk.
func TestDurabilityReachesDisk(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's fsync of its logs")
	for _, tt := range []struct {
		name string
		opts *Options
		want Durability
	}{
		{"nil options", nil, Sync},
		{"zero value", &Options{}, Sync},
		{"Sync", &Options{Durability: Sync}, Sync},
		{"Async", &Options{Durability: Async}, Async},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), tt.opts)
			if got := db.Durability(); got != tt.want {
				t.Errorf("Durability() = %v, want %v", got, tt.want)
			}
			if db.bdb.Opts().SyncWrites {
				t.Errorf("Badger opened with SyncWrites; commits would be synced one at a time")
			}
			for i := range 3 {
				if err := db.Update(context.Background(), func(tx *Txn) error {
					return tx.Set([]byte{byte(i)}, []byte("v"))
				}); err != nil {
					t.Fatal(err)
				}
			}
			commits, syncs := db.SyncStats()
			want := uint64(0)
			if tt.want == Sync {
				want = 3 // one at a time: each Update waits for its own
			}
			if commits != want || syncs != want {
				t.Errorf("%d synced commits and %d syncs of the logs for 3 Updates with %v, want %d and %d", commits, syncs, tt.want, want, want)
			}
		})
	}
}
