package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"
)

// getPartition returns the partition for prefix, loaded, without keeping
// it pinned: for tests that look inside one.
func (db *DB) getPartition(ctx context.Context, prefix []byte) (*partition, error) {
	p, err := db.acquire(ctx, prefix)
	if err != nil {
		return nil, err
	}
	p.release()
	return p, nil
}

// checkAccounting fails unless the cache's resident total is the sum of
// its partitions' sizes, each as measured now.
func checkAccounting(t *testing.T, db *DB) {
	t.Helper()
	db.parts.Lock()
	defer db.parts.Unlock()
	var sum, measured int64
	for _, p := range db.parts.m {
		if !p.loaded.Load() {
			continue
		}
		p.mu.RLock()
		measured += p.measureLocked()
		p.mu.RUnlock()
		p.acct.Lock()
		if !p.acct.charged {
			t.Errorf("partition %q is cached but not charged", p.prefix)
		}
		sum += p.acct.size
		p.acct.Unlock()
	}
	if got := db.cache.resident.Load(); got != sum || sum != measured {
		t.Fatalf("resident %d, sum of sizes %d, measured %d: must be equal", got, sum, measured)
	}
	if db.parts.lru.Len() != len(db.parts.m) {
		t.Fatalf("LRU list holds %d partitions, the map %d", db.parts.lru.Len(), len(db.parts.m))
	}
}

// maxPartitionBytes returns the size of the largest cached partition.
func maxPartitionBytes(db *DB) int64 {
	db.parts.Lock()
	defer db.parts.Unlock()
	var n int64
	for _, p := range db.parts.m {
		p.acct.Lock()
		n = max(n, p.acct.size)
		p.acct.Unlock()
	}
	return n
}

func cacheScope(u int) Scope { return Scope{Tenant: "acme", User: fmt.Sprintf("u%03d", u)} }

