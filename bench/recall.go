package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// RecallOptions configures [RunRecall]. Zero fields mean the documented
// defaults: the scale docs/benchmarks.md quotes.
type RecallOptions struct {
	// Dir is the store's directory; empty means in memory. The peer (a
	// plain engine BM25 search) runs on a copy of the store restored from
	// its backup: in memory, or in a temporary directory beside Dir,
	// removed at the end, which needs as much disk again.
	Dir string
	// Users, MemoriesPerUser and FactsPerUser shape the store: 1000
	// users, 100 memories and 1000 facts each by default (100,000
	// memories and 1,000,000 facts in all).
	Users, MemoriesPerUser, FactsPerUser int
	// Queries is how many Recalls are timed (default 2000), each for a
	// random user.
	Queries int
	// Seed makes the store and the queries repeatable.
	Seed uint64
	// VectorWeight is the store's memory.Options.VectorWeight: 0 is the
	// default (with the offline embedder, no vector search in Recall).
	VectorWeight float64
	// BlockCacheBytes is the store's and the peer's Badger block cache
	// (memory.Options.BlockCacheBytes): 0 is the default.
	BlockCacheBytes int64
	// Reuse, with Dir, skips writing the store when Dir holds one that a
	// run of the same shape and seed wrote to the end (a file beside Dir,
	// Dir + ".recall-bench", says so): the queries are the same, and two
	// builds can be timed on the same bytes. Without it, or when Dir holds
	// no such store, the store is written (into Dir as it is).
	Reuse bool
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// RecallResult is what [RunRecall] measured.
type RecallResult struct {
	Users, Memories, Facts, Queries int
	// Build is how long writing the store took.
	Build time.Duration
	// Excluded are Recall latencies without the time spent embedding the
	// query; Included with it. Percentiles are nearest-rank.
	ExcludedP50, ExcludedP99, IncludedP50, IncludedP99 time.Duration
	// PeerP50 and PeerP99 time the peer measured in the same run: one
	// BM25 search (engine.DB.SearchText, records read) of the user's
	// memories for the same query, the floor under any hybrid recall. The
	// peer searches a copy of the store (its Backup restored into an
	// engine.DB opened on its own, in memory or beside Dir), so the two
	// read the same bytes through their own doors.
	PeerP50, PeerP99 time.Duration
	// Items is the mean number of items a Recall returned, and Facts the
	// mean number of them that were graph facts.
	Items, FactItems float64
	// AllocsPerRecall and BytesPerRecall are the heap allocations (objects
	// and bytes) of the process during the timed Recalls, per Recall: the
	// store's background work, if any ran, is counted too.
	AllocsPerRecall, BytesPerRecall float64
}

// recallVocab is the word stock of synthetic memories.
var recallVocab = strings.Fields(`account invoice renewal budget deadline flight hotel Lisbon Porto
meeting laptop contract support ticket refund payment password email phone address birthday
manager team project launch review report dashboard server database backup outage release
vacation doctor appointment gym coffee lunch dinner train taxi parking office printer
preference allergy peanuts vegetarian music jazz novel podcast garden dog cat`)

// RunRecall builds a synthetic store (memories made of vocabulary words and
// numbers, each user's graph a power-law graph from PowerLawFacts whose
// predicates are renamed to words of the same vocabulary) and times Recall
// with its default sources (memories and the graph) for random users:
// queries name an entity of the user's graph, the predicate of one of that
// entity's facts and another word of the vocabulary, so that both memories
// and facts are relevant ("What about the budget hotel of entity-12?").
//
// The predicates carry words because Recall ranks the facts it reaches by
// the query's other terms and weighs the facts that share none at a tenth
// (see memory.Trace.Lists): with PowerLawFacts' own predicates ("pred-7")
// no fact ever shared a term with a query, and no fact reached the context.
func RunRecall(ctx context.Context, opts RecallOptions) (RecallResult, error) {
	o := opts
	o.Users = orDefault(o.Users, 1000)
	o.MemoriesPerUser = orDefault(o.MemoriesPerUser, 100)
	o.FactsPerUser = orDefault(o.FactsPerUser, 1000)
	o.Queries = orDefault(o.Queries, 2000)
	store, err := memory.Open(o.Dir, &memory.Options{Durability: memory.Async, SweepInterval: -1, VectorWeight: o.VectorWeight, BlockCacheBytes: o.BlockCacheBytes})
	if err != nil {
		return RecallResult{}, err
	}
	defer store.Close()
	r := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	res := RecallResult{Users: o.Users, Queries: o.Queries}
	began := time.Now()
	// The marker names the shape; a reused store is not written, but its
	// random draws are made, so the queries are those of the run that
	// wrote it.
	marker := fmt.Sprintf("users=%d memories=%d facts=%d seed=%d\n", o.Users, o.MemoriesPerUser, o.FactsPerUser, o.Seed)
	markerPath := filepath.Clean(o.Dir) + ".recall-bench"
	reused := false
	if o.Reuse && o.Dir != "" {
		b, err := os.ReadFile(markerPath)
		reused = err == nil && string(b) == marker
	}
	if o.Dir != "" && !reused {
		if err := os.Remove(markerPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
	}
	entities := make([][]string, o.Users)
	predicates := make([][][]string, o.Users) // per user and entity: its facts' predicates
	for u := range o.Users {
		scope := memory.Scope{Tenant: "bench", User: "user-" + strconv.Itoa(u)}
		for range o.MemoriesPerUser {
			n := 6 + r.IntN(10)
			w := make([]string, n)
			for i := range w {
				w[i] = recallVocab[r.IntN(len(recallVocab))]
			}
			w[r.IntN(n)] = strconv.Itoa(r.IntN(10000))
			res.Memories++
			if reused {
				continue
			}
			if _, err := store.Remember(ctx, scope, memory.Memory{Text: strings.Join(w, " "), Importance: r.Float64()}); err != nil {
				return res, err
			}
		}
		facts := PowerLawFacts(o.FactsPerUser, o.Seed+uint64(u))
		for i := range facts {
			facts[i].Predicate = vocabPredicate(facts[i].Predicate)
		}
		if !reused {
			if _, err := store.ImportGraph(ctx, scope, &graph.Dump{Facts: facts}, nil); err != nil {
				return res, err
			}
		}
		res.Facts += len(facts)
		entities[u] = GraphSeeds(facts, 16, o.Seed+uint64(u))
		predicates[u] = make([][]string, len(entities[u]))
		for i, e := range entities[u] {
			for _, f := range facts {
				if (f.Subject == e || f.Object == e) && !slices.Contains(predicates[u][i], f.Predicate) {
					predicates[u][i] = append(predicates[u][i], f.Predicate)
				}
			}
		}
		if o.Progress != nil && (u+1)%max(1, o.Users/10) == 0 {
			fmt.Fprintf(o.Progress, "built %d/%d users (%d memories, %d facts) in %v\n", u+1, o.Users, res.Memories, res.Facts, time.Since(began).Round(time.Second))
		}
	}
	res.Build = time.Since(began)
	if o.Dir != "" && !reused {
		if err := os.WriteFile(markerPath, []byte(marker), 0o644); err != nil {
			return res, err
		}
	}
	peerDB, err := openPeer(ctx, store, o.Dir, o.BlockCacheBytes)
	if err != nil {
		return res, err
	}
	defer peerDB.Close()
	// Load every user's partition of the peer, and of the store, before
	// timing: the first use of a partition after Open loads it (a
	// snapshot, or a rebuild from the records), which neither side may
	// pay in the timed loop. A store this run built has its partitions
	// loaded already; one reused from an earlier run (Reuse) has not, and
	// its Recalls paid the loads the peer never did.
	for u := range o.Users {
		scope := memory.Scope{Tenant: "bench", User: "user-" + strconv.Itoa(u)}
		if _, err := peerDB.SearchText(ctx, scope, "warm", 1, &engine.SearchOptions{Space: "mem"}); err != nil {
			return res, err
		}
		if _, err := store.Recall(ctx, memory.Query{Scope: scope, Text: "warm"}); err != nil {
			return res, err
		}
	}

	excluded := make([]time.Duration, 0, o.Queries)
	peer := make([]time.Duration, 0, o.Queries)
	included := make([]time.Duration, 0, o.Queries)
	var items, factItems int
	allocs := [2]metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	var objects, bytes uint64 // allocated during the timed Recalls (wraps below zero in between)
	for i := range o.Queries + o.Queries/10 {
		u := r.IntN(o.Users)
		word := recallVocab[r.IntN(len(recallVocab))]
		text := "What about the " + word + "?"
		if len(entities[u]) > 0 {
			e := r.IntN(len(entities[u]))
			preds := predicates[u][e]
			text = fmt.Sprintf("What about the %s %s of %s?", word, preds[r.IntN(len(preds))], entities[u][e])
		}
		scope := memory.Scope{Tenant: "bench", User: "user-" + strconv.Itoa(u)}
		timed := i >= o.Queries/10
		if timed {
			metrics.Read(allocs[:])
			objects, bytes = objects-allocs[0].Value.Uint64(), bytes-allocs[1].Value.Uint64()
		}
		t := time.Now()
		rec, err := store.Recall(ctx, memory.Query{Scope: scope, Text: text})
		took := time.Since(t)
		if timed {
			metrics.Read(allocs[:])
			objects, bytes = objects+allocs[0].Value.Uint64(), bytes+allocs[1].Value.Uint64()
		}
		if err != nil {
			return res, err
		}
		t = time.Now()
		if _, err := peerDB.SearchText(ctx, scope, text, 10, &engine.SearchOptions{Space: "mem"}); err != nil {
			return res, err
		}
		peerTook := time.Since(t)
		if !timed {
			continue // warm-up: first use of a partition loads it
		}
		included = append(included, took)
		peer = append(peer, peerTook)
		excluded = append(excluded, took-rec.Trace.Embed)
		items += len(rec.Items)
		for _, it := range rec.Items {
			if it.Source == memory.SourceGraph {
				factItems++
			}
		}
	}
	slices.Sort(excluded)
	slices.Sort(included)
	slices.Sort(peer)
	res.PeerP50, res.PeerP99 = percentile(peer, 50), percentile(peer, 99)
	res.ExcludedP50, res.ExcludedP99 = percentile(excluded, 50), percentile(excluded, 99)
	res.IncludedP50, res.IncludedP99 = percentile(included, 50), percentile(included, 99)
	res.Items = float64(items) / float64(len(included))
	res.FactItems = float64(factItems) / float64(len(included))
	res.AllocsPerRecall = float64(objects) / float64(len(included))
	res.BytesPerRecall = float64(bytes) / float64(len(included))
	return res, nil
}

// vocabPredicate renames a PowerLawFacts predicate ("pred-7") to a word of
// recallVocab, lower-cased, one word per predicate number.
func vocabPredicate(p string) string {
	n, err := strconv.Atoi(strings.TrimPrefix(p, "pred-"))
	if err != nil || n < 0 || n >= len(recallVocab) {
		return p
	}
	return strings.ToLower(recallVocab[n])
}

// peerDB is the engine the peer searches, with the directory it owns.
type peerDB struct {
	*engine.DB
	dir string // removed by Close; "" in memory
}

// openPeer opens an engine.DB on its own and restores store's Backup into
// it: in memory when dir (the store's) is empty, else in a new directory
// beside dir.
func openPeer(ctx context.Context, store *memory.Store, dir string, blockCache int64) (*peerDB, error) {
	p := &peerDB{}
	if dir != "" {
		d, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".recall-peer-")
		if err != nil {
			return nil, fmt.Errorf("peer: %w", err)
		}
		p.dir = d
	}
	db, err := engine.Open(p.dir, &engine.Options{Durability: engine.Async, CompactDelay: -1, BlockCacheBytes: blockCache})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("peer: %w", err), p.removeDir())
	}
	p.DB = db
	pr, pw := io.Pipe()
	backed := make(chan error, 1)
	go func() {
		err := store.Backup(ctx, pw)
		_ = pw.CloseWithError(err)
		backed <- err
	}()
	err = db.Restore(ctx, pr)
	_ = pr.CloseWithError(err) // stops the Backup if Restore gave up
	if berr := <-backed; err == nil {
		err = berr
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("peer: restore the store's backup: %w", err), p.Close())
	}
	return p, nil
}

// Close closes the peer's engine and removes its directory.
func (p *peerDB) Close() error {
	var err error
	if p.DB != nil {
		err = p.DB.Close()
	}
	return errors.Join(err, p.removeDir())
}

func (p *peerDB) removeDir() error {
	if p.dir == "" {
		return nil
	}
	return os.RemoveAll(p.dir)
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// percentile returns the nearest-rank p-th percentile of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i, 1), len(sorted))-1]
}
