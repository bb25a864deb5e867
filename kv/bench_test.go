package kv

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
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
