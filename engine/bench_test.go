package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/engramdb/engram/index"
)

// BenchmarkCrossover measures exact search against HNSW search (ef 64,
// k 10) at 384 dimensions over partition sizes, to place
// DefaultExactThreshold where HNSW starts to win. Each size's two rows are
// each other's peer.
func BenchmarkCrossover(b *testing.B) {
	const dim = 384
	vecs := randVecs(11, 16000+100, dim)
	queries := vecs[16000:]
	for _, n := range []int{500, 1000, 2000, 4000, 8000, 16000} {
		flat, _ := index.NewFlat(dim)
		h, _ := index.NewHNSW(dim, nil)
		for i, v := range vecs[:n] {
			_ = flat.Add(uint64(i), v)
			_ = h.Add(uint64(i), v)
		}
		b.Run(fmt.Sprintf("n=%d/exact", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				_, _ = flat.Search(queries[i%len(queries)], 10, nil)
				i++
			}
		})
		b.Run(fmt.Sprintf("n=%d/hnsw", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				_, _ = h.Search(queries[i%len(queries)], 10, nil)
				i++
			}
		})
	}
}

// BenchmarkOpenPersisted compares opening a persisted store (snapshot
// loaded, then the first search) with a rebuild of the same store (no
// snapshot). Its size comes from ENGRAM_BENCH_OPEN_N (default 100,000
// vectors of 384 dimensions); building the store takes minutes at the
// default, so run it alone:
//
//	go test -run '^$' -bench OpenPersisted -benchtime 1x -timeout 60m ./engine/
func BenchmarkOpenPersisted(b *testing.B) {
	n := 100000
	if s := os.Getenv("ENGRAM_BENCH_OPEN_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const dim = 384
	dir := b.TempDir()
	db, err := Open(dir, &Options{Durability: Async})
	if err != nil {
		b.Fatal(err)
	}
	vecs := randVecs(12, n+1, dim)
	start := time.Now()
	put(b, db, vscope, vecs[:n])
	built := time.Since(start)
	start = time.Now()
	if err := db.Close(); err != nil { // writes the snapshot
		b.Fatal(err)
	}
	b.Logf("built %d x %d in %v; Close wrote the snapshot in %v", n, dim, built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	files := snapFiles(b, dir)
	if len(files) != 1 {
		b.Fatalf("snapshot files: %v", files)
	}
	snap, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	openAndSearch := func(b *testing.B) time.Duration {
		t0 := time.Now()
		db, err := Open(dir, &Options{Durability: Async})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Search(ctxb, vscope, vecs[n], 10, nil); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		db.skipFinalSnapshot = true
		db.Close()
		return d
	}
	var withSnap, rebuild time.Duration
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			_ = os.WriteFile(files[0], snap, 0o600)
			withSnap = openAndSearch(b)
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			_ = os.Remove(filepath.Join(files[0]))
			rebuild = openAndSearch(b)
		}
	})
	b.Logf("open+first search: snapshot %v, rebuild %v (snapshot takes %.2f of the rebuild's time)",
		withSnap.Round(time.Millisecond), rebuild.Round(time.Millisecond), withSnap.Seconds()/rebuild.Seconds())
}
