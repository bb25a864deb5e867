//go:build race

package index

// raceEnabled shrinks the HNSW, BM25 model and corruption tests under the
// race detector, which slows them about tenfold; .ci/run runs them whole
// without it.
const raceEnabled = true
