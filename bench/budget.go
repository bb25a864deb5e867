package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// BudgetOptions configures [RunBudget].
type BudgetOptions struct {
	// Dir is the store's directory; it must be set: a store in memory
	// holds every record in the heap, which is what the run measures.
	Dir string
	// Users is how many users are touched, each with MemoriesPerUser
	// memories (defaults 100,000 and 3).
	Users, MemoriesPerUser int
	// PartitionCacheBytes is the store's partition budget (default 256
	// MiB).
	PartitionCacheBytes int64
	// Checkpoints are the user counts after which memory is read; by
	// default a tenth, a half and all of Users.
	Checkpoints []int
	// Samples is how many cold and warm Recalls are timed (default 500).
	Samples int
	// Seed makes the memories and the sampled users repeatable.
	Seed uint64
	// Quiet is how long the run waits after the timed Recalls before
	// its last reading (default 20 s): Badger frees one idle table
	// builder every 2 s once no table is being built, so the reading
	// shows the memory once writes have stopped.
	Quiet time.Duration
	// Progress, when set, receives a line per checkpoint.
	Progress io.Writer
}

// BudgetPoint is the process's memory after a number of users.
type BudgetPoint struct {
	Users int
	// RSS is VmRSS of /proc/self/status (0 where there is none), and
	// RSSAnon and RSSFile its anonymous and file-backed (mapped store
	// files) parts. GoTotal is the memory the Go runtime maps, less what
	// it released to the system (runtime/metrics /memory/classes/total
	// minus /memory/classes/heap/released). All four are read first;
	// Live is then the Go heap's objects after a collection
	// (/memory/classes/heap/objects:bytes): what is really in use, and
	// Unused the free space inside the heap's spans that hold live
	// objects then (/memory/classes/heap/unused:bytes): fragmentation
	// the runtime cannot return to the system.
	RSS, RSSAnon, RSSFile, GoTotal, Live, Unused int64
	// PeakRSS is VmHWM of /proc/self/status: the highest RSS of the
	// process so far, between the readings too.
	PeakRSS int64
	// GCShare is the share of the process's CPU time the Go collector
	// took since the start (runtime/metrics /cpu/classes/gc/total over
	// /cpu/classes/total less /cpu/classes/idle; the runtime's estimates,
	// brought up to date at each collection): what a soft memory limit
	// costs.
	GCShare float64
	// Cache is the partition cache at that moment.
	Cache engine.CacheStats
	// Elapsed is the time since the run began.
	Elapsed time.Duration
}

// BudgetResult is what [RunBudget] measured.
type BudgetResult struct {
	Budget int64
	Points []BudgetPoint
	// Quiet is read BudgetOptions.Quiet after the timed Recalls, once
	// the Go runtime has returned its garbage to the system
	// (debug.FreeOSMemory): the floor under the RSS of the points, which
	// include Badger's table builders and the headroom the collector
	// grows the heap by between collections (GOGC).
	Quiet BudgetPoint
	// Cold are Recalls of users whose partition was evicted (the Recall
	// loaded it: a cache miss), Warm the same users' next Recall, right
	// after. Percentiles are nearest-rank.
	Samples                            int
	ColdP50, ColdP99, WarmP50, WarmP99 time.Duration
}

