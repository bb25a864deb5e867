package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/engramdb/engram/kv"
)

// The bulk path of Store.Load.
//
// Into a store that holds nothing at all, Load runs the same Tx code as
// its transactional path (CreateEntities, relate: names, aliases, the
// single-valued rule, duplicates, ids), in one Tx over a read-only
// snapshot of the empty store, but its writes go to a bulkSink in memory
// instead of a kv transaction. The sink then sorts them and hands them to
// kv.DB.BulkLoad, which writes Badger's tables directly: no write-ahead
// log, memtable or compaction, the cost that bounds the transactional
// path (bench/results/graph.md, run E).
//
// Reads the Tx makes see the sink: point reads of names, entity records
// and fact ids (tx.get, tx.has) look in its map; fact values are read
// through the Tx's overlay (overlay.go), which in one Tx holds every fact
// the load wrote, over a base iterator of the empty store.

// bulkMinItems is the smallest dump (entities plus facts) that Load
// writes through the bulk path; below it a few transactions are as fast
// and leave the store's LSM tree as usual.
const bulkMinItems = 1024

// errBulkRead is returned if the Tx of a bulk load reads an index key or
// an annotation directly: the sink answers point reads of other keys only
// (fact values come through the overlay). No code path of Load does.
var errBulkRead = errors.New("graph: bulk load read an index key")

// bulkSink collects a bulk load's writes: keys and values back to back in
// one buffer, an entry per write grouped by the key's tag byte, and the
// latest write of each key that the Tx may read again (names, entities,
// fact ids).
type bulkSink struct {
	root  int // length of the root prefix: the tag follows it
	buf   []byte
	ents  [256][]bulkEntry
	point map[string]bulkRef
	// first and common are, per tag, the first key written and how many
	// leading bytes every key since shares with it: sorting compares the
	// 8 bytes after those first (bulkEntry.pre).
	first  [256][]byte
	common [256]int
	// factIDs is set when the dump gives fact ids: only then does the Tx
	// ask whether an id is taken, and fact records join point.
	factIDs bool
}

// bulkRef is where an entry is: ents[tag][i].
type bulkRef struct {
	tag byte
	i   int
}

// bulkEntry is one write: key at buf[off:], then its value; vlen
// bulkDeleted marks a deletion.
type bulkEntry struct {
	off        int
	klen, vlen uint32
	pre        uint64 // set by sorted
}

const bulkDeleted = math.MaxUint32

// newBulkSink returns a sink sized for a dump of this many entities and
// facts: a fact writes four keys (about 270 bytes in the benchmark's
// graph), an entity three or more; the buffer grows past that if need be.
func newBulkSink(root, entities, facts int) *bulkSink {
	b := &bulkSink{root: root, point: make(map[string]bulkRef, 2*entities+facts/4)}
	b.buf = make([]byte, 0, facts*(300+4*root)+entities*(160+3*root))
	for _, t := range []byte{tagFact, tagSPO, tagOSP, tagPOS} {
		b.ents[t] = make([]bulkEntry, 0, facts)
	}
	return b
}

func (b *bulkSink) key(e *bulkEntry) []byte {
	return b.buf[e.off : e.off+int(e.klen) : e.off+int(e.klen)]
}

func (b *bulkSink) val(e *bulkEntry) []byte {
	start := e.off + int(e.klen)
	return b.buf[start : start+int(e.vlen) : start+int(e.vlen)]
}

// indexKey reports whether key is an index entry (SPO, OSP, POS), which
// the Tx reads only through its overlay.
func (b *bulkSink) indexKey(key []byte) bool {
	switch key[b.root] {
	case tagSPO, tagOSP, tagPOS:
		return true
	}
	return false
}

func (b *bulkSink) add(key, val []byte, del bool) {
	e := bulkEntry{off: len(b.buf), klen: uint32(len(key)), vlen: uint32(len(val))}
	if del {
		e.vlen = bulkDeleted
	}
	b.buf = append(b.buf, key...)
	b.buf = append(b.buf, val...)
	t := key[b.root]
	if b.first[t] == nil {
		b.first[t] = bytes.Clone(key)
		b.common[t] = len(key)
	} else if c := b.common[t]; c > 0 {
		f := b.first[t][:c]
		n := min(len(f), len(key))
		i := 0
		for i < n && f[i] == key[i] {
			i++
		}
		b.common[t] = i
	}
	if !b.indexKey(key) && (t != tagFact || b.factIDs) && t != tagNote {
		b.point[string(key)] = bulkRef{tag: t, i: len(b.ents[t])}
	}
	b.ents[t] = append(b.ents[t], e)
}

// get returns the value last written under key, and whether there is one;
// the slice is valid until the next write.
func (b *bulkSink) get(key []byte) ([]byte, bool, error) {
	if b.indexKey(key) || (key[b.root] == tagFact && !b.factIDs) || key[b.root] == tagNote {
		return nil, false, errBulkRead
	}
	r, ok := b.point[string(key)]
	if !ok {
		return nil, false, nil
	}
	e := &b.ents[r.tag][r.i]
	if e.vlen == bulkDeleted {
		return nil, false, nil
	}
	return b.val(e), true, nil
}

