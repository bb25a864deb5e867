//go:build race

package bench

// smallN is the size of smallSet. Under the race detector, which slows
// index builds about tenfold, four builds of 1,500 vectors took 9 to 14 s,
// so it is smaller there; .ci/run runs the tests whole without it.
const smallN = 500
