package graph

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Dump is a graph in memory: what [Store.Load] writes and what an N-Quads
// file holds.
type Dump struct {
	Entities []Entity `json:"entities"`
	Facts    []Fact   `json:"facts"`

	// lines, set by ParseNQuads, is the input line of each entity and
	// fact, so that Load's refusal of one names its line.
	lines *dumpLines
}

// LoadOptions configures [Store.Load].
type LoadOptions struct {
	// Progress, when set, is called after each committed chunk with the
	// number of entities plus facts written so far and the total.
	Progress func(done, total int)
}

// LoadStats counts what [Store.Load] did.
type LoadStats struct {
	// Entities created (names already present are extended, not counted).
	Entities int
	// Facts stored; Duplicates is how many repeated a stored fact.
	Facts, Duplicates int
}

// Load writes a dump into the graph under root: entities as
// [Tx.CreateEntities] does, then facts in order as [Tx.Relate] does,
// except that what a dump records is restored: an entity's CreatedAt, a
// fact's ID (when it is a ULID not taken in this graph), CreatedAt and
// ExpiredAt (when it has a ValidTo), and a fact whose ValidTo equals its
// ValidFrom (one replaced at the instant it began) is accepted.
//
// Every entity and fact is checked before anything is written: a bad one
// is an error and nothing is written. The writes then go in transactions
// of a few thousand facts (one transaction cannot hold a large dump), so a
// storage failure midway leaves the chunks before it; loading the same dump
// again completes it, since facts already stored are skipped. Load is not
// isolated from concurrent writers to the same graph.
//
// Into a store that holds no key at all, under any root (a new store: an
// import, a restore, a benchmark), a dump of at least 1,024 entities and
// facts takes a bulk path instead, several times faster: the same entities
// and facts are built in memory and written with [kv.DB.BulkLoad], which
// skips Badger's log, memtable and compaction. The keys and values stored
// are those the transactions would have written. It is all or nothing: on
// any error, or a crash, nothing is left (the next [kv.Open] removes what
// an unfinished load wrote), and when Load returns nil the dump is on
// disk. Every other transaction of db waits while the bulk write runs
// (the building before it only reads), so Load must not be called from
// within one. Since package memory keeps a user's messages in the same
// store, the path is taken only when the store is wholly empty, checked
// with writers held off; otherwise, or when another writer got there
// first, Load takes the transactional path. On the bulk path Progress is
// called once, at the end. The bulk path holds the whole dump's keys and
// values in memory while it builds them (about 650 bytes a fact in the
// benchmark's graph of bench/results/graph.md).
func (s *Store) Load(ctx context.Context, db *kv.DB, root []byte, d *Dump, opts *LoadOptions) (LoadStats, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if err := s.checkDump(d); err != nil {
		if d.lines != nil {
			return LoadStats{}, d.lines.locate(s, d, err)
		}
		return LoadStats{}, err
	}
	maxEntries, maxBytes := db.TxnLimits()
	// A chunk stops while it has room for one more entity or fact of the
	// largest size the checks allow, so no write can exceed the limits.
	const maxEntriesPerItem = 8 + MaxAliases
	maxItemBytes := int64(entryOverhead*maxEntriesPerItem + 16*MaxNameLength + 2*MaxSourceLength + 2*factHead + 64 + MaxAnnotationLength +
		MaxObservations*(MaxObservationLength+8)*2)
	maxItemBytes = min(maxItemBytes, maxBytes/4)
	fresh, err := s.emptyGraph(ctx, db, root)
	if err != nil {
		return LoadStats{}, err
	}
	if fresh && len(d.Entities)+len(d.Facts) >= bulkMinItems && !s.noBulk {
		empty, err := storeEmpty(ctx, db)
		if err != nil {
			return LoadStats{}, err
		}
		if empty {
			st, ok, err := s.loadBulk(ctx, db, root, d, &o)
			if ok {
				return st, err
			}
		}
	}
	ls := &loadState{fresh: fresh, seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}, names: map[string]string{}}
	total := len(d.Entities) + len(d.Facts)
	var st LoadStats
	done := 0
	for done < total {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var n int
		var chunk LoadStats
		var tx *Tx
		var seen []uint64 // facts this chunk wrote, for ls.seen once committed
		err := db.Update(ctx, func(t *kv.Txn) error {
			tx = s.Tx(t, root)
			tx.keepRecordTimes = true
			tx.load = ls
			n, chunk, seen = 0, LoadStats{}, seen[:0]
			for i := done; i < total && tx.entries+maxEntriesPerItem <= maxEntries && tx.bytes+maxItemBytes <= maxBytes; i++ {
				if i < len(d.Entities) {
					created, err := tx.CreateEntities([]Entity{d.Entities[i]})
					if err != nil {
						return fmt.Errorf("entity %d: %w", i, err)
					}
					chunk.Entities += len(created)
				} else {
					f, isNew, err := tx.relate(d.Facts[i-len(d.Entities)])
					if err != nil {
						return fmt.Errorf("fact %d: %w", i-len(d.Entities), err)
					}
					if isNew {
						chunk.Facts++
						seen = append(seen, ls.hash(Fold(f.Subject), Fold(f.Predicate), Fold(f.Object)))
					} else {
						chunk.Duplicates++
					}
				}
				n++
			}
			return nil
		})
		if errors.Is(err, kv.ErrConflict) {
			continue // the chunk is re-run on a fresh snapshot
		}
		if err != nil {
			return st, err
		}
		for k, v := range tx.names { // only once committed
			ls.names[k] = v
		}
		for _, h := range seen {
			ls.seen[h] = struct{}{}
		}
		st.Entities += chunk.Entities
		st.Facts += chunk.Facts
		st.Duplicates += chunk.Duplicates
		done += n
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}
	return st, nil
}

