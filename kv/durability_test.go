package kv

import (
	"testing"
)

// TestDurabilityReachesBadger checks the option Badger was actually opened
// with, through the unexported handle: with Sync every commit must fsync
// the write-ahead log (Badger's SyncWrites), with Async none may.
// TestDurabilityKill9 in package memory cannot tell the two apart, because
// a killed process leaves its writes in the OS page cache; only a power
// loss would, so this test is what fails when Sync stops reaching Badger.
func TestDurabilityReachesBadger(t *testing.T) {
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
			if got, want := db.bdb.Opts().SyncWrites, tt.want == Sync; got != want {
				t.Errorf("Badger opened with SyncWrites %v for %v, want %v", got, tt.want, want)
			}
		})
	}
}
