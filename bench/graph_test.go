package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv"
)

// The graph benchmarks run on a real on-disk store with the default
// options (synced writes, the small-footprint caches), loaded with
// graph.Store.Load. Latencies are per query, sorted, and reported as
// p50/p99 in µs; compare them with a peer measured in the same run
// (bench/cayley), not across runs, on a shared machine. Every one of them
// builds large data and skips under -short. Results: results/graph.md.
//
//	go test ./bench/ -run '^$' -bench 'Graph' -benchtime 2000x -timeout 60m

const (
	// graphBenchFacts is the size of the graph the traversal and open
	// benchmarks share.
	graphBenchFacts = 1_000_000
	// graphBenchSeed seeds PowerLawFacts and GraphSeeds; bench/cayley uses
	// the same, so both peers see the same graph and the same seeds.
	graphBenchSeed = 1
	// graphBenchSeeds is how many seed entities the queries cycle through.
	graphBenchSeeds = 1000
)

// graphBenchRoot is the key prefix the benchmark graphs live under.
var graphBenchRoot = []byte("g")

// graphStores lists the builds of the 1M-fact store that
// BenchmarkGraphTraverse queries, comma-separated: "bulk" (Load into an
// empty store: its bulk path), "txn" (Load through transactions, as into
// a store that holds other data), "compact" ("txn", then kv.DB.Compact).
var graphStores = flag.String("graph-stores", "bulk", "builds of the 1M-fact graph to traverse: bulk,txn,compact")

// bigGraphs are the 1M-fact graphs, one per build, each built once per
// process into a temporary directory (removed by TestMain) and closed, so
// that each benchmark opens it as it needs.
var bigGraphs struct {
	sync.Mutex
	dir    string
	facts  []graph.Fact
	seeds  []string
	builds map[string]*bigGraph
}

type bigGraph struct {
	once  sync.Once
	stats graph.LoadStats
	load  time.Duration
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigGraphs.dir != "" {
		os.RemoveAll(bigGraphs.dir)
	}
	os.Exit(code)
}

// otherKey is what a load through transactions finds in the store: data
// outside the graph, as package memory keeps beside it, which makes
// graph.Store.Load leave its bulk path.
var otherKey = []byte("\x00bench: not graph data")

// loadGraph loads facts into a new store in dir and closes it; it returns
// what Load did and how long Load alone took. build is "bulk" (an empty
// store) or "txn" (a store holding otherKey); see graphStores.
func loadGraph(dir string, facts []graph.Fact, build string) (graph.LoadStats, time.Duration, error) {
	st, wall, _, err := loadGraphCPU(dir, facts, build)
	return st, wall, err
}

// loadGraphCPU is loadGraph also returning the process's CPU time during
// Load (0 where it is not measured).
func loadGraphCPU(dir string, facts []graph.Fact, build string) (graph.LoadStats, time.Duration, time.Duration, error) {
	db, err := kv.Open(dir, nil)
	if err != nil {
		return graph.LoadStats{}, 0, 0, err
	}
	s, err := graph.New(nil)
	if err != nil {
		db.Close()
		return graph.LoadStats{}, 0, 0, err
	}
	ctx := context.Background()
	if build != "bulk" {
		err = db.Update(ctx, func(tx *kv.Txn) error { return tx.Set(otherKey, nil) })
	}
	var st graph.LoadStats
	cpu0 := processCPU()
	start := time.Now()
	if err == nil {
		st, err = s.Load(ctx, db, graphBenchRoot, &graph.Dump{Facts: facts}, nil)
	}
	elapsed := time.Since(start)
	cpu1 := processCPU()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return st, elapsed, cpu1 - cpu0, err
}

// bigGraphDir returns the directory of the 1M-fact graph built as build
// says, building it on first use, and the seeds to query it from.
func bigGraphDir(b *testing.B, build string) (string, []string) {
	b.Helper()
	bigGraphs.Lock()
	var err error
	if bigGraphs.dir == "" {
		bigGraphs.facts = PowerLawFacts(graphBenchFacts, graphBenchSeed)
		bigGraphs.seeds = GraphSeeds(bigGraphs.facts, graphBenchSeeds, graphBenchSeed)
		bigGraphs.builds = map[string]*bigGraph{}
		bigGraphs.dir, err = os.MkdirTemp("", "engram-bench-graph-")
	}
	g := bigGraphs.builds[build]
	if g == nil {
		g = &bigGraph{}
		bigGraphs.builds[build] = g
	}
	bigGraphs.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(bigGraphs.dir, build)
	g.once.Do(func() {
		if build == "compact" {
			// A copy of the txn build, compacted: one load fewer.
			src, _ := bigGraphDir(b, "txn")
			start := time.Now()
			g.err = compactCopy(src, dir)
			b.Logf("copied and compacted the txn graph in %v", time.Since(start))
			return
		}
		g.stats, g.load, g.err = loadGraph(dir, bigGraphs.facts, build)
		b.Logf("built the %d-fact graph (%s) in %v", graphBenchFacts, build, g.load)
	})
	if g.err != nil {
		b.Fatalf("build the %d-fact graph (%s): %v", graphBenchFacts, build, g.err)
	}
	return dir, bigGraphs.seeds
}

