package main

import (
	"runtime/debug"

	"github.com/engramdb/engram/engine"
)

// memoryLimitHeadroom is what the default soft memory limit allows the Go
// heap beyond the partition budget: the storage layer's memtables, caches
// and table builders (Badger keeps up to 8 builders' buffers, each about
// 3.5 times the memtable or the largest table it built: 200-450 MiB at
// 100,000 users), requests in flight, and the collector's slack.
// Measured with engram bench budget at 256 MiB (bench/results/load.md),
// peak RSS against 1,360-1,910 MiB without a limit: with 256 MiB of
// headroom 826 MiB, but the collector ran almost all the time (writes 3
// times slower); with 512 MiB about 1,000 MiB, writes 1.6 times slower
// on a shared machine (the collector 19% of the CPU); with 768 MiB 1,220
// MiB, writes within the noise (the collector 13% of the CPU against 8%).
const memoryLimitHeadroom = 768 << 20

// memoryLimit returns the soft memory limit a serving process sets for
// its Go runtime, and whether it sets one: the --memory-limit flag when
// given, else the partition budget (or its default) plus
// memoryLimitHeadroom. None when $GOMEMLIMIT is set: the operator's limit
// stands, and GOMEMLIMIT=off turns the limit off.
func memoryLimit(flag byteSize, partitionCache int64, getenv func(string) string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	if flag > 0 {
		return int64(flag), true
	}
	budget := partitionCache
	if budget <= 0 {
		budget = engine.DefaultPartitionCacheBytes()
	}
	return budget + memoryLimitHeadroom, true
}

// setMemoryLimit applies memoryLimit to the runtime (debug.SetMemoryLimit)
// and returns the limit now in force, whoever set it.
func setMemoryLimit(flag byteSize, partitionCache int64, getenv func(string) string) int64 {
	if limit, ok := memoryLimit(flag, partitionCache, getenv); ok {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1)
}
