package memory

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
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
// partitions that have them, in the background.
type sweeper struct {
	mu     sync.Mutex
	scopes map[string]Scope // partition prefix → its scope
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once
}

// start runs the sweep loop every interval (one minute when zero; never
// when negative).
func (w *sweeper) start(s *Store, interval time.Duration) {
	w.scopes = map[string]Scope{}
	if interval < 0 {
		return
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
}

// run sweeps every noted partition once.
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
	for _, sc := range scopes {
		if _, err := s.Sweep(ctx, sc); err != nil {
			if ctx.Err() != nil {
				return
			}
			if s.opts.Logger != nil {
				s.opts.Logger.Warn("memory: sweep failed", "tenant", sc.Tenant, "user", sc.User, "err", err)
			}
		}
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
	w.scopes[string(p)] = scope
	w.mu.Unlock()
}

// forget drops the partitions under prefix (erased ones).
func (w *sweeper) forget(prefix []byte) {
	w.mu.Lock()
	for k := range w.scopes {
		if len(k) >= len(prefix) && k[:len(prefix)] == string(prefix) {
			delete(w.scopes, k)
		}
	}
	w.mu.Unlock()
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
