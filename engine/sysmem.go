package engine

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// maxDefaultPartitionCache caps the default partition cache: a quarter
// of a large machine is more than a store needs to keep its hot users.
const maxDefaultPartitionCache = 1 << 30

// DefaultPartitionCacheBytes is the partition cache's budget when
// [Options.PartitionCacheBytes] is zero: a quarter of the memory the
// process may use, at most 1 GiB. That memory is the machine's
// (MemTotal in /proc/meminfo) or, when lower, the limit of the process's
// cgroup (memory.max of cgroup v2, memory.limit_in_bytes of v1), read
// once. Where neither can be read (not Linux), the cap: 1 GiB.
func DefaultPartitionCacheBytes() int64 {
	defaultCacheOnce.Do(func() {
		defaultCache = maxDefaultPartitionCache
		if m := processMemory(); m > 0 {
			defaultCache = min(m/4, maxDefaultPartitionCache)
		}
	})
	return defaultCache
}

var (
	defaultCacheOnce sync.Once
	defaultCache     int64
)

// processMemory returns the memory the process may use, in bytes, or 0
// when unknown.
func processMemory() int64 {
	total := memTotal("/proc/meminfo")
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if l := cgroupLimit(f); l > 0 && (total == 0 || l < total) {
			total = l
		}
	}
	return total
}

// memTotal reads MemTotal from a meminfo file ("MemTotal: 16318412 kB").
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || n <= 0 {
				return 0
			}
			if len(f) == 3 && f[2] == "kB" {
				n *= 1024
			}
			return n
		}
	}
	return 0
}

// cgroupLimit reads a cgroup memory limit file: a byte count, or "max"
// (none, 0 here); v1 writes a huge number for none, which is not lower
// than the machine's memory and so changes nothing.
func cgroupLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
