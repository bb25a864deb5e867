package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/engramdb/engram/index"
)

// hnswSystem is Engram's graph index, index.HNSW, built with the same M and
// efConstruction as the HNSW peers and searched with SearchOptions.Ef.
type hnswSystem struct {
	cfg config
	h   *index.HNSW
}

func newEngramHNSW(cfg config) System { return &hnswSystem{cfg: cfg} }

func (s *hnswSystem) Name() string { return "engram-hnsw" }

func (s *hnswSystem) newIndex(dim int) (*index.HNSW, error) {
	h, err := index.NewHNSW(dim, &index.HNSWOptions{M: s.cfg.m, EfConstruction: s.cfg.efConstruction, Seed: s.cfg.seed})
	if err != nil {
		return nil, fmt.Errorf("engram-hnsw: %w", err)
	}
	return h, nil
}

func (s *hnswSystem) Build(ctx context.Context, base [][]float32) error {
	s.h = nil // let a previous graph go before building the next
	h, err := s.newIndex(len(base[0]))
	if err != nil {
		return err
	}
	for i, v := range base {
		if i%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("engram-hnsw: build: %w", ctx.Err())
		}
		if err := h.Add(uint64(i), v); err != nil {
			return fmt.Errorf("engram-hnsw: add %d: %w", i, err)
		}
	}
	s.h = h
	return nil
}

// BuildParallel has workers goroutines take the next id from a shared
// counter and Add it, as a user filling the index from several goroutines
// would.
func (s *hnswSystem) BuildParallel(ctx context.Context, base [][]float32, workers int) error {
	s.h = nil
	h, err := s.newIndex(len(base[0]))
	if err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(base) {
					return
				}
				if i%1024 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				if err := h.Add(uint64(i), base[i]); err != nil {
					errs[w] = fmt.Errorf("add %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("engram-hnsw: parallel build: %w", err)
	}
	s.h = h
	return nil
}

func (s *hnswSystem) Sweep() []int { return s.cfg.efs }

func (s *hnswSystem) Search(dst []int, q []float32, k, ef int) ([]int, error) {
	if s.h == nil {
		return dst, errors.New("engram-hnsw: search before build")
	}
	res, err := s.h.Search(q, k, &index.SearchOptions{Ef: ef})
	if err != nil {
		return dst, fmt.Errorf("engram-hnsw: %w", err)
	}
	for _, r := range res {
		dst = append(dst, int(r.ID))
	}
	return dst, nil
}

func (s *hnswSystem) Params(ef int) string {
	return fmt.Sprintf("M=%d,efc=%d,ef=%d", s.cfg.m, s.cfg.efConstruction, ef)
}

func (s *hnswSystem) Bytes() int64 { return s.h.Bytes() }
