package kv

import (
	"runtime"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/engramdb/engram/kv/kvtest"
)

// heapAfterOpen returns the live heap that open adds, measured after a GC.
func heapAfterOpen(t *testing.T, open func(dir string) (close func())) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	closeFn := open(t.TempDir())
	runtime.GC()
	runtime.ReadMemStats(&after)
	closeFn()
	return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}

// TestOpenHeapFootprint measures the heap an open store holds with our
// defaults against Badger's DefaultOptions in the same run, and requires ours
// to be at most a quarter of it. The README quotes the figures it logs.
func TestOpenHeapFootprint(t *testing.T) {
	kvtest.SkipOnPostgres(t, "measures Badger's heap at open against Badger's defaults")
	peer := heapAfterOpen(t, func(dir string) func() {
		db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
		if err != nil {
			t.Fatal(err)
		}
		return func() { db.Close() }
	})
	ours := heapAfterOpen(t, func(dir string) func() {
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return func() { db.Close() }
	})
	t.Logf("heap held after open: badger DefaultOptions %.1f MiB, engram kv defaults %.1f MiB (%.1fx less)",
		float64(peer)/(1<<20), float64(ours)/(1<<20), float64(peer)/float64(max(ours, 1)))
	if ours*4 > peer {
		t.Errorf("kv defaults hold %d bytes after open; want at most a quarter of Badger's %d", ours, peer)
	}
}