// compactCopy copies the closed store in src to dst and runs
// kv.DB.Compact on the copy.
func compactCopy(src, dst string) error {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	db, err := kv.Open(dst, nil)
	if err != nil {
		return err
	}
	err = db.Compact(context.Background())
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func skipLarge(b *testing.B) {
	b.Helper()
	if testing.Short() {
		b.Skip("builds a graph of up to a million facts on disk; skipped in -short mode")
	}
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkGraphLoad measures Store.Load of a power-law graph into a new
// on-disk store with synced commits: facts/s is the median over
// iterations of facts / Load time (opening and closing the store are not
// timed). path=bulk loads an empty store (Load's bulk path), path=txn a
// store holding one other key (Load's transactions).
func BenchmarkGraphLoad(b *testing.B) {
	skipLarge(b)
	for _, c := range []struct {
		n    int
		path string
	}{{100_000, "bulk"}, {100_000, "txn"}, {1_000_000, "bulk"}, {1_000_000, "txn"}} {
		n := c.n
		b.Run(fmt.Sprintf("facts=%d/path=%s", n, c.path), func(b *testing.B) {
			facts := PowerLawFacts(n, graphBenchSeed)
			b.ReportAllocs()
			b.ResetTimer()
			rates := make([]float64, 0, b.N)
			cpuRates := make([]float64, 0, b.N)
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				b.StartTimer()
				st, d, cpu, err := loadGraphCPU(dir, facts, c.path)
				if err != nil {
					b.Fatal(err)
				}
				if cpu > 0 {
					cpuRates = append(cpuRates, float64(n)/cpu.Seconds())
				}
				if st.Facts != n {
					b.Fatalf("stored %d facts (%d duplicates), want %d", st.Facts, st.Duplicates, n)
				}
				rates = append(rates, float64(n)/d.Seconds())
			}
			slices.Sort(rates)
			b.ReportMetric(rates[len(rates)/2], "facts/s")
			if len(cpuRates) > 0 {
				// Facts per second of the process's CPU time during Load
				// (all goroutines): on an oversubscribed machine, wall
				// time measures the wait for a core.
				slices.Sort(cpuRates)
				b.ReportMetric(cpuRates[len(cpuRates)/2], "facts/cpu-s")
			}
		})
	}
}

// BenchmarkGraphTraverse measures Traverse on the 1M-fact graph from
// seeds drawn uniformly over entities, one query per op, each in its own
// read transaction (the View is timed: a caller pays for it). The
// default fan-out bound (graph.DefaultMaxFanout) and Limit apply. Before
// timing, one untimed pass over the seeds warms the OS page cache and
// Badger's caches, the state of a store in use.
//
// Besides wall time it reports each query's CPU time on its thread
// (p50-cpu-µs, p99-cpu-µs; Linux only): on a shared machine whose cores
// are oversubscribed, wall-time tails are mostly waiting for a core, and
// the CPU time is what a before/after comparison can trust.
//
// It runs on each build of the store that -graph-stores names (bulk by
// default), as sub-benchmarks store=<build>.
func BenchmarkGraphTraverse(b *testing.B) {
	skipLarge(b)
	for _, build := range strings.Split(*graphStores, ",") {
		b.Run("store="+build, func(b *testing.B) { benchTraverse(b, build) })
	}
}

func benchTraverse(b *testing.B, build string) {
	dir, seeds := bigGraphDir(b, build)
	db, err := kv.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s, err := graph.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	traverse := func(q graph.TraverseQuery) (int, error) {
		var n int
		err := s.View(ctx, db, graphBenchRoot, func(tx *graph.Tx) error {
			res, err := tx.Traverse(q)
			n = len(res.Steps)
			return err
		})
		return n, err
	}
	for _, seed := range seeds {
		if _, err := traverse(graph.TraverseQuery{From: []string{seed}, MaxHops: 3}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		hops int
		dir  graph.Direction
	}{{2, graph.Both}, {3, graph.Both}, {2, graph.Out}, {3, graph.Out}} {
		b.Run(fmt.Sprintf("hops=%d/dir=%v", c.hops, c.dir), func(b *testing.B) {
			b.ReportAllocs()
			durs := make([]time.Duration, 0, b.N)
			cpus := make([]time.Duration, 0, b.N)
			total := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			for i := range b.N {
				q := graph.TraverseQuery{From: []string{seeds[i%len(seeds)]}, MaxHops: c.hops, Direction: c.dir}
				cpu0, cpuOK := threadCPU()
				start := time.Now()
				n, err := traverse(q)
				durs = append(durs, time.Since(start))
				if cpu1, ok := threadCPU(); ok && cpuOK {
					cpus = append(cpus, cpu1-cpu0)
				}
				if err != nil {
					b.Fatal(err)
				}
				total += n
			}
			b.StopTimer()
			slices.Sort(durs)
			b.ReportMetric(micros(quantile(durs, 0.50)), "p50-µs")
			b.ReportMetric(micros(quantile(durs, 0.99)), "p99-µs")
			if len(cpus) > 0 {
				slices.Sort(cpus)
				b.ReportMetric(micros(quantile(cpus, 0.50)), "p50-cpu-µs")
				b.ReportMetric(micros(quantile(cpus, 0.99)), "p99-cpu-µs")
			}
			b.ReportMetric(float64(total)/float64(b.N), "facts/query")
		})
	}
}

// BenchmarkGraphOpen measures opening the 1M-fact store's directory
// (kv.Open) plus the first 2-hop traversal on it, with the directory in
// the OS page cache (a process restart, not a cold boot). Closing is not
// timed. open-ms and first-traverse-µs are medians over iterations.
func BenchmarkGraphOpen(b *testing.B) {
	skipLarge(b)
	dir, seeds := bigGraphDir(b, "bulk")
	s, err := graph.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opens := make([]time.Duration, 0, b.N)
	firsts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		db, err := kv.Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Now()
		err = s.View(ctx, db, graphBenchRoot, func(tx *graph.Tx) error {
			_, err := tx.Traverse(graph.TraverseQuery{From: []string{seeds[i%len(seeds)]}, MaxHops: 2})
			return err
		})
		done := time.Now()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		opens = append(opens, opened.Sub(start))
		firsts = append(firsts, done.Sub(opened))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(opens)
	slices.Sort(firsts)
	b.ReportMetric(float64(quantile(opens, 0.5))/float64(time.Millisecond), "open-ms")
	b.ReportMetric(micros(quantile(firsts, 0.5)), "first-traverse-µs")
}

// TestPowerLawFacts checks the generator on a small graph: the size, no
// repeated triple, determinism, and a hub well above the median degree.
func TestPowerLawFacts(t *testing.T) {
	const n = 5000
	facts := PowerLawFacts(n, 7)
	if len(facts) != n {
		t.Fatalf("got %d facts, want %d", len(facts), n)
	}
	if !slices.Equal(facts, PowerLawFacts(n, 7)) {
		t.Fatal("same seed gave different facts")
	}
	if slices.Equal(facts, PowerLawFacts(n, 8)) {
		t.Fatal("different seeds gave the same facts")
	}
	triples := map[[3]string]bool{}
	degree := map[string]int{}
	preds := map[string]bool{}
	for _, f := range facts {
		k := [3]string{f.Subject, f.Predicate, f.Object}
		if triples[k] {
			t.Fatalf("triple %v repeated", k)
		}
		triples[k] = true
		degree[f.Subject]++
		degree[f.Object]++
		preds[f.Predicate] = true
	}
	if len(degree) > n/PowerLawEntitiesPerFact {
		t.Errorf("%d entities, want at most %d", len(degree), n/PowerLawEntitiesPerFact)
	}
	if len(preds) != PowerLawPredicates {
		t.Errorf("%d predicates, want %d", len(preds), PowerLawPredicates)
	}
	degrees := make([]int, 0, len(degree))
	for _, d := range degree {
		degrees = append(degrees, d)
	}
	slices.Sort(degrees)
	if top, median := degrees[len(degrees)-1], degrees[len(degrees)/2]; top < 50*median {
		t.Errorf("top degree %d is not a hub against median %d", top, median)
	}
	if PowerLawFacts(0, 1) != nil {
		t.Error("n=0 gave facts")
	}
}

// TestGraphSeeds checks that seeds are entities with facts, deterministic,
// and spread over many entities.
func TestGraphSeeds(t *testing.T) {
	facts := PowerLawFacts(5000, 7)
	named := map[string]bool{}
	for _, f := range facts {
		named[f.Subject] = true
		named[f.Object] = true
	}
	seeds := GraphSeeds(facts, 200, 3)
	if len(seeds) != 200 {
		t.Fatalf("got %d seeds, want 200", len(seeds))
	}
	if !slices.Equal(seeds, GraphSeeds(facts, 200, 3)) {
		t.Fatal("same seed gave different seeds")
	}
	distinct := map[string]bool{}
	for _, s := range seeds {
		if !named[s] {
			t.Fatalf("seed %q has no fact", s)
		}
		distinct[s] = true
	}
	if len(distinct) < 100 {
		t.Errorf("only %d distinct seeds of 200 over %d entities", len(distinct), len(named))
	}
	if GraphSeeds(nil, 5, 1) != nil || GraphSeeds(facts, 0, 1) != nil {
		t.Error("no facts or k=0 gave seeds")
	}
}
