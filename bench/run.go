package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/engramdb/engram/index"
)

// Options configures [Run]. A nil *Options means defaults, and every zero
// field means its default.
type Options struct {
	// K is the number of neighbours each query asks for and recall is
	// measured at. Zero means 10.
	K int
	// Systems names the built-in systems to measure, in that order; nil
	// means all of [SystemNames].
	Systems []string
	// Extra systems are measured after the built-in ones.
	Extra []System
	// MaxQueries caps the queries given to every system (the first ones of
	// the data set). Zero means all.
	MaxQueries int
	// SlowQueries caps the queries given to exact peers that scan in plain
	// Go (chromem-go), whose rows then say "queries=N". Zero means 100; a
	// negative value means no cap.
	SlowQueries int
	// M is the HNSW graph degree given to every built-in HNSW system
	// (engram-hnsw, hnswlib). Zero means 16.
	M int
	// EfConstruction is the HNSW insert breadth. Zero means 200.
	EfConstruction int
	// Ef lists the search breadths swept for HNSW systems, cheapest first.
	// Nil means 10, 16, 24, 32, 48, 64, 96, 128, 192, 256.
	Ef []int
	// Seed seeds the systems that take one.
	Seed uint64
	// Python is the interpreter for the hnswlib peer. Empty means the first
	// of /usr/bin/python3 (Debian's, which sees python3-hnswlib) and
	// python3 on PATH that imports hnswlib and numpy.
	Python string
	// Logger receives progress and skip messages. Nil means silent.
	Logger *slog.Logger
}

var defaultEfs = []int{10, 16, 24, 32, 48, 64, 96, 128, 192, 256}

