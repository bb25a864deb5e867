package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Dump is a graph in memory: what [Store.Load] writes and what an N-Quads
// file holds.
type Dump struct {
	Entities []Entity `json:"entities"`
	Facts    []Fact   `json:"facts"`
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
// except that a fact's ID (when it is a ULID not taken in this graph),
// CreatedAt and ExpiredAt (when it has a ValidTo) are kept when set, so
// that a dump restores them.
//
// Every entity and fact is checked before anything is written: a bad one
// is an error and nothing is written. The writes then go in transactions
// of a few thousand facts (one transaction cannot hold a large dump), so a
// storage failure midway leaves the chunks before it; loading the same dump
// again completes it, since facts already stored are skipped. Load is not
// isolated from concurrent writers to the same graph.
func (s *Store) Load(ctx context.Context, db *kv.DB, root []byte, d *Dump, opts *LoadOptions) (LoadStats, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if err := s.checkDump(d); err != nil {
		return LoadStats{}, err
	}
	maxEntries, maxBytes := db.TxnLimits()
	// Stay well inside the limits: the estimate below is rough, and the
	// first mention of an entity adds its records to the chunk.
	maxEntries, maxBytes = maxEntries/2, maxBytes/2
	total := len(d.Entities) + len(d.Facts)
	var st LoadStats
	names := map[string]string{} // shared across chunks: folded → display
	done := 0
	for done < total {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var n int
		var chunk LoadStats
		var tx *Tx
		err := db.Update(ctx, func(t *kv.Txn) error {
			tx = s.Tx(t, root)
			tx.keepRecordTimes = true
			for k, v := range names {
				tx.names[k] = v
			}
			n, chunk = 0, LoadStats{}
			var entries, bytes int64
			for i := done; i < total && entries < maxEntries && bytes < maxBytes; i++ {
				if i < len(d.Entities) {
					e := d.Entities[i]
					created, err := tx.CreateEntities([]Entity{e})
					if err != nil {
						return fmt.Errorf("entity %d: %w", i, err)
					}
					chunk.Entities += len(created)
					entries += 2 + int64(len(e.Aliases))
					bytes += 256 + int64(len(e.Name)+len(e.Type))*4
					for _, x := range e.Observations {
						bytes += int64(len(x)) + 8
					}
				} else {
					f := &d.Facts[i-len(d.Entities)]
					_, isNew, err := tx.relate(*f)
					if err != nil {
						return fmt.Errorf("fact %d: %w", i-len(d.Entities), err)
					}
					if isNew {
						chunk.Facts++
					} else {
						chunk.Duplicates++
					}
					entries += 8
					bytes += 8*int64(len(root)+48) + 10*int64(len(f.Subject)+len(f.Predicate)+len(f.Object)) + 2*int64(len(f.Source)) + 512
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
			names[k] = v
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
		c, err := checkFact(d.Facts[i])
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
			taken, err := tx.t.Has(tx.k.fact(id))
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