// loadState is what Store.Load knows across its chunks. When the graph was
// empty as the load began, a fact can only repeat one the load itself
// wrote; seen holds hashes of those triples, so most facts skip the index
// seek of the duplicate check (9 µs of Badger merge-iterator work each in
// a million-fact load, half of Load's CPU time before this).
type loadState struct {
	// names caches resolved names across chunks, as Tx.names does within
	// one; a chunk's own lookups join it once the chunk commits.
	names map[string]string
	fresh bool
	// whole is set when the load runs in one Tx (the bulk path): its
	// overlay holds every fact written, so seen is not needed.
	whole bool
	seed  maphash.Seed
	seen  map[uint64]struct{}
}

func (ls *loadState) hash(s, p, o string) uint64 {
	var h maphash.Hash
	h.SetSeed(ls.seed)
	h.WriteString(s)
	h.WriteByte(0)
	h.WriteString(p)
	h.WriteByte(0)
	h.WriteString(o)
	return h.Sum64()
}

// mayRepeat reports whether a fact with these folded names could repeat
// one already stored; false is certain, true means look.
func (ls *loadState) mayRepeat(s, p, o string) bool {
	if !ls.fresh {
		return true
	}
	if ls.whole {
		return false
	}
	_, ok := ls.seen[ls.hash(s, p, o)]
	return ok
}

// emptyGraph reports whether the graph under root holds no fact.
func (s *Store) emptyGraph(ctx context.Context, db *kv.DB, root []byte) (bool, error) {
	empty := true
	err := db.View(ctx, func(t *kv.Txn) error {
		tx := s.Tx(t, root)
		it := t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagSPO), KeysOnly: true})
		defer it.Close()
		it.Seek(nil)
		empty = !it.Valid()
		return nil
	})
	return empty, err
}

// checkDump checks every entity and fact of d as Load would write them.
func (s *Store) checkDump(d *Dump) error {
	for i := range d.Entities {
		e := d.Entities[i]
		if _, err := checkEntity(&e); err != nil {
			return fmt.Errorf("entity %d: %w", i, err)
		}
	}
	now := s.now()
	for i := range d.Facts {
		c, err := checkFact(d.Facts[i], true)
		if err == nil {
			err = checkTime("CreatedAt", c.CreatedAt)
		}
		if err == nil {
			err = checkTime("ExpiredAt", c.ExpiredAt)
		}
		if err == nil && c.ValidFrom.IsZero() && !c.ValidTo.IsZero() && !c.ValidTo.After(now) {
			err = fmt.Errorf("%w: ValidTo %v is not after ValidFrom (now)", ErrInvalidFact, c.ValidTo)
		}
		if err != nil {
			return fmt.Errorf("fact %d: %w", i, err)
		}
	}
	return nil
}

// recordTimes sets the record times of a fact being stored: now, unless the
// Tx is loading a dump that carries them.
func (tx *Tx) recordTimes(c *checkedFact, in *Fact, now time.Time) {
	c.CreatedAt, c.ExpiredAt = now, time.Time{}
	if !tx.keepRecordTimes {
		return
	}
	if !in.CreatedAt.IsZero() {
		c.CreatedAt = in.CreatedAt
	}
	if !c.ValidTo.IsZero() {
		c.ExpiredAt = in.ExpiredAt
	}
}

// factID returns the id of a new fact: a fresh one, unless the Tx is
// loading a dump and the fact carries a valid id that is not taken.
func (tx *Tx) factID(in *Fact, now time.Time) (ulid.ULID, error) {
	if tx.keepRecordTimes && in.ID != "" {
		if id, err := ulid.ParseStrict(in.ID); err == nil {
			taken, err := tx.has(tx.k.fact(id))
			if err != nil {
				return id, err
			}
			if !taken {
				return id, nil
			}
		}
	}
	return tx.s.newID(now), nil
}
