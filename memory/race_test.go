//go:build race

package memory

// raceEnabled shortens the slowest property and stress tests under the
// race detector, which slows them about tenfold; .ci/run runs them whole
// without it.
const raceEnabled = true