// RunBudget touches Users users with a few memories each in a store whose
// partition cache has a budget, reads the process's memory at the
// checkpoints, then times Recall for users whose partitions were evicted
// (cold) and again right after (warm). Issue 29: resident memory must
// follow the budget, not the number of users ever touched.
func RunBudget(ctx context.Context, opts BudgetOptions) (BudgetResult, error) {
	o := opts
	o.Users = orDefault(o.Users, 100000)
	o.MemoriesPerUser = orDefault(o.MemoriesPerUser, 3)
	o.Samples = orDefault(o.Samples, 500)
	if o.Quiet == 0 {
		o.Quiet = 20 * time.Second
	}
	if o.PartitionCacheBytes == 0 {
		o.PartitionCacheBytes = 256 << 20
	}
	if o.Dir == "" {
		return BudgetResult{}, fmt.Errorf("%w: the budget run needs a directory", ErrInvalidOptions)
	}
	if len(o.Checkpoints) == 0 {
		o.Checkpoints = []int{max(o.Users/10, 1), max(o.Users/2, 1), o.Users}
	}
	store, err := memory.Open(o.Dir, &memory.Options{Durability: memory.Async, SweepInterval: -1,
		Extraction: memory.ExtractOff, PartitionCacheBytes: o.PartitionCacheBytes})
	if err != nil {
		return BudgetResult{}, err
	}
	defer store.Close()
	res := BudgetResult{Budget: o.PartitionCacheBytes}
	r := rand.New(rand.NewPCG(o.Seed, 0xb0d9e7))
	began := time.Now()
	for u := range o.Users {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for range o.MemoriesPerUser {
			if _, err := store.Remember(ctx, budgetScope(u), memory.Memory{Text: budgetText(r)}); err != nil {
				return res, err
			}
		}
		if slices.Contains(o.Checkpoints, u+1) {
			pt := readMemory()
			pt.Users, pt.Cache, pt.Elapsed = u+1, store.Stats().Cache, time.Since(began)
			res.Points = append(res.Points, pt)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%d users: RSS %d MiB (anon %d, file %d; peak %d), Go runtime %d MiB, live Go heap %d MiB (+%d MiB unused in its spans), cache %d MiB in %d partitions, %d evictions, GC %.0f%% of the CPU, %v\n",
					pt.Users, pt.RSS>>20, pt.RSSAnon>>20, pt.RSSFile>>20, pt.PeakRSS>>20, pt.GoTotal>>20, pt.Live>>20, pt.Unused>>20, pt.Cache.Bytes>>20, pt.Cache.Partitions, pt.Cache.Evictions, 100*pt.GCShare, pt.Elapsed.Round(time.Second))
			}
		}
	}
	if err := timeColdWarm(ctx, store, r, o, &res); err != nil {
		return res, err
	}
	// The floor once writes stop: Badger's idle builders freed, garbage
	// returned to the system. Not a synchronisation: the time is what
	// is measured.
	t := time.NewTimer(o.Quiet)
	select {
	case <-ctx.Done():
		t.Stop()
		return res, ctx.Err()
	case <-t.C:
	}
	debug.FreeOSMemory()
	res.Quiet = readMemory()
	res.Quiet.Users, res.Quiet.Cache, res.Quiet.Elapsed = o.Users, store.Stats().Cache, time.Since(began)
	return res, nil
}

// timeColdWarm times Recall for users of the first half, whose partitions
// the budget evicted, then again for each at once.
func timeColdWarm(ctx context.Context, store *memory.Store, r *rand.Rand, o BudgetOptions, res *BudgetResult) error {
	var cold, warm []time.Duration
	for range o.Samples {
		u := r.IntN(max(o.Users/2, 1))
		q := memory.Query{Scope: budgetScope(u), Text: recallVocab[r.IntN(len(recallVocab))]}
		misses := store.Stats().Cache.Misses
		t := time.Now()
		if _, err := store.Recall(ctx, q); err != nil {
			return err
		}
		d := time.Since(t)
		if store.Stats().Cache.Misses == misses {
			continue // still cached: not cold (picked twice)
		}
		cold = append(cold, d)
		t = time.Now()
		if _, err := store.Recall(ctx, q); err != nil {
			return err
		}
		warm = append(warm, time.Since(t))
	}
	slices.Sort(cold)
	slices.Sort(warm)
	res.Samples = len(cold)
	res.ColdP50, res.ColdP99 = percentile(cold, 50), percentile(cold, 99)
	res.WarmP50, res.WarmP99 = percentile(warm, 50), percentile(warm, 99)
	return nil
}

func budgetScope(u int) memory.Scope {
	return memory.Scope{Tenant: "bench", User: "user-" + strconv.Itoa(u)}
}

// budgetText is a memory of 6 to 15 words of recallVocab and a number.
func budgetText(r *rand.Rand) string {
	n := 6 + r.IntN(10)
	w := make([]string, n)
	for i := range w {
		w[i] = recallVocab[r.IntN(len(recallVocab))]
	}
	w[r.IntN(n)] = strconv.Itoa(r.IntN(10000))
	return strings.Join(w, " ")
}

// readMemory reads the process's resident memory and the Go runtime's,
// then collects garbage to read the live heap.
func readMemory() BudgetPoint {
	var pt BudgetPoint
	status := procStatus()
	pt.RSS, pt.RSSAnon, pt.RSSFile, pt.PeakRSS = status["VmRSS:"], status["RssAnon:"], status["RssFile:"], status["VmHWM:"]
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
	}
	metrics.Read(s)
	pt.GoTotal = int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	if total := s[5].Value.Float64() - s[6].Value.Float64(); total > 0 {
		pt.GCShare = s[4].Value.Float64() / total
	}
	runtime.GC()
	metrics.Read(s[2:4])
	pt.Live, pt.Unused = int64(s[2].Value.Uint64()), int64(s[3].Value.Uint64())
	return pt
}

// procStatus returns the kB fields of /proc/self/status, in bytes, by
// name with its colon ("VmRSS:"); none where there is no such file.
func procStatus() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[2] == "kB" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			out[f[0]] = n << 10
		}
	}
	return out
}
