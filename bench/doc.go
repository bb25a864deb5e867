// Package bench will hold Engram's benchmark harnesses and peers: ANN
// recall and throughput against exact search and other libraries, recall
// latency at scale, and retrieval quality on LoCoMo.
//
// # Basics
//
// Nothing is exported yet. The foundation's own benchmarks (Append, Window,
// the hashing embedder) live beside the code they measure, as ordinary
// go test -bench functions; see the README for their figures.
//
// # Caveats
//
// Harnesses read real data from ../shared/data when it is present and fall
// back to seeded synthetic data, so they run on a machine without it.
package bench
