package kv

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkOpen opens and closes a store of about 32 MiB in tables
// (ENGRAM_BENCH_KV_MB changes the size). Open verifies every table's
// checksums (see checkFiles), so this is the cost of verification at open;
// bench/results/checksums.md compares it with Badger's modes.
//
//	go test -run '^$' -bench Open -benchtime 5x ./kv/
func BenchmarkOpen(b *testing.B) {
	mb := 32
	if s := os.Getenv("ENGRAM_BENCH_KV_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	db, err := Open(dir, &Options{Durability: Async})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	val := make([]byte, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range mb * 1024 {
		for j := 0; j < len(val); j += 8 { // incompressible: tables as large as the data
			binary.LittleEndian.PutUint64(val[j:], rng.Uint64())
		}
		if err := db.Update(ctx, func(tx *Txn) error {
			return tx.Set([]byte(fmt.Sprintf("key/%08d", i)), val)
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("%.1f MiB of tables", float64(DiskUsage(dir).LSM)/(1<<20))
	for b.Loop() {
		db, err := Open(dir, &Options{Durability: Async})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncedUpdates measures synced single-key commits (about 200
// bytes, like one appended message) from 1 to 32 goroutines, with group
// commit (this package's way) and with Badger's per-commit SyncWrites (the
// way before it), in the same run. It reports commits/s, and for group
// commit the commits each fsync served. A third case fsyncs a 4 KiB
// overwrite of one file in a loop: the disk's own rate.
//
//	go test -run '^$' -bench SyncedUpdates -benchtime 2s ./kv/
func BenchmarkSyncedUpdates(b *testing.B) {
	ctx := context.Background()
	b.Run("disk-fsync", func(b *testing.B) {
		f, err := os.Create(b.TempDir() + "/probe")
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		if _, err := f.Write(make([]byte, 1<<20)); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			if _, err := f.WriteAt(buf, int64(i%256)*4096); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
	})
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"group-commit", Options{}},
		{"badger-syncwrites", Options{perCommitSync: true}},
		{"async", Options{Durability: Async}},
	} {
		for _, clients := range []int{1, 2, 4, 8, 16, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode.name, clients), func(b *testing.B) {
				db := openTest(b, b.TempDir(), &mode.opts)
				val := make([]byte, 200)
				var next atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							key := []byte(fmt.Sprintf("k/%012d", i))
							if err := db.Update(ctx, func(tx *Txn) error { return tx.Set(key, val) }); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
				if commits, syncs := db.SyncStats(); syncs > 0 {
					b.ReportMetric(float64(commits)/float64(syncs), "commits/fsync")
				}
			})
		}
	}
}
