package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/engramdb/engram/engine"
)

// embed returns the vectors of texts from the store's embedder, checked:
// one per text, non-empty, finite.
func (s *Store) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbedding, len(vecs), len(texts))
	}
	for _, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: empty vector", ErrEmbedding)
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("%w: vector has a NaN or infinite component", ErrEmbedding)
			}
		}
	}
	return vecs, nil
}

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
	notes  map[string]uint64
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once
}

// start loads the listed partitions and runs the sweep loop every interval
// (one minute when zero; never when negative).
func (w *sweeper) start(s *Store, interval time.Duration) error {
	w.scopes, w.notes = map[string]Scope{}, map[string]uint64{}
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
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
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
		n, err := s.Sweep(ctx, sc)
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
	if _, err := s.retain(ctx, time.Now()); err != nil && ctx.Err() == nil && s.opts.Logger != nil {
		s.opts.Logger.Warn("memory: retention pass failed", "err", err)
	}
}

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
