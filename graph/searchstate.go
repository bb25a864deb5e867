package graph

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/engramdb/engram/kv"
)

// Keeping the in-memory search index (search.go) coherent with the store.
//
// Every transaction that writes an entity record also writes, blindly (no
// read, so Badger sees no new conflict), one generation key of the graph:
//
//	root 'g' writer → token
//
// writer is 16 random bytes of the Store (one per write the Store has had
// in flight at once, reused), token 16 random bytes per transaction.
// Writers never overwrite each other's keys, so the keys under root 'g'
// (the graph's generation vector) change whenever anyone writes an
// entity: this Store, another Store of the same process, another process,
// a PostgreSQL peer, a restore or an import.
//
// An index remembers the vector its content reflects. A search reads the
// vector in its own snapshot and uses the index only when the two are
// equal; otherwise it builds the index again in a new snapshot, installed
// only if no write of this Store to the graph ran meanwhile (or it scans,
// see graphIndex.owed), and uses it if that snapshot's vector is its own.
// A transaction of this Store that writes entities records what it
// changed and, when kv reports its commit (kv.Txn.OnEnd), applies the
// changes and sets its own token in the remembered vector, but only when
// no other writer of the graph in this Store was in flight at any time
// between its first write and its end: then every earlier commit of this
// Store is applied and no later one, so content and vector agree.
// An overlap, a commit of unknown outcome or an index built while the
// write was in flight leaves the index unusable (vec nil) until the next
// build. Aborted writes change nothing. A graph with no generation key (written
// before this index, or empty) always scans.

// tagGen is the generation keys' tag (see the key layout in keys.go).
const tagGen byte = 'g'

// genSlot is one writer's generation key suffix and token.
type genSlot struct {
	writer, token [16]byte
}

// indexKey names one graph of one store.
type indexKey struct {
	db   *kv.DB
	root string
}

// searchIndexes is a Store's set of graph indexes.
type searchIndexes struct {
	mu sync.Mutex
	// free holds writer ids of this Store that no write in flight uses.
	// Concurrent writes of the Store take different ids, so that their
	// blind writes never touch one key (a PostgreSQL SERIALIZABLE
	// transaction conflicts on that); there are as many ids as writes
	// were ever in flight at once.
	free   [][16]byte
	graphs map[indexKey]*graphIndex
	epoch  uint64 // counts drops: a build begun before one is not installed

	// hits, scans and builds count searches answered by an index, by
	// the scan, and index builds (tests and benchmarks read them).
	hits, scans, builds atomic.Int64
	// beforeInstall, when set, runs between a build's read and its
	// install (test seam).
	beforeInstall func()
}

// graphIndex is one graph's index and the writes of this Store in flight
// on it, guarded by mu (taken after searchIndexes.mu when both are).
type graphIndex struct {
	mu     sync.Mutex
	idx    *searchIndex // nil: none built
	vec    []genSlot    // the vector idx reflects; nil: idx is not usable
	writes map[*searchWrite]struct{}
	served bool // idx answered a search since it was built
	// compacting is set while a search builds idx's base again.
	compacting bool
	// commits counts this Store's writes to the graph that committed (or
	// may have): a build installs only if none ran while it read.
	commits uint64
	// useless counts builds in a row that never served a search; owed is
	// how many searches scan before the next build (2^useless - 1), so
	// that a graph whose index is always stale scans instead of building
	// on every search.
	useless, owed int
}

// searchWrite is one transaction's entity writes, for its graph's index.
type searchWrite struct {
	g       *graphIndex // nil in a bulk load
	key     indexKey
	writer  [16]byte // the generation key this write took
	token   [16]byte
	overlap bool               // another write of the graph was in flight
	record  bool               // an index existed at the first write
	changes map[string]*Entity // folded name → record (nil: deleted), when record
}

// graphLocked returns key's graph, created when create is set.
func (si *searchIndexes) graphLocked(key indexKey, create bool) *graphIndex {
	g := si.graphs[key]
	if g == nil && create {
		g = &graphIndex{writes: map[*searchWrite]struct{}{}}
		if si.graphs == nil {
			si.graphs = map[indexKey]*graphIndex{}
		}
		si.graphs[key] = g
	}
	return g
}

// entityChanged records that the entity folded was written (e is its new
// record) or deleted (e nil), and writes the graph's generation key on the
// transaction's first entity write.
func (tx *Tx) entityChanged(folded string, e *Entity) error {
	if tx.sw == nil {
		if err := tx.beginSearchWrite(); err != nil {
			return err
		}
	}
	if tx.sw.record {
		// The text is made at the end, once per entity: CreateEntities
		// writes a new entity twice. Callers do not change e afterwards.
		var c *Entity
		if e != nil {
			c = new(Entity)
			*c = *e
		}
		tx.sw.changes[folded] = c
	}
	return nil
}

