package engine

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Partition cache
//
// Loaded partitions (vector index, BM25 index, id maps) stay in memory
// within a budget, Options.PartitionCacheBytes: past it the least recently
// used ones are evicted, and the next use loads them again from the store,
// snapshot and log, as Open would (issue 29: a server that touched 30,000
// users held 820 MiB, every partition it ever loaded).
//
// Each partition's size is an estimate kept as its changes are applied
// (measureLocked, in constant time). The sum over cached partitions is
// db.cache.resident. A partition is pinned (pins) by every user between
// finding it and being done with it: a transaction from its first write
// until its changes are applied, a search while it reads. Eviction takes
// only unpinned partitions, under db.parts, and pins are taken under
// db.parts too, so a partition is never evicted under a transaction: a
// write is either applied to the cached partition before it goes, or made
// to the one loaded after, whose load reads it from the log.
//
// An HNSW partition with changes since its snapshot is snapshotted before
// it goes, by the background evictor (the request path never waits for
// that I/O); exact partitions have no snapshot and are rebuilt from their
// records, which costs about as much as reading a snapshot would.
// Evicting marks the partition erased, so that no snapshot of it taken
// elsewhere (the snapshotter, in flight) is written after a newer one of
// the partition loaded in its place.

// partitionOverhead is what a loaded partition holds beside its indexes'
// slabs: the structs, their pools and locks, the map and list entries.
const partitionOverhead = 2048

// idEntryBytes estimates one entry of a partition's record id → index id
// map: a 16-byte key, an 8-byte value and the bucket's share.
const idEntryBytes = 48

// partCache is the DB's accounting of the partition cache; the LRU list
// itself lives in db.parts, under its lock.
type partCache struct {
	budget   int64
	resident atomic.Int64 // estimated bytes of the cached partitions

	hits, misses, evictions atomic.Uint64

	// wake asks the background evictor for a round; nil when the DB has
	// none (in memory, read-only), and then nothing needs a snapshot.
	wake chan struct{}
}

// partAcct is a partition's share of the cache's accounting.
type partAcct struct {
	sync.Mutex
	size    int64 // estimated bytes
	charged bool  // size is counted in db.cache.resident
}

// measureLocked estimates the memory p holds; p.mu is held.
func (p *partition) measureLocked() int64 {
	n := int64(partitionOverhead) + int64(len(p.prefix)) +
		int64(cap(p.mu.keys))*16 + int64(len(p.mu.ids))*idEntryBytes
	if p.mu.flat != nil {
		n += p.mu.flat.Bytes()
	}
	if p.mu.hnsw != nil {
		n += p.mu.hnsw.Bytes()
	}
	if p.mu.lex != nil {
		n += p.mu.lex.Bytes()
	}
	return n
}

// resizeLocked measures p again and moves the difference into the
// cache's total while p is charged; p.mu is held for writing (or p is
// not yet visible to others).
func (p *partition) resizeLocked() {
	n := p.measureLocked()
	p.acct.Lock()
	d := n - p.acct.size
	p.acct.size = n
	if p.acct.charged {
		p.db.cache.resident.Add(d)
	}
	p.acct.Unlock()
}

// acquire returns the partition for prefix, loaded and pinned: the caller
// calls release when done with it. A partition loaded here is counted in
// the cache, which is then trimmed to its budget.
func (db *DB) acquire(ctx context.Context, prefix []byte) (*partition, error) {
	db.parts.Lock()
	p, ok := db.parts.m[string(prefix)]
	if ok && db.foreignStale(p) {
		// Another process writes this partition: read it afresh.
		db.removeLocked(p)
		ok = false
	}
	if ok {
		db.parts.lru.MoveToFront(p.elem)
		db.cache.hits.Add(1)
	} else {
		p = &partition{prefix: bytes.Clone(prefix)}
		db.parts.m[string(prefix)] = p
		p.elem = db.parts.lru.PushFront(p)
		db.cache.misses.Add(1)
	}
	p.pins.Add(1)
	db.parts.Unlock()
	loadedHere := false
	p.load.Do(func() {
		loadedHere = true
		p.loadErr = db.loadPartition(ctx, p)
		p.loadedAt.Store(time.Now().UnixNano())
		p.loaded.Store(p.loadErr == nil)
	})
	if p.loadErr != nil {
		// Let a later call try again.
		p.pins.Add(-1)
		db.parts.Lock()
		if db.parts.m[string(prefix)] == p {
			db.removeLocked(p)
		}
		db.parts.Unlock()
		return nil, p.loadErr
	}
	if loadedHere {
		db.charge(p)
		db.trim(ctx, false)
	}
	return p, nil
}

// release unpins a partition acquire returned. It needs no lock: only a
// count above zero keeps eviction away, and pins rise only under
// db.parts.
func (p *partition) release() { p.pins.Add(-1) }

// charge counts a newly loaded partition in the cache, unless it was
// dropped (erased, taken over) while it loaded.
func (db *DB) charge(p *partition) {
	db.parts.Lock()
	defer db.parts.Unlock()
	if db.parts.m[string(p.prefix)] != p {
		return
	}
	p.acct.Lock()
	if !p.acct.charged {
		p.acct.charged = true
		db.cache.resident.Add(p.acct.size)
	}
	p.acct.Unlock()
}

