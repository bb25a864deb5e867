//go:build race

package kv

// raceEnabled is set under -race, which slows Badger's table and log
// readers about tenfold: the corruption corpus then runs its plain half.
const raceEnabled = true