// TestEvictionNeverUnderTransaction: a partition a transaction wrote is
// pinned until its change is applied. Here the transaction's function
// itself makes the cache evict (it touches other users under a tiny
// budget) and then reads the written partition, which would load a copy
// without the uncommitted write if the written one had been evicted: the
// write would then be applied to a partition no longer cached, and lost
// from the index the cache keeps.
func TestEvictionNeverUnderTransaction(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecs := randVecs(1, 40, 8)
	for u := 1; u < 20; u++ {
		put(t, db, cacheScope(u), vecs[u:u+1])
	}
	// Room for two and a half partitions of one record: the ones touched
	// last stay, and the transaction's end evicts nothing more.
	one := maxPartitionBytes(db)
	db.cache.budget = 2*one + one/2
	db.trim(ctxb, false)
	evicted := db.Stats().Cache.Evictions
	var id string
	err = db.Update(ctxb, func(tx *Tx) error {
		var err error
		if id, err = tx.PutRecord(cacheScope(0), "", Record{Text: "pinned write", Vector: vecs[0]}); err != nil {
			return err
		}
		for u := 1; u < 20; u++ {
			if _, err := db.Search(ctxb, cacheScope(u), vecs[u], 1, nil); err != nil {
				return err
			}
		}
		_, err = db.Search(ctxb, cacheScope(0), vecs[0], 1, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if db.Stats().Cache.Evictions < evicted+10 {
		t.Fatal("no eviction during the transaction: the test did not test anything")
	}
	// Look at the cached partition without loading one afresh, which
	// would read the record from the log.
	db.parts.Lock()
	p := db.parts.m[string(cacheScope(0).Prefix(LevelUser))]
	db.parts.Unlock()
	if p == nil {
		t.Fatal("the partition just used is not cached")
	}
	p.mu.RLock()
	_, ok := p.mu.ids[ulid.MustParse(id)]
	p.mu.RUnlock()
	if !ok {
		t.Fatal("the committed record is lost from the cached index")
	}
	checkAccounting(t, db)
}

// TestEvictedPartitionIdenticalResults: a partition evicted and loaded
// again answers exactly as before, exact and HNSW partitions alike, on
// disk (a changed graph is snapshotted first) and in memory (rebuilt).
func TestEvictedPartitionIdenticalResults(t *testing.T) {
	for _, where := range []string{"memory", "disk"} {
		t.Run(where, func(t *testing.T) {
			dir := ""
			if where == "disk" {
				dir = t.TempDir()
			}
			db := openDisk(t, dir, &Options{ExactThreshold: 30, PartitionCacheBytes: 64 << 10})
			defer db.Close()
			const users = 12
			vecs := randVecs(2, 60*users, 16)
			for u := range users {
				n := 10 + 40*(u%2) // exact and HNSW partitions
				put(t, db, cacheScope(u), vecs[60*u:60*u+n])
			}
			type answer struct {
				vec, text []Hit
			}
			ask := func(u int) answer {
				v, err := db.Search(ctxb, cacheScope(u), vecs[60*u+3], 5, nil)
				if err != nil {
					t.Fatal(err)
				}
				x, err := db.SearchText(ctxb, cacheScope(u), "text 3", 5, nil)
				if err != nil {
					t.Fatal(err)
				}
				return answer{v, x}
			}
			warm := make([]answer, users)
			for u := range users {
				ask(u) // load
				warm[u] = ask(u)
			}
			before := db.Stats().Cache
			db.trim(ctxb, true) // what waits for the background evictor
			for u := range users {
				if got := ask(u); fmt.Sprint(got) != fmt.Sprint(warm[u]) {
					t.Fatalf("user %d after eviction:\n%v\nwarm:\n%v", u, got, warm[u])
				}
			}
			after := db.Stats().Cache
			if after.Evictions == before.Evictions || after.Misses == before.Misses {
				t.Fatalf("no partition was evicted and loaded again: %+v, then %+v", before, after)
			}
			db.trim(ctxb, true)
			if s := db.Stats().Cache; s.Bytes > s.Budget {
				t.Fatalf("cache holds %d bytes, budget %d", s.Bytes, s.Budget)
			}
			checkAccounting(t, db)
		})
	}
}

// TestPartitionCacheModel runs random writes, deletes and searches over
// many users from several goroutines under a budget of a few partitions,
// against a reference map, then reopens the store and checks again: an
// eviction racing a write never loses it, from the index or the disk.
func TestPartitionCacheModel(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 12, SnapshotAfter: 5, PartitionCacheBytes: 24 << 10}
	db := openDisk(t, dir, opts)
	const users, workers, dim = 24, 4, 8
	ops := 600
	if raceEnabled || testing.Short() {
		ops = 250
	}
	ref := make([]map[string]string, users) // user → id → text
	for u := range ref {
		ref[u] = map[string]string{}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range ops {
				u := w + workers*rng.IntN(users/workers) // each user has one worker
				if err := modelStep(db, rng, u, i, dim, ref[u]); err != nil {
					errs <- fmt.Errorf("worker %d step %d user %d: %w", w, i, u, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := db.Stats().Cache
	t.Logf("cache: %+v", s)
	if s.Evictions == 0 {
		t.Fatal("no eviction: the budget did not bind")
	}
	if s.Bytes > s.Budget+s.Budget/4+maxPartitionBytes(db) {
		t.Fatalf("cache holds %d bytes, past the ceiling of budget %d and one partition", s.Bytes, s.Budget)
	}
	checkAccounting(t, db)
	for u := range users {
		if err := checkUser(db, u, ref[u]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDisk(t, dir, opts)
	defer db.Close()
	for u := range users {
		if err := checkUser(db, u, ref[u]); err != nil {
			t.Fatalf("after reopening: %v", err)
		}
	}
}

// modelStep makes one random change to user u (whose reference is ref)
// and checks the user's partition against it.
func modelStep(db *DB, rng *rand.Rand, u, i, dim int, ref map[string]string) error {
	scope := cacheScope(u)
	switch r := rng.IntN(10); {
	case r < 5 || len(ref) == 0:
		text := fmt.Sprintf("note%d of user%d", i, u)
		vec := make([]float32, dim)
		for j := range vec {
			vec[j] = float32(rng.NormFloat64())
		}
		var id string
		err := db.Update(ctxb, func(tx *Tx) error {
			var err error
			id, err = tx.PutRecord(scope, "", Record{Text: text, Vector: vec})
			return err
		})
		if err != nil {
			return err
		}
		ref[id] = text
	case r < 7:
		ids := make([]string, 0, len(ref))
		for id := range ref {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		id := ids[rng.IntN(len(ids))]
		if err := db.Update(ctxb, func(tx *Tx) error { return tx.DeleteRecord(scope, "", id) }); err != nil {
			return err
		}
		delete(ref, id)
	}
	return checkUser(db, u, ref)
}

// checkUser checks that user u's text and vector indexes hold exactly the
// records of ref.
func checkUser(db *DB, u int, ref map[string]string) error {
	scope := cacheScope(u)
	want := make([]string, 0, len(ref))
	for id := range ref {
		want = append(want, id)
	}
	slices.Sort(want)
	text, err := db.SearchText(ctxb, scope, fmt.Sprintf("user%d", u), 1000, &SearchOptions{IDsOnly: true})
	if err != nil {
		return err
	}
	if got := hitIDs(text); !slices.Equal(got, want) {
		return fmt.Errorf("user %d: text index holds %v, want %v", u, got, want)
	}
	q := make([]float32, 8)
	q[0] = 1
	vec, err := db.Search(ctxb, scope, q, 1000, &SearchOptions{IDsOnly: true, Ef: 1000})
	if err != nil {
		return err
	}
	if got := hitIDs(vec); len(ref) > 0 && !slices.Equal(got, want) {
		return fmt.Errorf("user %d: vector index holds %v, want %v", u, got, want)
	}
	return nil
}

func hitIDs(hits []Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	slices.Sort(ids)
	return ids
}

func TestPartitionCacheOptions(t *testing.T) {
	if _, err := Open("", &Options{PartitionCacheBytes: -1}); err == nil {
		t.Fatal("a negative PartitionCacheBytes was accepted")
	}
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if b := db.Stats().Cache.Budget; b != DefaultPartitionCacheBytes() || b <= 0 || b > 1<<30 {
		t.Fatalf("default budget %d", b)
	}
}

// TestReloadAcrossOldSnapshot: a partition loaded in an evicted one's
// place reads the snapshot file while the evicted one's snapshot, begun
// before the eviction, may still be written, and that snapshot then
// deletes the log it covers. The load must read the file and the log in
// one transaction, or it replays from the older file a log already gone.
func TestReloadAcrossOldSnapshot(t *testing.T) {
	db := openDisk(t, t.TempDir(), &Options{ExactThreshold: 10, PartitionCacheBytes: 1 << 30})
	defer db.Close()
	scope := cacheScope(0)
	vecs := randVecs(3, 40, 8)
	put(t, db, scope, vecs[:20]) // an HNSW partition
	old, _ := db.getPartition(ctxb, scope.Prefix(LevelUser))
	if err := db.snapshot(ctxb, old); err != nil {
		t.Fatal(err)
	}
	late := put(t, db, scope, vecs[20:30]) // in the log only
	db.evict(old)
	db.snapshotRead = func() {
		db.snapshotRead = nil
		// The old partition's snapshot, begun before its eviction
		// (erased was checked then), finishes now: the file covers the
		// late records and their log entries go.
		old.erased.Store(false)
		if err := db.snapshot(ctxb, old); err != nil {
			t.Error(err)
		}
		old.erased.Store(true)
	}
	for id, v := range late {
		hits, err := db.Search(ctxb, scope, v, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != id {
			t.Fatalf("record %s written before the eviction is lost from the reloaded index: %v", id, hits)
		}
	}
	if db.snapshotRead != nil {
		t.Fatal("the load read no snapshot: the test tested nothing")
	}
}
