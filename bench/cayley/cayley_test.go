// Package cayley compares Engram's graph traversal with cayley v0.7.7's
// in-memory quad store on the same power-law graph, from the same seeds,
// in the same run. It is a separate module so that cayley's graph packages
// (and the 190-odd modules of its unpruned go.mod) never reach Engram's
// own module graph; see README.md.
package cayley

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/cayley/graph/memstore"
	"github.com/cayleygraph/cayley/graph/path"
	"github.com/cayleygraph/quad"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv"
)

// The same graph and seeds as bench's BenchmarkGraphTraverse.
const (
	graphFacts = 1_000_000
	graphSeed  = 1
	graphSeeds = 1000
)

// queryTimeout bounds one query; a query that hits it is counted
// (timeouts) and its time kept.
const queryTimeout = 10 * time.Second

// outcome is what one query returned.
type outcome struct {
	// results is what the query returns: distinct nodes for cayley,
	// facts for engram.
	results int
	// nodes is the distinct entities: for cayley the nodes at the last
	// hop (the query's result); for engram the subjects and objects of
	// the facts returned, which are within the hops (seed included).
	nodes int
	// truncated: engram's fan-out bound or Limit cut the walk.
	truncated bool
}

// system is one way of answering "what is within h hops of seed".
type system struct {
	name string
	// maxHops, when set, is the deepest query the system is asked.
	maxHops int
	// run answers one query and returns how long the query took (counting
	// the result afterwards is not timed).
	run func(ctx context.Context, seed string, hops int) (time.Duration, outcome, error)
}

// loadTimes are the seconds each peer took to load the graph.
type loadTimes struct{ cayley, engram float64 }

// peers loads the graph into cayley's memstore and into an engram graph on
// disk under dir, and returns the systems to compare.
func peers(b *testing.B, facts []graph.Fact, dir string) ([]system, loadTimes) {
	b.Helper()
	ctx := context.Background()

	start := time.Now()
	qs := memstore.New()
	for _, f := range facts {
		qs.AddQuad(quad.Make(quad.IRI(f.Subject), quad.IRI(f.Predicate), quad.IRI(f.Object), nil))
	}
	cayleyLoad := time.Since(start)

	db, err := kv.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s, err := graph.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	root := []byte("g")
	start = time.Now()
	st, err := s.Load(ctx, db, root, &graph.Dump{Facts: facts}, nil)
	if err != nil {
		b.Fatal(err)
	}
	engramLoad := time.Since(start)
	if st.Facts != len(facts) {
		b.Fatalf("engram stored %d facts of %d", st.Facts, len(facts))
	}

	// cayley: the path API, every result collected into a set. Without
	// unique, each hop enumerates paths, not nodes (a node reached k ways
	// is expanded k times); with it, each hop's nodes are deduplicated
	// before the next hop, which is what a breadth-first walk does.
	cayley := func(both, unique bool) func(context.Context, string, int) (time.Duration, outcome, error) {
		return func(ctx context.Context, seed string, hops int) (time.Duration, outcome, error) {
			start := time.Now()
			p := path.StartPath(qs, quad.IRI(seed))
			for range hops {
				if both {
					p = p.Both()
				} else {
					p = p.Out()
				}
				if unique {
					p = p.Unique()
				}
			}
			nodes := map[quad.Value]struct{}{}
			err := p.Iterate(ctx).EachValue(qs, func(v quad.Value) { nodes[v] = struct{}{} })
			d := time.Since(start)
			return d, outcome{results: len(nodes), nodes: len(nodes)}, err
		}
	}
	engram := func(dir graph.Direction, fanout, limit int) func(context.Context, string, int) (time.Duration, outcome, error) {
		return func(ctx context.Context, seed string, hops int) (time.Duration, outcome, error) {
			start := time.Now()
			var res graph.Traversal
			err := s.View(ctx, db, root, func(tx *graph.Tx) error {
				var err error
				res, err = tx.Traverse(graph.TraverseQuery{
					From: []string{seed}, MaxHops: hops, Direction: dir, MaxFanout: fanout, Limit: limit,
				})
				return err
			})
			d := time.Since(start)
			nodes := map[string]struct{}{}
			for _, st := range res.Steps {
				nodes[st.Subject] = struct{}{}
				nodes[st.Object] = struct{}{}
			}
			return d, outcome{results: len(res.Steps), nodes: len(nodes), truncated: res.Truncated}, err
		}
	}
	systems := []system{
		// Path enumeration: every 3-hop query of a 1x trial ran into the
		// 10 s timeout, so these run at 2 hops only.
		{"cayley-out", 2, cayley(false, false)},
		{"cayley-both", 2, cayley(true, false)},
		{"cayley-out-unique", 0, cayley(false, true)},
		{"cayley-both-unique", 0, cayley(true, true)},
		{"engram-out", 0, engram(graph.Out, 0, 0)},
		{"engram-both", 0, engram(graph.Both, 0, 0)},
		{"engram-out-unbounded", 0, engram(graph.Out, 1<<20, graph.MaxTraverseLimit)},
		{"engram-both-unbounded", 0, engram(graph.Both, 1<<20, graph.MaxTraverseLimit)},
	}
	return systems, loadTimes{cayley: cayleyLoad.Seconds(), engram: engramLoad.Seconds()}
}