// sorted returns the final value of every key written and not deleted, in
// key order. Every key starts with the same root and a tag byte, so the
// groups of writes by tag are sorted in parallel; within a key the later
// write (at the higher offset) comes last and wins.
func (b *bulkSink) sorted() iter.Seq2[[]byte, []byte] {
	groups := &b.ents
	b.point = nil
	// Within a group, most comparisons are settled by the 8 bytes that
	// follow the prefix every key of the group shares, held in the entry:
	// no visit to two random places of a buffer of hundreds of megabytes.
	for t := range groups {
		c := b.common[t]
		g := groups[t]
		for i := range g {
			k := b.key(&g[i])
			var w [8]byte
			if c < len(k) {
				copy(w[:], k[c:])
			}
			g[i].pre = binary.BigEndian.Uint64(w[:])
		}
	}
	cmp := func(x, y bulkEntry) int {
		if x.pre != y.pre {
			if x.pre < y.pre {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(b.key(&x)[b.root+1:], b.key(&y)[b.root+1:]); c != 0 {
			return c
		}
		return x.off - y.off
	}
	// Largest groups first, on as many goroutines as there are cores.
	order := make([]int, 0, 8)
	for t := range groups {
		if len(groups[t]) > 1 {
			order = append(order, t)
		}
	}
	slices.SortFunc(order, func(x, y int) int { return len(groups[y]) - len(groups[x]) })
	work := make(chan int, len(order))
	for _, t := range order {
		work <- t
	}
	close(work)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				slices.SortFunc(groups[t], cmp)
			}
		}()
	}
	wg.Wait()
	return func(yield func([]byte, []byte) bool) {
		for t := range groups {
			g := groups[t]
			for i := range g {
				if i+1 < len(g) && bytes.Equal(b.key(&g[i]), b.key(&g[i+1])) {
					continue // a later write of the same key follows
				}
				if g[i].vlen == bulkDeleted {
					continue
				}
				if !yield(b.key(&g[i]), b.val(&g[i])) {
					return
				}
			}
		}
	}
}

// get reads key through the kv transaction, or from the sink in a bulk
// load.
func (tx *Tx) get(key []byte) ([]byte, error) {
	if tx.bulk == nil {
		return tx.t.Get(key)
	}
	v, ok, err := tx.bulk.get(key)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, kv.ErrNotFound
	}
	return slices.Clone(v), nil
}

// has is get without the value.
func (tx *Tx) has(key []byte) (bool, error) {
	if tx.bulk == nil {
		return tx.t.Has(key)
	}
	_, ok, err := tx.bulk.get(key)
	return ok, err
}

// storeEmpty reports whether db holds no key at all, under any root.
func storeEmpty(ctx context.Context, db *kv.DB) (bool, error) {
	empty := true
	err := db.View(ctx, func(t *kv.Txn) error {
		it := t.NewIterator(kv.IterOptions{KeysOnly: true})
		defer it.Close()
		it.Seek(nil)
		empty = !it.Valid()
		return nil
	})
	return empty, err
}

// loadBulk is Load through the bulk path; ok is false, with nothing
// written, when the store turned out not to be empty (another writer came
// first), and Load then takes the transactional path.
func (s *Store) loadBulk(ctx context.Context, db *kv.DB, root []byte, d *Dump, o *LoadOptions) (st LoadStats, ok bool, err error) {
	ls := &loadState{fresh: true, whole: true, names: map[string]string{}}
	sink := newBulkSink(len(root), len(d.Entities), len(d.Facts))
	for i := range d.Facts {
		if d.Facts[i].ID != "" {
			sink.factIDs = true
			break
		}
	}
	total := len(d.Entities) + len(d.Facts)
	err = db.View(ctx, func(t *kv.Txn) error {
		tx := s.Tx(t, root)
		tx.keepRecordTimes = true
		tx.load = ls
		tx.bulk = sink
		for i := range total {
			if i%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if i < len(d.Entities) {
				created, err := tx.CreateEntities([]Entity{d.Entities[i]})
				if err != nil {
					return fmt.Errorf("entity %d: %w", i, err)
				}
				st.Entities += len(created)
				continue
			}
			_, isNew, err := tx.relate(d.Facts[i-len(d.Entities)])
			if err != nil {
				return fmt.Errorf("fact %d: %w", i-len(d.Entities), err)
			}
			if isNew {
				st.Facts++
			} else {
				st.Duplicates++
			}
		}
		return nil
	})
	if err != nil {
		return LoadStats{}, true, err
	}
	err = db.BulkLoad(ctx, sink.sorted())
	if errors.Is(err, kv.ErrNotEmpty) {
		return LoadStats{}, false, nil
	}
	if err != nil {
		return LoadStats{}, true, err
	}
	if o.Progress != nil {
		o.Progress(total, total)
	}
	return st, true, nil
}
