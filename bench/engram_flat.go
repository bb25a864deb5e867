package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/engramdb/engram/index"
)

// flatSystem is Engram's exact index, index.Flat: a contiguous slab of
// normalised vectors scanned with the SIMD dot-product kernel.
type flatSystem struct {
	f *index.Flat
}

func newEngramFlat(config) System { return &flatSystem{} }

func (s *flatSystem) Name() string { return "engram-flat" }

func (s *flatSystem) Build(ctx context.Context, base [][]float32) error {
	f, err := index.NewFlat(len(base[0]))
	if err != nil {
		return fmt.Errorf("engram-flat: %w", err)
	}
	for i, v := range base {
		if i%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("engram-flat: build: %w", ctx.Err())
		}
		if err := f.Add(uint64(i), v); err != nil {
			return fmt.Errorf("engram-flat: add %d: %w", i, err)
		}
	}
	s.f = f
	return nil
}

func (s *flatSystem) Sweep() []int { return nil }

func (s *flatSystem) Search(dst []int, q []float32, k, _ int) ([]int, error) {
	if s.f == nil {
		return dst, errors.New("engram-flat: search before build")
	}
	res, err := s.f.Search(q, k, nil)
	if err != nil {
		return dst, fmt.Errorf("engram-flat: %w", err)
	}
	for _, r := range res {
		dst = append(dst, int(r.ID))
	}
	return dst, nil
}

func (s *flatSystem) Params(int) string { return "exact" }

func (s *flatSystem) Bytes() int64 { return s.f.Bytes() }
