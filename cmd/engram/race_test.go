//go:build race

package main

// raceEnabled shrinks the slowest tests under the race detector, which
// slows index builds about tenfold; .ci/run runs them whole without it.
const raceEnabled = true