// ratios are the engram/cayley pairs reported.
var ratios = [][2]string{
	{"engram-out", "cayley-out-unique"},
	{"engram-out-unbounded", "cayley-out-unique"},
	{"engram-both", "cayley-both-unique"},
	{"engram-both-unbounded", "cayley-both-unique"},
	{"engram-out-unbounded", "cayley-out"},
	{"engram-both-unbounded", "cayley-both"},
}

// BenchmarkCayleyVsEngram runs 2- and 3-hop queries from the same seeds on
// cayley's in-memory store (path Out/Both repeated, with and without
// Unique after each hop, every node collected into a set) and on an
// engram graph on disk (Traverse Out and Both, with the default fan-out
// bound and Limit, and unbounded: MaxFanout 1<<20, Limit
// graph.MaxTraverseLimit). Each op is one seed queried by every system, in
// an order rotated per op so that no system always runs first.
//
// Metrics per system: p50 and p99 latency in µs; the mean count of
// distinct nodes, and for engram of facts and the share of truncated
// walks (cayley returns nodes, engram facts: they answer different
// questions, see README.md); timeouts; the engram/cayley ratios of the
// p50s and p99s; and each peer's load time.
func BenchmarkCayleyVsEngram(b *testing.B) {
	if testing.Short() {
		b.Skip("loads a million facts into both stores; skipped in -short mode")
	}
	facts := bench.PowerLawFacts(graphFacts, graphSeed)
	seeds := bench.GraphSeeds(facts, graphSeeds, graphSeed)
	systems, load := peers(b, facts, b.TempDir())

	for _, hops := range []int{2, 3} {
		b.Run(fmt.Sprintf("hops=%d", hops), func(b *testing.B) {
			var active []system
			for _, sys := range systems {
				if sys.maxHops == 0 || hops <= sys.maxHops {
					active = append(active, sys)
				}
			}
			durs := make([][]time.Duration, len(active))
			sums := make([]outcome, len(active))
			truncated := make([]int, len(active))
			timeouts := make([]int, len(active))
			b.ResetTimer()
			for i := range b.N {
				seed := seeds[i%len(seeds)]
				for j := range active {
					k := (i + j) % len(active)
					ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
					d, out, err := active[k].run(ctx, seed, hops)
					timedOut := ctx.Err() != nil
					cancel()
					switch {
					case timedOut:
						timeouts[k]++
					case err != nil:
						b.Fatalf("%s from %s: %v", active[k].name, seed, err)
					}
					durs[k] = append(durs[k], d)
					sums[k].results += out.results
					sums[k].nodes += out.nodes
					if out.truncated {
						truncated[k]++
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(load.cayley, "cayley-load-s")
			b.ReportMetric(load.engram, "engram-load-s")
			p50 := map[string]float64{}
			p99 := map[string]float64{}
			for k, sys := range active {
				slices.Sort(durs[k])
				p50[sys.name] = micros(quantile(durs[k], 0.50))
				p99[sys.name] = micros(quantile(durs[k], 0.99))
				b.ReportMetric(p50[sys.name], sys.name+"-p50-µs")
				b.ReportMetric(p99[sys.name], sys.name+"-p99-µs")
				b.ReportMetric(float64(sums[k].nodes)/float64(b.N), sys.name+"-nodes")
				if strings.HasPrefix(sys.name, "engram") {
					b.ReportMetric(float64(sums[k].results)/float64(b.N), sys.name+"-facts")
					b.ReportMetric(float64(truncated[k])/float64(b.N), sys.name+"-truncated")
				}
				if timeouts[k] > 0 {
					b.ReportMetric(float64(timeouts[k]), sys.name+"-timeouts")
				}
			}
			for _, r := range ratios {
				if _, ok := p50[r[1]]; !ok {
					continue
				}
				b.ReportMetric(p50[r[0]]/p50[r[1]], r[0]+"/"+r[1]+"-p50")
				b.ReportMetric(p99[r[0]]/p99[r[1]], r[0]+"/"+r[1]+"-p99")
			}
		})
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
