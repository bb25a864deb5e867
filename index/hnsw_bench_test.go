package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// readFvecsFile reads a TEXMEX .fvecs file (each vector is its dimension
// as a little-endian int32, then that many float32); ok is false when the
// file is missing or malformed.
func readFvecsFile(path string) ([][]float32, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var out [][]float32
	for len(raw) >= 4 {
		d := int(binary.LittleEndian.Uint32(raw))
		if d < 1 || len(raw) < 4+4*d {
			return nil, false
		}
		v := make([]float32, d)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4+4*i:]))
		}
		out = append(out, v)
		raw = raw[4+4*d:]
	}
	return out, len(out) > 0
}

type benchSet struct {
	h       *HNSW
	queries [][]float32
}

var (
	siftOnce  sync.Once
	siftSet   benchSet
	synthOnce sync.Once
	synthSet  benchSet
)

// benchIndex builds the index once per process with one goroutine, as
// `engram bench ann` does for its single-thread rows.
func benchIndex(tb testing.TB, base [][]float32) *HNSW {
	h, err := NewHNSW(len(base[0]), &HNSWOptions{M: 16, EfConstruction: 200, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	for i, v := range base {
		if err := h.Add(uint64(i), v); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

// BenchmarkHNSWSearch times single-goroutine searches at the ef where both
// Engram and hnswlib first reach the recall target: siftsmall
// (10,000 × 128, from ../../shared/data, skipped when absent) at ef 24, and
// a 20,000 × 384 clustered set at ef 16. One op is one query.
func BenchmarkHNSWSearch(b *testing.B) {
	b.Run("sift10k/ef24", func(b *testing.B) { runSearchBench(b, loadSift(b), 24) })
	b.Run("synth20k384/ef16", func(b *testing.B) { runSearchBench(b, loadSynth(b), 16) })
	// The same siftsmall graph with one node deleted: searches of an index
	// that ever had a delete take the heap walk.
	b.Run("sift10k-deleted/ef24", func(b *testing.B) { runSearchBench(b, loadSiftDeleted(b), 24) })
}

var (
	siftDelOnce sync.Once
	siftDelSet  benchSet
)

// loadSiftDeleted is loadSift's data in a second index, with node 0
// deleted.
func loadSiftDeleted(tb testing.TB) benchSet {
	siftDelOnce.Do(func() {
		if base, queries, ok := readSift(); ok {
			h := benchIndex(tb, base)
			h.Delete(0)
			siftDelSet = benchSet{h, queries}
		}
	})
	if siftDelSet.h == nil {
		tb.Skip("no siftsmall data set")
	}
	return siftDelSet
}

// loadSift returns siftsmall's index and queries, built once per process;
// it skips when the data set is absent.
func loadSift(tb testing.TB) benchSet {
	siftOnce.Do(func() {
		if base, queries, ok := readSift(); ok {
			siftSet = benchSet{benchIndex(tb, base), queries}
		}
	})
	if siftSet.h == nil {
		tb.Skip("no siftsmall data set")
	}
	return siftSet
}

// readSift reads siftsmall's base and query vectors from ../shared/data.
func readSift() (base, queries [][]float32, ok bool) {
	dir := filepath.Join("..", "..", "shared", "data", "siftsmall")
	base, ok = readFvecsFile(filepath.Join(dir, "siftsmall_base.fvecs"))
	queries, ok2 := readFvecsFile(filepath.Join(dir, "siftsmall_query.fvecs"))
	return base, queries, ok && ok2
}

// loadSynth returns a 20,000 × 384 clustered index and 200 queries, built
// once per process.
func loadSynth(tb testing.TB) benchSet {
	synthOnce.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		all := clustered(rng, 20000+200, 384, 200)
		synthSet = benchSet{benchIndex(tb, all[:20000]), all[20000:]}
	})
	return synthSet
}

func runSearchBench(b *testing.B, set benchSet, ef int) {
	opts := &SearchOptions{Ef: ef}
	// On a shared machine wall time includes time descheduled: also report
	// this thread's CPU time per query, which is steadier.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU()
	for i := 0; b.Loop(); i++ {
		if _, err := set.h.Search(set.queries[i%len(set.queries)], 10, opts); err != nil {
			b.Fatal(err)
		}
	}
	if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
