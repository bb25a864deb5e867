//go:build race

package index

// raceEnabled shrinks the HNSW tests under the race detector, which slows
// the graph build about tenfold.
const raceEnabled = true
