package memory

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/engine"
)

// sweeper removes expired memories and messages from the indexes of the
// partitions that have them, in the background. The partitions with
// expiring records are listed in the store (engine.NSExpiring), so a
// restart finds them; a partition leaves the list when a sweep finds
// nothing more scheduled in it.
type sweeper struct {
	mu     sync.Mutex
	scopes map[string]Scope // partition prefix → its scope
	// notes counts the notes of each listed partition, so a sweep that
	// found it done does not drop it over a write noted meanwhile.
	notes map[string]uint64
	// sweepOne is Store.Sweep when nil; a test seam, set under mu.
	sweepOne func(context.Context, Scope) (int, error)
	stopCh   chan struct{}
	done     chan struct{}
	once     sync.Once
}

// start loads the listed partitions and runs the sweep loop every interval
// (one minute when zero; never when negative).
func (w *sweeper) start(s *Store, interval time.Duration) error {
	w.scopes, w.notes = map[string]Scope{}, map[string]uint64{}
	if s.opts.ReadOnly && s.opts.Postgres == nil {
		return nil // nothing is swept, and listing writes
	}
	if err := s.listExpiring(context.Background()); err != nil {
		return err
	}
	if interval < 0 {
		return nil
	}
	err := s.db.View(context.Background(), func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: expiringList(), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			if sc, ok := parseExpiring(it.Key()); ok {
				w.note(sc)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if interval == 0 {
		interval = time.Minute
	}
	w.stopCh, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stopCh:
				return
			case <-t.C:
				w.run(s)
			}
		}
	}()
	return nil
}

// run sweeps every listed partition once.
func (w *sweeper) run(s *Store) {
	w.mu.Lock()
	scopes := make([]Scope, 0, len(w.scopes))
	for _, sc := range w.scopes {
		scopes = append(scopes, sc)
	}
	sweep := w.sweepOne
	w.mu.Unlock()
	if sweep == nil {
		sweep = s.Sweep
	}
	// A round ends at sweepRunTimeout even if the store stalls (issue
	// 26); the partitions it did not reach stay listed for the next.
	ctx, cancel := context.WithTimeout(backgroundContext(context.Background()), sweepRunTimeout)
	defer cancel()
	go func() {
		select {
		case <-w.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	swept := 0
	for _, sc := range scopes {
		if !s.owns(Partition(sc)) {
			continue // another process's partition (PostgreSQL)
		}
		start := time.Now()
		n, err := sweep(ctx, sc)
		s.pace.pace(ctx, WorkSweep, time.Since(start), nil)
		swept += n
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if s.opts.Logger != nil {
				s.opts.Logger.Warn("memory: sweep failed", "tenant", sc.Tenant, "user", sc.User, "err", err)
			}
		}
	}
	if swept > 0 {
		// Expired bytes leave the files at the compaction that follows.
		s.db.ScheduleCompact()
	}
	start := time.Now()
	_, err := s.retain(ctx, start)
	s.pace.pace(ctx, WorkSweep, time.Since(start), nil)
	if err != nil && ctx.Err() == nil && s.opts.Logger != nil {
		s.opts.Logger.Warn("memory: retention pass failed", "err", err)
	}
}

// sweepRunTimeout bounds one round of the background sweep.
const sweepRunTimeout = 5 * time.Minute

// note records that the partition of scope may hold expiring data.
func (w *sweeper) note(scope Scope) {
	scope.Session, scope.Agent = "", ""
	p, err := scope.PartitionPrefix()
	if err != nil {
		return
	}
	w.mu.Lock()
	if w.scopes != nil {
		w.scopes[string(p)] = scope
		w.notes[string(p)]++
	}
	w.mu.Unlock()
}

// noted returns how many times the partition prefix p was noted.
func (w *sweeper) noted(p []byte) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notes[string(p)]
}

// dropIf forgets the partition prefix p (nothing more is scheduled in it)
// unless it was noted since noted returned n.
func (w *sweeper) dropIf(p []byte, n uint64) {
	w.mu.Lock()
	if w.notes[string(p)] == n {
		delete(w.scopes, string(p))
		delete(w.notes, string(p))
	}
	w.mu.Unlock()
}

// forget drops the partitions under prefix (erased ones).
func (w *sweeper) forget(prefix []byte) {
	w.mu.Lock()
	for k := range w.scopes {
		if len(k) >= len(prefix) && k[:len(prefix)] == string(prefix) {
			delete(w.scopes, k)
			delete(w.notes, k)
		}
	}
	w.mu.Unlock()
}

// listed returns how many partitions the sweeper tracks (for tests).
func (w *sweeper) listed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.scopes)
}

// markExpiring lists the partition of scope (with partition prefix
// prefix) as holding expiring records, in the transaction that schedules
// one, and notes it for this process's sweeper once that commits (noted
// before, a sweep finishing meanwhile could drop it again). The list's
// keys are the partition prefixes; their values are empty.
func (s *Store) markExpiring(tx *engine.Tx, scope Scope, prefix []byte) error {
	scope.Session, scope.Agent = "", ""
	if err := tx.Set(expiringKey(prefix), nil); err != nil {
		return err
	}
	tx.OnCommit(func() { s.sweep.note(scope) })
	return nil
}

