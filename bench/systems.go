package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// System is one nearest-neighbour implementation under test. [Run] drives
// it from a single goroutine: Build once, then Search for every query at
// every value of Sweep. The built-in peers implement it; pass your own in
// [Options.Extra].
type System interface {
	// Name identifies the system in reports, such as "engram-hnsw".
	Name() string
	// Build indexes base, giving base[i] the id i, using only the calling
	// goroutine. It replaces anything built before. The harness times it
	// and may measure the heap around it, so it should hold copies of the
	// vectors it keeps, as a real user's index would.
	Build(ctx context.Context, base [][]float32) error
	// Sweep returns the search-parameter values to measure, cheapest first,
	// such as HNSW's ef; nil for a system without one (exact search), which
	// is measured once with param 0.
	Sweep() []int
	// Search appends to dst the ids of the (at most) k base vectors it
	// finds nearest to q by cosine similarity, nearest first, searching
	// with param, and returns the extended slice.
	Search(dst []int, q []float32, k, param int) ([]int, error)
	// Params describes a measurement at param for the report, as
	// comma-separated key=value pairs: "M=16,efc=200,ef=64".
	Params(param int) string
}

// ParallelBuilder is implemented by a [System] whose index can be built by
// several goroutines at once; [Run] then measures a second build with one
// goroutine per core and reports it as its own series.
type ParallelBuilder interface {
	System
	// BuildParallel is Build with workers goroutines inserting
	// concurrently.
	BuildParallel(ctx context.Context, base [][]float32, workers int) error
}

// Sizer is implemented by a [System] that can say how much memory its
// index holds; [Run] reports that instead of the heap growth it measures
// around Build.
type Sizer interface {
	System
	// Bytes returns the memory held by the built index.
	Bytes() int64
}

// slowExact is implemented by exact systems too slow to run every query
// of a large data set (chromem-go scans every vector in plain Go); [Run]
// gives them at most Options.SlowQueries queries.
type slowExact interface {
	slowExact()
}

// config is what the built-in systems are built with.
type config struct {
	m, efConstruction int
	efs               []int
	seed              uint64
}

// builtin is one entry of the systems table: a System constructor, or
// nil for a peer measured out of process (hnswlib).
type builtin struct {
	name string
	new  func(config) System
}

// builtins lists the systems [Run] knows, in the order it runs them.
var builtins = []builtin{
	{"engram-flat", newEngramFlat},
	{"engram-hnsw", newEngramHNSW},
	{"chromem-go", newChromem},
	{hnswlibName, nil},
}

// SystemNames returns the names of the built-in systems, in the order
// [Run] measures them.
func SystemNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// lookup returns the built-in systems with the given names, in the order
// given, or [ErrUnknownSystem] naming every unknown one.
func lookup(names []string) ([]builtin, error) {
	var out []builtin
	var unknown []string
	for _, n := range names {
		i := slices.IndexFunc(builtins, func(b builtin) bool { return b.name == n })
		if i < 0 {
			unknown = append(unknown, fmt.Sprintf("%q", n))
			continue
		}
		out = append(out, builtins[i])
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s (known: %s)", ErrUnknownSystem, strings.Join(unknown, ", "), strings.Join(SystemNames(), ", "))
	}
	return out, nil
}

// ownedCopy copies base into one new backing array, so a system that keeps
// the caller's slices holds (and is charged for) its own copy.
func ownedCopy(base [][]float32) [][]float32 {
	if len(base) == 0 {
		return nil
	}
	dim := len(base[0])
	flat := make([]float32, 0, len(base)*dim)
	for _, v := range base {
		flat = append(flat, v...)
	}
	return rows(flat, dim)
}
