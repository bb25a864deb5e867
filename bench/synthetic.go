package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// syntheticSpec is a parsed --synthetic spec.
type syntheticSpec struct {
	n, dim, clusters, queries int
	seed                      uint64
	sigma                     float64
}

// Defaults of the synthetic generator; see [Synthetic].
const (
	defaultN        = 100_000
	defaultDim      = 384
	defaultClusters = 1000
	defaultQueries  = 1000
	defaultSeed     = 1
	defaultSigma    = 1.0

	// maxSyntheticValues bounds n*dim (and queries*dim) so that a typo
	// cannot ask for more than 8 GiB of vectors.
	maxSyntheticValues = 1 << 31
)

// parseSpec parses "n=100000,dim=384,clusters=1000,seed=1[,queries=1000]
// [,sigma=1]". Missing keys take their defaults; every problem is reported.
func parseSpec(spec string) (syntheticSpec, error) {
	s := syntheticSpec{n: defaultN, dim: defaultDim, clusters: defaultClusters,
		queries: defaultQueries, seed: defaultSeed, sigma: defaultSigma}
	if strings.TrimSpace(spec) == "" {
		return s, fmt.Errorf("%w: empty spec", ErrInvalidSpec)
	}
	var errs []error
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			errs = append(errs, fmt.Errorf("%q is not key=value", part))
			continue
		}
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s given twice", key))
			continue
		}
		seen[key] = true
		var err error
		switch key {
		case "n":
			s.n, err = parseInt(val, 1, 50_000_000)
		case "dim":
			s.dim, err = parseInt(val, 1, MaxDim)
		case "clusters":
			s.clusters, err = parseInt(val, 1, 50_000_000)
		case "queries":
			s.queries, err = parseInt(val, 1, 1_000_000)
		case "seed":
			s.seed, err = strconv.ParseUint(val, 10, 64)
		case "sigma":
			s.sigma, err = strconv.ParseFloat(val, 64)
			if err == nil && !(s.sigma > 0 && s.sigma <= 100) { // also rejects NaN
				err = errors.New("out of range (0, 100]")
			}
		default:
			err = errors.New("unknown key (want n, dim, clusters, seed, queries, sigma)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", key, val, err))
		}
	}
	if len(errs) == 0 {
		if s.clusters > s.n {
			errs = append(errs, fmt.Errorf("clusters=%d exceeds n=%d", s.clusters, s.n))
		}
		if s.n*s.dim > maxSyntheticValues || s.queries*s.dim > maxSyntheticValues {
			errs = append(errs, fmt.Errorf("n=%d, queries=%d at dim=%d exceed %d values", s.n, s.queries, s.dim, maxSyntheticValues))
		}
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("%w: %w", ErrInvalidSpec, errors.Join(errs...))
	}
	return s, nil
}

func parseInt(val string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(val)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return v, nil
}

// String returns the canonical spec, every key spelled out.
func (s syntheticSpec) String() string {
	return fmt.Sprintf("n=%d,dim=%d,clusters=%d,seed=%d,queries=%d,sigma=%s",
		s.n, s.dim, s.clusters, s.seed, s.queries, strconv.FormatFloat(s.sigma, 'g', -1, 64))
}

// Synthetic generates a seeded Gaussian-mixture data set from a spec such
// as "n=100000,dim=384,clusters=1000,seed=1". Keys, all optional but the
// spec must not be empty:
//
//	n         base vectors (default 100000)
//	dim       dimension (default 384)
//	clusters  mixture components (default 1000)
//	seed      random seed (default 1)
//	queries   query vectors (default 1000)
//	sigma     noise scale relative to the spread of the centres (default 1)
//
// Cluster centres are drawn from N(0, I). A point picks a cluster uniformly
// at random and is its centre plus N(0, sigma²·I) noise, scaled to unit
// length. With sigma 1 a point's cosine to its own centre is about
// 1/sqrt(2) ≈ 0.71, to another member of its cluster about 0.5, and to a
// point of another cluster about 0 ± 1/sqrt(dim): clusters stand apart like
// topics in real embeddings, and inside a cluster the noise has full rank,
// so a query's neighbours are close to equidistant. Measured at dim 384
// with 100 points per cluster (n=20000, clusters=200), a query's mean
// cosine to its 1st, 10th and 100th true neighbour is 0.57, 0.54 and 0.32
// at sigma 1 (the 100th is already outside its cluster), and 0.31, 0.26
// and 0.16 at sigma 2, where clusters blur into each other; to a random
// base point it is 0.006.
//
// Queries are fresh draws from the same mixture (never copies of base
// points), from their own random stream (math/rand/v2 PCG). The same spec
// gives the same vectors on every run of the same build; bit-identical
// output across architectures is not promised, since the compiler may fuse
// multiply-adds on some. Truth holds each query's exact top 100 (or all n,
// when n < 100), computed on every core.
//
// It returns [ErrInvalidSpec] for a spec it cannot parse, naming every
// problem, and ctx's error if ctx ends during the ground truth.
func Synthetic(ctx context.Context, spec string) (*Dataset, error) {
	s, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	centres := make([]float32, s.clusters*s.dim)
	crng := rand.New(rand.NewPCG(s.seed, 0x636c7573746572)) // "cluster"
	for i := range centres {
		centres[i] = float32(crng.NormFloat64())
	}
	draw := func(count int, stream uint64) [][]float32 {
		rng := rand.New(rand.NewPCG(s.seed, stream))
		flat := make([]float32, count*s.dim)
		tmp := make([]float64, s.dim)
		for i := range count {
			c := rng.IntN(s.clusters)
			centre := centres[c*s.dim : (c+1)*s.dim]
			var sum float64
			for j := range tmp {
				x := float64(centre[j]) + s.sigma*rng.NormFloat64()
				tmp[j] = x
				sum += x * x
			}
			if sum == 0 { // probability zero; keep the vector usable anyway
				tmp[0], sum = 1, 1
			}
			inv := 1 / math.Sqrt(sum)
			row := flat[i*s.dim : (i+1)*s.dim]
			for j, x := range tmp {
				row[j] = float32(x * inv)
			}
		}
		return rows(flat, s.dim)
	}
	ds := &Dataset{
		Name:    "synthetic:" + s.String(),
		Dim:     s.dim,
		Base:    draw(s.n, 0x62617365),   // "base"
		Queries: draw(s.queries, 0x7175), // "qu"
	}
	if ds.Truth, err = GroundTruth(ctx, ds.Base, ds.Queries, min(truthDepth, s.n)); err != nil {
		return nil, fmt.Errorf("synthetic %s: %w", spec, err)
	}
	return ds, nil
}
