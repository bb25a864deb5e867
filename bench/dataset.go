package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Dataset is a set of base vectors to index, query vectors to search for,
// and the exact cosine neighbours of every query. A Dataset is not modified
// by [Run] except to deepen Truth when it holds fewer than k ids per query;
// it is not safe for concurrent use while a Run may do that.
type Dataset struct {
	// Name identifies the data in reports: the file prefix for [LoadDir]
	// ("siftsmall"), the canonical spec for [Synthetic].
	Name string
	// Dim is the dimension of every vector.
	Dim int
	// Base holds the vectors to index; a vector's id is its index here.
	Base [][]float32
	// Queries holds the query vectors.
	Queries [][]float32
	// Truth holds, for each query, the ids of its nearest base vectors by
	// cosine similarity, nearest first. Rows may be longer than the k a
	// run measures; only their first k ids count.
	Truth [][]int

	// baseFile is the .fvecs file Base was read from, if any, so the
	// hnswlib peer can read it without a temporary copy.
	baseFile string
}

// truthDepth is how many neighbours LoadDir and Synthetic compute per query
// when no ground-truth file is given: 100, the depth of the TEXMEX files.
const truthDepth = 100

// LoadDir reads a TEXMEX-style data set from dir: exactly one
// NAME_base.fvecs, the NAME_query.fvecs beside it and, if present,
// NAME_groundtruth_cosine.ivecs (ids of each query's nearest base vectors
// by cosine, nearest first). Without the ground-truth file it computes the
// exact top 100 by brute force on every core. Other files, such as the
// L2 NAME_groundtruth.ivecs, are ignored.
//
// It returns [ErrNoDataset] when the files are missing or ambiguous,
// [ErrTruncated] or [ErrCorrupt] for malformed files,
// [ErrDimensionMismatch] when base and queries differ in dimension, and
// [ErrInvalidDataset] for a zero or non-finite vector or a ground truth
// that does not fit the vectors.
func LoadDir(ctx context.Context, dir string) (*Dataset, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*_base.fvecs"))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if len(matches) != 1 {
		return nil, fmt.Errorf("load %s: %d *_base.fvecs files, want exactly one: %w", dir, len(matches), ErrNoDataset)
	}
	baseFile := matches[0]
	prefix := strings.TrimSuffix(baseFile, "_base.fvecs")
	ds := &Dataset{Name: filepath.Base(prefix), baseFile: baseFile}

	if ds.Base, err = readFvecsFile(baseFile); err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	queryFile := prefix + "_query.fvecs"
	if _, err := os.Stat(queryFile); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load %s: no %s: %w", dir, filepath.Base(queryFile), ErrNoDataset)
	}
	if ds.Queries, err = readFvecsFile(queryFile); err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if len(ds.Base) > 0 {
		ds.Dim = len(ds.Base[0])
	}
	if len(ds.Queries) > 0 && len(ds.Queries[0]) != ds.Dim {
		return nil, fmt.Errorf("load %s: base dimension %d, query dimension %d: %w", dir, ds.Dim, len(ds.Queries[0]), ErrDimensionMismatch)
	}
	truthFile := prefix + "_groundtruth_cosine.ivecs"
	switch f, err := os.Open(truthFile); {
	case err == nil:
		st, _ := f.Stat()
		ds.Truth, err = readIvecs(f, sizeOf(st))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("load %s: %s: %w", dir, filepath.Base(truthFile), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if err := ds.validate(); err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if ds.Truth == nil {
		if ds.Truth, err = GroundTruth(ctx, ds.Base, ds.Queries, min(truthDepth, len(ds.Base))); err != nil {
			return nil, fmt.Errorf("load %s: %w", dir, err)
		}
	}
	return ds, nil
}

func readFvecsFile(path string) ([][]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, _ := f.Stat()
	v, err := readFvecs(f, sizeOf(st))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return v, nil
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}

// validate checks what every system needs: some base and query vectors of
// one dimension, each finite and non-zero (cosine similarity is undefined
// for a zero vector), and ground-truth rows, if any, that name base ids.
func (ds *Dataset) validate() error {
	if len(ds.Base) == 0 || len(ds.Queries) == 0 {
		return fmt.Errorf("%d base and %d query vectors: %w", len(ds.Base), len(ds.Queries), ErrInvalidDataset)
	}
	for _, set := range []struct {
		name string
		vecs [][]float32
	}{{"base", ds.Base}, {"query", ds.Queries}} {
		for i, v := range set.vecs {
			if len(v) != ds.Dim {
				return fmt.Errorf("%s vector %d has dimension %d, want %d: %w", set.name, i, len(v), ds.Dim, ErrDimensionMismatch)
			}
			var sum float64
			for _, x := range v {
				sum += float64(x) * float64(x)
			}
			if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
				return fmt.Errorf("%s vector %d is zero or not finite: %w", set.name, i, ErrInvalidDataset)
			}
		}
	}
	if ds.Truth == nil {
		return nil
	}
	if len(ds.Truth) != len(ds.Queries) {
		return fmt.Errorf("ground truth has %d rows for %d queries: %w", len(ds.Truth), len(ds.Queries), ErrInvalidDataset)
	}
	for i, row := range ds.Truth {
		for _, id := range row {
			if id < 0 || id >= len(ds.Base) {
				return fmt.Errorf("ground truth row %d names id %d, outside [0, %d): %w", i, id, len(ds.Base), ErrInvalidDataset)
			}
		}
	}
	return nil
}

// ensureTruth makes every Truth row hold at least k ids (or every base id,
// when there are fewer than k), recomputing it by brute force if not.
func (ds *Dataset) ensureTruth(ctx context.Context, k int) error {
	want := min(k, len(ds.Base))
	ok := len(ds.Truth) == len(ds.Queries)
	for _, row := range ds.Truth {
		ok = ok && len(row) >= want
	}
	if ok {
		return nil
	}
	t, err := GroundTruth(ctx, ds.Base, ds.Queries, min(max(k, truthDepth), len(ds.Base)))
	if err != nil {
		return err
	}
	ds.Truth = t
	return nil
}
