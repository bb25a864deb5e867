// Command peers runs Engram's ANN comparison (the harness of package
// github.com/engramdb/engram/bench, as engram bench ann does) with the
// peers that only a benchmark needs, and draws the result as a PNG:
//
//	cd bench/peers
//	go run . --data ../../../shared/data/siftsmall --json sift.json --plot sift.png
//	go run . --synthetic n=100000,dim=384,clusters=1000,seed=1 --k 10
//
// It measures every system engram bench ann knows (engram-flat,
// engram-hnsw, chromem-go, hnswlib) and coder-hnsw, github.com/coder/hnsw
// v0.6.1, which it passes to [bench.Run] in Options.Extra, so coder-hnsw is
// measured last. The plot (--plot) is drawn with gonum.org/v1/plot.
//
// This is its own module, with a replace directive to the repository root,
// so that coder/hnsw, gonum and gonum's fonts, PDF and image dependencies
// stay out of Engram's go.mod: a program that imports Engram never lists
// them in its go.sum.
//
// # Caveats
//
// coder/hnsw v0.6.1 evicts arbitrary candidates from its bounded heaps
// (fixed upstream after the release), so its recall stays near 0.2 at any
// ef; see the coderSystem notes in coder.go. Every HNSW system is built
// with the same M, efConstruction and swept ef values, which this command
// sets explicitly (the harness's defaults) so that coder-hnsw, built
// outside the harness, gets them too.
package main