func (tx *Tx) beginSearchWrite() error {
	s := tx.s
	// Random, not s.newID: fact ids must not depend on entity writes.
	sw := &searchWrite{}
	db := tx.t.DB()
	pooled := tx.bulk == nil && db != nil
	var err error
	if pooled {
		sw.writer, err = s.search.takeWriter()
	} else {
		// A bulk load tells no index: it writes under a writer of its
		// own, which no index remembers, so each one builds again.
		_, err = rand.Read(sw.writer[:])
	}
	if err == nil {
		_, err = rand.Read(sw.token[:])
	}
	if err != nil {
		return fmt.Errorf("graph: generation token: %w", err)
	}
	tx.sw = sw
	if err := tx.set(append(tx.k.start(tagGen), sw.writer[:]...), sw.token[:]); err != nil || !pooled {
		if pooled {
			s.search.putWriter(sw.writer)
		}
		return err
	}
	sw.key = indexKey{db: db, root: string(tx.k.root)}
	// Registered with the set's lock held, so that forget (an idle graph
	// leaves the set) cannot leave this write on a graph no search sees.
	s.search.mu.Lock()
	g := s.search.graphLocked(sw.key, true)
	g.mu.Lock()
	if len(g.writes) > 0 {
		sw.overlap = true
		for w := range g.writes {
			w.overlap = true
		}
	}
	g.writes[sw] = struct{}{}
	sw.record = g.idx != nil
	g.mu.Unlock()
	s.search.mu.Unlock()
	if sw.record {
		sw.changes = map[string]*Entity{}
	}
	sw.g = g
	tx.t.OnEnd(func(o kv.Outcome) { s.endSearchWrite(sw, o) })
	return nil
}

// endSearchWrite applies a write that ended to its graph's index.
func (s *Store) endSearchWrite(sw *searchWrite, o kv.Outcome) {
	g := sw.g
	g.mu.Lock()
	delete(g.writes, sw)
	if o != kv.Aborted {
		g.commits++
	}
	switch {
	case o == kv.Aborted || g.idx == nil:
	case o == kv.Unknown || !sw.record:
		g.vec = nil
	default:
		for n, e := range sw.changes {
			if e == nil {
				g.idx.set(n, "", true)
			} else {
				g.idx.set(n, searchText(e), false)
			}
		}
		if sw.overlap {
			g.vec = nil
		} else if g.vec != nil {
			g.vec = withSlot(g.vec, genSlot{writer: sw.writer, token: sw.token})
		}
	}
	idle := g.idx == nil && len(g.writes) == 0
	g.mu.Unlock()
	s.search.putWriter(sw.writer)
	if idle {
		s.search.forget(sw.key, g)
	}
}

// takeWriter returns a writer id no write in flight uses.
func (si *searchIndexes) takeWriter() ([16]byte, error) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if n := len(si.free); n > 0 {
		w := si.free[n-1]
		si.free = si.free[:n-1]
		return w, nil
	}
	var w [16]byte
	_, err := rand.Read(w[:])
	return w, err
}

// putWriter returns a writer id to the pool.
func (si *searchIndexes) putWriter(w [16]byte) {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.free = append(si.free, w)
}

// forget removes g from the set if it still holds nothing.
func (si *searchIndexes) forget(key indexKey, g *graphIndex) {
	si.mu.Lock()
	defer si.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if si.graphs[key] == g && g.idx == nil && len(g.writes) == 0 {
		delete(si.graphs, key)
	}
}

// withSlot returns vec with slot's writer set to slot's token.
func withSlot(vec []genSlot, slot genSlot) []genSlot {
	i, ok := slices.BinarySearchFunc(vec, slot.writer, func(a genSlot, w [16]byte) int { return bytes.Compare(a.writer[:], w[:]) })
	if ok {
		vec[i].token = slot.token
		return vec
	}
	return slices.Insert(vec, i, slot)
}

// genVector reads the graph's generation vector in the transaction, in
// writer order.
func (tx *Tx) genVector() ([]genSlot, error) {
	prefix := bytes.Clone(tx.k.start(tagGen))
	var vec []genSlot
	err := tx.scan(prefix, true, func(key, val []byte) (bool, error) {
		var g genSlot
		if len(key) != len(prefix)+16 || len(val) != 16 {
			return false, ErrCorrupt
		}
		copy(g.writer[:], key[len(prefix):])
		copy(g.token[:], val)
		vec = append(vec, g)
		return true, nil
	})
	return vec, err
}

// searchIndexed answers SearchNodes from the graph's index: the folded
// names of the first limit entities that contain q, in order. It reports
// false when the caller must scan: a transaction that wrote entities, a
// query holding searchSep, a graph without generation keys, or an index
// that is stale while a build is not due.
func (tx *Tx) searchIndexed(q string, limit int) ([]string, bool, error) {
	db := tx.t.DB()
	if tx.bulk != nil || tx.sw != nil || db == nil || strings.IndexByte(q, searchSep) >= 0 {
		return nil, false, nil
	}
	vec, err := tx.genVector()
	if err != nil || len(vec) == 0 {
		return nil, false, err
	}
	si := &tx.s.search
	key := indexKey{db: db, root: string(tx.k.root)}
	si.mu.Lock()
	g := si.graphLocked(key, true)
	epoch := si.epoch
	si.mu.Unlock()
	if names, ok := g.lookup(vec, q, limit); ok {
		return names, true, nil
	}
	due, commits := g.buildDue()
	if !due {
		return nil, false, nil
	}
	if err := tx.s.buildSearchIndex(db, key, g, epoch, commits); err != nil {
		return nil, false, err
	}
	names, ok := g.lookup(vec, q, limit)
	return names, ok, nil
}

