package main

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/engramdb/engram/engine"
)

// TestMemoryLimitDefault: a serving process without $GOMEMLIMIT gets a soft
// memory limit of its partition budget plus a fixed headroom (the Go
// collector's slack would otherwise double the heap); --memory-limit
// replaces it; $GOMEMLIMIT, the operator's own, wins over both.
func TestMemoryLimitDefault(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		name   string
		flag   byteSize
		budget int64
		gomem  string
		want   int64
		set    bool
	}{
		{"budget plus headroom", 0, 256 << 20, "", 256<<20 + memoryLimitHeadroom, true},
		{"default budget", 0, 0, "", engine.DefaultPartitionCacheBytes() + memoryLimitHeadroom, true},
		{"flag", 3 << 30, 256 << 20, "", 3 << 30, true},
		{"GOMEMLIMIT wins", 3 << 30, 256 << 20, "2GiB", 0, false},
		{"GOMEMLIMIT off", 0, 256 << 20, "off", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, set := memoryLimit(c.flag, c.budget, env(c.gomem))
			if got != c.want || set != c.set {
				t.Fatalf("memoryLimit = %d, %v; want %d, %v", got, set, c.want, c.set)
			}
		})
	}
	// 256 and 512 MiB were measured too little: the collector ran all
	// or much of the time while Badger's table builders held their
	// buffers, and writes slowed down.
	if memoryLimitHeadroom < 768<<20 {
		t.Fatalf("headroom %d MiB: below what Badger's table builders hold under writes", memoryLimitHeadroom>>20)
	}
}

// TestSetMemoryLimit: the limit reaches the runtime, and an operator's
// $GOMEMLIMIT is left alone.
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	if got := setMemoryLimit(0, 64<<20, func(string) string { return "" }); got != 64<<20+memoryLimitHeadroom {
		t.Fatalf("limit in force %d, want %d", got, 64<<20+memoryLimitHeadroom)
	}
	debug.SetMemoryLimit(old)
	if got := setMemoryLimit(0, 64<<20, func(string) string { return "1GiB" }); got != old {
		t.Fatalf("with GOMEMLIMIT set the limit became %d, want it left at %d", got, old)
	}
}

// TestServeSetsMemoryLimit: engram serve puts the default limit in force
// from its --partition-cache, and --memory-limit's value when given.
func TestServeSetsMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	for _, c := range []struct {
		flag byteSize
		want int64
	}{{0, 64<<20 + memoryLimitHeadroom}, {700 << 20, 700 << 20}} {
		debug.SetMemoryLimit(math.MaxInt64)
		o := serveTestOptions(t)
		o.open.partitionCache = 64 << 20
		o.memoryLimit = c.flag
		s := startServe(t, o)
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("--memory-limit %d: limit in force %d, want %d", c.flag, got, c.want)
		}
		s.cancel()
		<-s.done
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Errorf("--memory-limit %d: after serve returned the limit is %d, want the process's own back", c.flag, got)
		}
	}
}

// TestBenchBudgetMemoryLimit: engram bench budget measures under serve's
// soft memory limit, and says which.
func TestBenchBudgetMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "soft memory limit 769 MiB;"},
		{[]string{"--memory-limit", "300MiB"}, "soft memory limit 300 MiB;"},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		args := append([]string{"bench", "budget", "--dir", t.TempDir(), "--users", "60", "--memories", "1",
			"--samples", "5", "--quiet", "1ms", "--partition-cache", "1MiB"}, c.args...)
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%v: want %q in\n%s", c.args, c.want, out)
		}
	}
}