// listExpiring lists, once, the partitions of a store written before the
// list existed: it finds their expiry keys in one pass over the keys, then
// marks the store. An empty store is left empty (a restore needs one); it
// is marked at an open after its first write.
func (s *Store) listExpiring(ctx context.Context) error {
	done := false
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		_, err := tx.Get(expiringListed)
		if errors.Is(err, engine.ErrNotFound) {
			return nil
		}
		done = err == nil
		return err
	})
	if err != nil || done {
		return err
	}
	found := map[string]bool{}
	empty := true
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{KeysOnly: true}) // every key; ParseKey skips the store's own
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			empty = false
			k, ok := engine.ParseKey(it.Key())
			if !ok || k.Namespace != engine.NSExpiry || k.Level == engine.LevelSession {
				continue
			}
			if _, _, ok := partitionPrefix(k.Prefix).parseExpiry(it.Key()); !ok {
				continue
			}
			if prefix := k.Prefix; !found[string(prefix)] {
				if _, ok := scopeOfPartition(prefix); ok {
					found[string(prefix)] = true
				}
			}
		}
		return nil
	})
	if err != nil || empty {
		return err
	}
	// In transactions of bounded size; the mark goes last, so a failure
	// part way lists the rest at the next open.
	prefixes := slices.Sorted(maps.Keys(found))
	for len(prefixes) > 0 {
		n := min(len(prefixes), 256)
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			for _, p := range prefixes[:n] {
				if err := tx.Set(expiringKey([]byte(p)), nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		prefixes = prefixes[n:]
	}
	return s.db.Update(ctx, func(tx *engine.Tx) error { return tx.Set(expiringListed, []byte{1}) })
}

// stop ends the loop and waits for it; calling it again does nothing.
func (w *sweeper) stop() {
	w.once.Do(func() {
		if w.stopCh != nil {
			close(w.stopCh)
			<-w.done
		}
	})
}

// Sweep removes the scope's expired memories and message episodes from the
// indexes (their records are already unreadable), erases their cached
// embeddings, and returns how many it removed. The store sweeps by itself
// every Options.SweepInterval; call Sweep to reclaim index memory at once.
func (s *Store) Sweep(ctx context.Context, scope Scope) (int, error) {
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return 0, err
	}
	keys := partitionPrefix(prefix)
	start := keys.expiries()
	end := keys.expiriesUntil(time.Now())
	type due struct {
		key   []byte
		id    string
		space string
	}
	total := 0
	for {
		// Read a batch, erase its cached embeddings, then delete it: an
		// expiry key goes only after the cache entry it names, so a
		// failure part way leaves it for the next sweep.
		var batch []due
		var hashes [][32]byte
		err := s.db.View(ctx, func(tx *engine.Tx) error {
			it := tx.NewIterator(engine.IterOptions{Prefix: start})
			defer it.Close()
			var val []byte
			for it.Seek(nil); it.Valid() && len(batch) < 256 && bytes.Compare(it.Key(), end) < 0; it.Next() {
				k := it.Key()
				_, u, ok := keys.parseExpiry(k)
				if !ok {
					continue
				}
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				space, hash, ok := parseExpiryValue(val)
				if ok {
					hashes = append(hashes, hash)
				}
				batch = append(batch, due{key: bytes.Clone(k), id: u.String(), space: space})
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		if len(batch) == 0 {
			return total, s.unlistIfDone(ctx, prefix)
		}
		if s.cache != nil {
			if err := s.db.EraseCachedEmbeddings(ctx, hashes...); err != nil {
				return total, err
			}
		}
		err = s.db.Update(ctx, func(tx *engine.Tx) error {
			for _, d := range batch {
				// Still due? A merge may have moved the expiry since.
				switch _, err := tx.Get(d.key); {
				case errors.Is(err, engine.ErrNotFound):
					continue
				case err != nil:
					return err
				}
				if err := tx.DeleteRecord(scope, d.space, d.id); err != nil {
					return err
				}
				if err := tx.Delete(d.key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += len(batch)
		if len(batch) < 256 {
			return total, s.unlistIfDone(ctx, prefix)
		}
	}
}

// unlistIfDone takes the partition off the sweeper's list when nothing
// more is scheduled to expire in it. Reading the list entry makes a
// concurrent write that schedules a record (and sets the entry) conflict
// with the delete.
func (s *Store) unlistIfDone(ctx context.Context, prefix []byte) error {
	listKey := expiringKey(prefix)
	notes := s.sweep.noted(prefix) // a write noted after this keeps it listed
	done := false
	err := s.db.Update(ctx, func(tx *engine.Tx) error {
		done = false
		switch _, err := tx.Get(listKey); {
		case errors.Is(err, engine.ErrNotFound):
			done = true
			return nil
		case err != nil:
			return err
		}
		it := tx.NewIterator(engine.IterOptions{Prefix: partitionPrefix(prefix).expiries(), KeysOnly: true})
		it.Seek(nil)
		pending := it.Valid()
		it.Close()
		if pending {
			return nil
		}
		done = true
		return tx.Delete(listKey)
	})
	if err == nil && done {
		s.sweep.dropIf(prefix, notes)
	}
	return err
}

// expiryValue is the value of an expiry key: the record's space and the
// content hash of its text, so a sweep can erase its cached embedding.
func expiryValue(space, text string) []byte {
	h := embed.ContentHash(text)
	return append(append([]byte(space), 0), h[:]...)
}

// parseExpiryValue splits an expiry key's value; keys written before the
// hash was added hold the space alone.
func parseExpiryValue(v []byte) (space string, hash [32]byte, ok bool) {
	i := bytes.IndexByte(v, 0)
	if i < 0 || len(v)-i-1 != len(hash) {
		return string(v), hash, false
	}
	copy(hash[:], v[i+1:])
	return string(v[:i]), hash, true
}