// withDefaults returns a copy of o with every zero field replaced by its
// default and every problem reported at once.
func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(out.K >= 0, "K %d is negative", out.K)
	check(out.MaxQueries >= 0, "MaxQueries %d is negative", out.MaxQueries)
	check(out.M == 0 || (out.M >= 2 && out.M <= 1024), "M %d outside [2, 1024]", out.M)
	check(out.EfConstruction >= 0 && out.EfConstruction <= 1<<16, "EfConstruction %d outside [0, 65536]", out.EfConstruction)
	for _, ef := range out.Ef {
		check(ef >= 1 && ef <= 1<<16, "Ef value %d outside [1, 65536]", ef)
	}
	seen := map[string]bool{}
	for _, s := range out.Systems {
		check(!seen[s], "system %q listed twice", s)
		seen[s] = true
	}
	for i, s := range out.Extra {
		check(s != nil, "Extra[%d] is nil", i)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	if out.K == 0 {
		out.K = 10
	}
	if out.Systems == nil {
		out.Systems = SystemNames()
	}
	if out.SlowQueries == 0 {
		out.SlowQueries = 100
	}
	if out.M == 0 {
		out.M = 16
	}
	if out.EfConstruction == 0 {
		out.EfConstruction = 200
	}
	if out.Ef == nil {
		out.Ef = defaultEfs
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out, nil
}

// Report is the outcome of one [Run]: a plain value, owned by the caller.
type Report struct {
	// Dataset, N and Dim describe the data; K is the k measured at.
	Dataset   string
	N, Dim, K int
	// Queries is how many queries each system ran (fewer for rows that
	// say "queries=N").
	Queries int
	// Procs is the number of goroutines of parallel builds (GOMAXPROCS).
	Procs int
	// Kernel names Engram's dot-product kernel ([index.Kernel]).
	Kernel string
	// Rows holds one measurement per system and parameter value, in the
	// order measured.
	Rows []Row
	// Skipped lists the systems that could not run, and why.
	Skipped []Skip
}

// Skip records a system [Run] could not measure.
type Skip struct {
	// System is the system's name.
	System string
	// Reason is the error that stopped it, such as [ErrUnavailable]'s
	// message for hnswlib without a python3 that imports it.
	Reason string
}

// Run measures every selected system on ds and returns their rows.
//
// For each system it builds the index from ds.Base on one goroutine and
// times it (build_seconds), measures its memory (bytes_per_vector: the
// index's own Bytes for a [Sizer], else the growth of the Go heap across
// the build, after a GC on each side), then for each swept parameter runs
// the queries on one goroutine, after ten untimed warm-up queries,
// and reports recall@k against ds.Truth and queries per second of wall
// time (the fastest of up to five passes over the queries, see
// maxPasses). A [ParallelBuilder] is then built again with GOMAXPROCS goroutines
// and swept again; those rows say "build_threads=N". The hnswlib peer
// runs the same protocol in a Python process (see hnswlib.py).
//
// "Single-thread" is enforced: Run sets GOMAXPROCS to 1 while it times a
// single-goroutine build or queries, and restores it afterwards, so
// peers that fan out internally (chromem-go) and the garbage collector
// share one core as hnswlib's num_threads=1 does. Run nothing else in the
// process meanwhile.
//
// A system that fails (an error, or a panic inside a peer) or cannot run
// (hnswlib absent) is listed in Report.Skipped and logged; Run itself
// returns an error only for bad options ([ErrInvalidOptions],
// [ErrUnknownSystem]), an unusable data set ([ErrInvalidDataset],
// [ErrDimensionMismatch]) or ctx's end. It may deepen ds.Truth to k by brute force.
func Run(ctx context.Context, ds *Dataset, opts *Options) (*Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	systems, err := lookup(o.Systems)
	if err != nil {
		return nil, err
	}
	if ds == nil {
		return nil, fmt.Errorf("%w: nil dataset", ErrInvalidDataset)
	}
	if err := ds.validate(); err != nil {
		return nil, err
	}
	if o.K > len(ds.Base) {
		return nil, fmt.Errorf("%w: K %d exceeds the %d base vectors", ErrInvalidOptions, o.K, len(ds.Base))
	}
	if err := ds.ensureTruth(ctx, o.K); err != nil {
		return nil, err
	}
	queries, truth := ds.Queries, ds.Truth
	if o.MaxQueries > 0 && o.MaxQueries < len(queries) {
		queries, truth = queries[:o.MaxQueries], truth[:o.MaxQueries]
	}
	rep := &Report{
		Dataset: ds.Name, N: len(ds.Base), Dim: ds.Dim, K: o.K,
		Queries: len(queries), Procs: runtime.GOMAXPROCS(0), Kernel: index.Kernel(),
	}
	cfg := config{m: o.M, efConstruction: o.EfConstruction, efs: o.Ef, seed: o.Seed}
	m := &measurer{ds: ds, queries: queries, truth: truth, k: o.K, opts: o, rep: rep}

	for _, b := range systems {
		var rows []Row
		var err error
		name := b.name
		if b.new == nil { // the out-of-process peer
			rows, err = runHNSWLib(ctx, ds, queries, truth, o.K, cfg, o.Python, o.Logger)
		} else {
			rows, err = m.system(ctx, b.new(cfg)) // the index is garbage once this returns
		}
		if err := m.record(ctx, name, rows, err); err != nil {
			return nil, err
		}
	}
	for _, s := range o.Extra {
		rows, err := m.system(ctx, s)
		if err := m.record(ctx, s.Name(), rows, err); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// measurer holds what every measurement of one Run shares.
type measurer struct {
	ds      *Dataset
	queries [][]float32
	truth   [][]int
	k       int
	opts    Options
	rep     *Report
}

// record adds a system's rows to the report, or its failure to Skipped.
// It returns only ctx's error, which ends the run.
func (m *measurer) record(ctx context.Context, name string, rows []Row, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		m.opts.Logger.Warn("skipped", "system", name, "reason", err.Error())
		m.rep.Skipped = append(m.rep.Skipped, Skip{System: name, Reason: err.Error()})
		return nil
	}
	m.rep.Rows = append(m.rep.Rows, rows...)
	return nil
}

// system measures one in-process System.
func (m *measurer) system(ctx context.Context, s System) ([]Row, error) {
	log := m.opts.Logger.With("system", s.Name())
	n := len(m.ds.Base)
	log.Info("building", "n", n, "dim", m.ds.Dim, "threads", 1)
	before := heapAlloc()
	var buildErr error
	build := singleThread(func() { buildErr = s.Build(ctx, m.ds.Base) })
	if buildErr != nil {
		return nil, buildErr
	}
	heap := max(int64(heapAlloc())-int64(before), 0)
	bytesPer, mem := float64(heap)/float64(n), "heap"
	if sz, ok := s.(Sizer); ok {
		bytesPer, mem = float64(sz.Bytes())/float64(n), "index"
	}
	log.Info("built", "seconds", build.Seconds(), "bytes_per_vector", round(bytesPer, 1),
		"heap_bytes_per_vector", round(float64(heap)/float64(n), 1))

	queries, truth, extra := m.queries, m.truth, ""
	if _, ok := s.(slowExact); ok && m.opts.SlowQueries > 0 && m.opts.SlowQueries < len(queries) {
		queries, truth = queries[:m.opts.SlowQueries], truth[:m.opts.SlowQueries]
		extra = fmt.Sprintf(",queries=%d", len(queries))
	}
	pb, parallel := s.(ParallelBuilder)
	threads := ""
	if parallel {
		threads = ",build_threads=1"
	}
	rows, err := m.sweep(ctx, s, queries, truth, build, bytesPer, ",mem="+mem+extra+threads)
	if err != nil || !parallel || m.rep.Procs < 2 {
		return rows, err
	}

	log.Info("building", "n", n, "dim", m.ds.Dim, "threads", m.rep.Procs)
	start := time.Now()
	if err := pb.BuildParallel(ctx, m.ds.Base, m.rep.Procs); err != nil {
		return rows, fmt.Errorf("parallel build: %w", err)
	}
	pbuild := time.Since(start)
	if sz, ok := s.(Sizer); ok {
		bytesPer = float64(sz.Bytes()) / float64(n)
	}
	log.Info("built", "seconds", pbuild.Seconds(), "threads", m.rep.Procs)
	more, err := m.sweep(ctx, s, queries, truth, pbuild, bytesPer, fmt.Sprintf(",mem=%s%s,build_threads=%d", mem, extra, m.rep.Procs))
	return append(rows, more...), err
}

// sweep measures s at every value of its Sweep (once, at 0, without one).
func (m *measurer) sweep(ctx context.Context, s System, queries [][]float32, truth [][]int, build time.Duration, bytesPer float64, suffix string) ([]Row, error) {
	params := s.Sweep()
	if len(params) == 0 {
		params = []int{0}
	}
	var rows []Row
	for _, p := range params {
		recall, qps, err := m.queriesAt(ctx, s, queries, truth, p)
		if err != nil {
			return nil, err
		}
		row := Row{
			System: s.Name(), Dataset: m.ds.Name, N: len(m.ds.Base), Dim: m.ds.Dim, K: m.k,
			Params: s.Params(p) + suffix, RecallAtK: recall, QPS: qps,
			BuildSeconds: build.Seconds(), BytesPerVector: bytesPer,
		}
		m.opts.Logger.Info("measured", "system", row.System, "params", row.Params,
			"recall", round(recall, 4), "qps", round(qps, 0))
		rows = append(rows, row)
	}
	return rows, nil
}

// Query passes: each parameter's queries run up to maxPasses times, until
// minPassTime has passed, and the fastest pass counts. One pass over
// siftsmall's 100 queries takes 2 ms at 50,000 QPS, where a single
// scheduler hiccup or GC cycle moved QPS by 40% between neighbouring ef
// values; the best of five is stable to a few per cent. A pass slower
// than minPassTime (chromem-go's) runs once.
const (
	maxPasses   = 5
	minPassTime = 100 * time.Millisecond
)

// queriesAt runs the queries at param on one goroutine under GOMAXPROCS 1,
// after up to ten untimed warm-up queries, and returns the mean recall@k
// of the first pass and the queries per second of the fastest.
func (m *measurer) queriesAt(ctx context.Context, s System, queries [][]float32, truth [][]int, param int) (recall, qps float64, err error) {
	k := m.k
	var scratch []int
	for _, q := range queries[:min(10, len(queries))] {
		if scratch, err = s.Search(scratch[:0], q, k, param); err != nil {
			return 0, 0, err
		}
	}
	results := make([][]int, len(queries))
	flat := make([]int, len(queries)*k)
	best, total := time.Duration(math.MaxInt64), time.Duration(0)
	for pass := 0; pass < maxPasses && total < minPassTime; pass++ {
		elapsed := singleThread(func() {
			for i, q := range queries {
				if i%64 == 0 && ctx.Err() != nil {
					err = ctx.Err()
					return
				}
				var got []int
				if got, err = s.Search(flat[i*k:i*k:(i+1)*k], q, k, param); err != nil {
					return
				}
				results[i] = got
			}
		})
		if err != nil {
			return 0, 0, err
		}
		if pass == 0 {
			var sum float64
			for i := range queries {
				sum += recallOne(results[i], truth[i], k)
			}
			recall = sum / float64(len(queries))
		}
		best, total = min(best, elapsed), total+elapsed
	}
	return recall, float64(len(queries)) / max(best.Seconds(), 1e-9), nil
}

// recallOne is the share of the first k ids of truth found among the
// first k ids of got. Repeated ids in got count once.
func recallOne(got, truth []int, k int) float64 {
	got, truth = got[:min(k, len(got))], truth[:min(k, len(truth))]
	hits := 0
	for _, t := range truth {
		if slices.Contains(got, t) {
			hits++
		}
	}
	return float64(hits) / float64(k)
}

// singleThread runs fn with GOMAXPROCS 1 and returns its wall time.
func singleThread(fn func()) time.Duration {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	start := time.Now()
	fn()
	return time.Since(start)
}

// heapAlloc returns the live heap after two full collections: the second
// frees what sync.Pool victim caches kept alive through the first, such as
// the previous system's search scratch.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}
