//go:build !race

package bench

// smallN is the size of smallSet.
const smallN = 1500