// removeLocked takes p out of the cache: the map, the LRU list and the
// resident total; db.parts is held. p is marked erased so that no
// snapshot of it is written any more: the partition loaded in its place
// owns the snapshot from now on.
func (db *DB) removeLocked(p *partition) {
	p.erased.Store(true)
	if db.parts.m[string(p.prefix)] == p {
		delete(db.parts.m, string(p.prefix))
	}
	if p.elem != nil {
		db.parts.lru.Remove(p.elem)
		p.elem = nil
	}
	p.acct.Lock()
	if p.acct.charged {
		p.acct.charged = false
		db.cache.resident.Add(-p.acct.size)
	}
	p.acct.Unlock()
}

// trim evicts least recently used partitions until the cache is within
// its budget. With withSnapshots false (the request path) it evicts only
// partitions that need no snapshot and wakes the background evictor for
// the rest, unless the cache is past its ceiling (see victim); with it
// true (the evictor) it snapshots a changed HNSW partition before
// evicting it.
func (db *DB) trim(ctx context.Context, withSnapshots bool) {
	// A round evicts its victim unless it was pinned again meanwhile (then
	// the next round passes it over while pinned); maxTrimRounds bounds
	// the rounds of one call all the same.
	for round := 0; db.cache.resident.Load() > db.cache.budget && ctx.Err() == nil && round < maxTrimRounds; round++ {
		v, snap, deferred := db.victim(withSnapshots)
		if v == nil {
			if deferred {
				db.wakeEvictor()
			}
			return
		}
		if snap {
			if err := db.snapshot(ctx, v); err != nil {
				// The log still holds every change: the reload replays it.
				db.logger.Warn("engram: snapshot before eviction failed", "err", err)
			}
		}
		db.evict(v)
	}
}

// maxTrimRounds bounds one trim call, in case victims keep being pinned
// again between their choice and their eviction: a million rounds is more
// than a budget of 1 GiB holds of the smallest partitions (2 KiB).
const maxTrimRounds = 1 << 20

// victim returns the least recently used partition that may be evicted
// now, and whether to snapshot it first; deferred reports that one
// needing a snapshot was passed over because withSnapshots is false.
//
// Writes can change HNSW partitions faster than the evictor snapshots
// them (an fsync each): past the ceiling, a quarter above the budget, the
// request path evicts them without a snapshot, and their reload replays
// the log since the last one (or rebuilds the graph).
func (db *DB) victim(withSnapshots bool) (v *partition, snap, deferred bool) {
	overCeiling := db.cache.resident.Load() > db.cache.budget+db.cache.budget/4
	db.parts.Lock()
	defer db.parts.Unlock()
	for e := db.parts.lru.Back(); e != nil; e = e.Prev() {
		p := e.Value.(*partition)
		if p.pins.Load() > 0 || !p.loaded.Load() {
			continue
		}
		need := db.needsSnapshot(p)
		if need && !withSnapshots && !overCeiling {
			deferred = true
			continue
		}
		return p, need && withSnapshots, deferred
	}
	return nil, false, deferred
}

// needsSnapshot reports whether p is an HNSW partition with changes since
// its snapshot that this DB can write one of: its reload would otherwise
// replay (or, without a snapshot, rebuild) the whole graph.
func (db *DB) needsSnapshot(p *partition) bool {
	if db.cache.wake == nil || (db.kv.Postgres() && !db.Owns(p.prefix)) {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.hnsw != nil && p.mu.dirty > 0
}

// evict removes p from the cache if it is still there and unpinned.
func (db *DB) evict(p *partition) {
	db.parts.Lock()
	defer db.parts.Unlock()
	if db.parts.m[string(p.prefix)] != p || p.pins.Load() > 0 {
		return
	}
	db.removeLocked(p)
	db.cache.evictions.Add(1)
}

// wakeEvictor asks the background evictor for a round, without waiting.
func (db *DB) wakeEvictor() {
	if db.cache.wake == nil {
		return
	}
	select {
	case db.cache.wake <- struct{}{}:
	default:
	}
}

// evictLoop runs the background evictor until stop is closed.
func (db *DB) evictLoop(stop <-chan struct{}) {
	ctx, cancel := stopContext(stop)
	defer cancel()
	for {
		select {
		case <-stop:
			return
		case <-db.cache.wake:
			db.trim(ctx, true)
		}
	}
}

// CacheStats is a snapshot of the partition cache's counters since Open.
type CacheStats struct {
	Partitions int    // partitions loaded now
	Bytes      int64  // their estimated memory
	Budget     int64  // Options.PartitionCacheBytes, the default filled in
	Hits       uint64 // uses of a partition that was loaded
	Misses     uint64 // uses that loaded one
	Evictions  uint64 // partitions evicted to stay within the budget
}

// cacheStats returns the partition cache's counters.
func (db *DB) cacheStats() CacheStats {
	db.parts.Lock()
	n := len(db.parts.m)
	db.parts.Unlock()
	return CacheStats{
		Partitions: n,
		Bytes:      db.cache.resident.Load(),
		Budget:     db.cache.budget,
		Hits:       db.cache.hits.Load(),
		Misses:     db.cache.misses.Load(),
		Evictions:  db.cache.evictions.Load(),
	}
}