// lookup answers from the index when it reflects vec.
func (g *graphIndex) lookup(vec []genSlot, q string, limit int) ([]string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idx == nil || g.vec == nil || !slices.Equal(g.vec, vec) {
		return nil, false
	}
	g.served = true
	names := g.idx.search(q, limit)
	if g.idx.compactDue() && !g.compacting {
		g.compactLocked()
	}
	return names, true
}

// compactHook, when set, runs between a compaction's build and its
// install (test seam).
var compactHook func()

// compactLocked folds the index's delta into a new base: it copies the
// delta, builds without the lock (writers' ends and other searches go on
// with the old index meanwhile), then installs the new index with the
// changes taken since, unless the index was replaced or dropped.
func (g *graphIndex) compactLocked() {
	x := g.idx
	delta := maps.Clone(x.delta)
	g.compacting = true
	g.mu.Unlock()
	y := x.compacted(delta)
	if compactHook != nil {
		compactHook()
	}
	g.mu.Lock()
	g.compacting = false
	if g.idx == x {
		x.catchUp(y, delta)
		g.idx = y
	}
}

// counted records whether a search used the index.
func (si *searchIndexes) counted(ok bool) {
	if ok {
		si.hits.Add(1)
	} else {
		si.scans.Add(1)
	}
}

// buildDue reports whether a search that found the index stale should
// build it again now, rather than scan, and the count of this Store's
// commits to the graph at the time.
func (g *graphIndex) buildDue() (bool, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.writes) > 0 {
		// A write of this Store is committing: its end brings the index
		// up to date, or tells it is stale.
		return false, 0
	}
	if g.idx != nil && !g.served {
		g.useless = min(g.useless+1, 6)
		g.owed = 1<<g.useless - 1
		g.served = true // counted once
	} else if g.served && g.owed == 0 {
		g.useless = 0
	}
	if g.owed > 0 {
		g.owed--
		return false, 0
	}
	return true, g.commits
}

// buildSearchIndex builds the index of key's graph in a snapshot of its
// own, taken after this Store's commits to the graph numbered commits,
// and installs it unless one of this Store's writes to the graph ran in
// the meantime (then the snapshot and the commits applied may disagree)
// or the index was dropped.
func (s *Store) buildSearchIndex(db *kv.DB, key indexKey, g *graphIndex, epoch, commits uint64) error {
	var vec []genSlot
	var idx *searchIndex
	// SearchNodes takes no context; a build reads one snapshot and ends.
	err := s.View(context.Background(), db, []byte(key.root), func(tx *Tx) error {
		var err error
		if vec, err = tx.genVector(); err != nil {
			return err
		}
		idx, err = tx.readSearchIndex()
		return err
	})
	if err != nil {
		return err
	}
	si := &s.search
	si.builds.Add(1)
	if si.beforeInstall != nil {
		si.beforeInstall()
	}
	si.mu.Lock()
	defer si.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if si.epoch != epoch || si.graphs[key] != g || g.commits != commits || len(g.writes) > 0 || len(vec) == 0 {
		return nil
	}
	g.idx, g.vec, g.served = idx, vec, false
	return nil
}

// readSearchIndex reads every entity of the graph in the transaction.
func (tx *Tx) readSearchIndex() (*searchIndex, error) {
	prefix := bytes.Clone(tx.k.start(tagEntity))
	texts := map[string]string{}
	err := tx.scan(prefix, true, func(key, val []byte) (bool, error) {
		e, err := decodeEntity(val)
		if err != nil {
			return false, err
		}
		texts[string(key[len(prefix):])] = searchText(&e)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return newSearchIndex(texts), nil
}

// DropSearchIndexes frees the in-memory search index of every graph whose
// root starts with prefix (all of them for an empty prefix), in every
// store: the next search of such a graph builds it again from the store.
// Erasing a user's keys must drop its graph's index, so that no text of
// it stays in memory; a budget that evicts a partition drops it too.
func (s *Store) DropSearchIndexes(prefix []byte) {
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	s.search.epoch++
	for key, g := range s.search.graphs {
		if !bytes.HasPrefix([]byte(key.root), prefix) {
			continue
		}
		g.mu.Lock()
		g.idx, g.vec = nil, nil
		if len(g.writes) == 0 {
			delete(s.search.graphs, key)
		}
		g.mu.Unlock()
	}
}

// SearchIndexBytes estimates the memory the search indexes of the graphs
// whose root starts with prefix hold (all graphs for an empty prefix).
func (s *Store) SearchIndexBytes(prefix []byte) int64 {
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	var n int64
	for key, g := range s.search.graphs {
		if !bytes.HasPrefix([]byte(key.root), prefix) {
			continue
		}
		g.mu.Lock()
		if g.idx != nil {
			n += g.idx.size()
		}
		g.mu.Unlock()
	}
	return n
}
