//go:build race

package graph

// raceEnabled shrinks the model and traversal tests under the race
// detector, which slows them about tenfold (76 s for the package); they
// run whole without it, and the race detector still sees every code path.
const raceEnabled = true
