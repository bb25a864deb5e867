// Package index holds Engram's in-memory search structures: the exact
// [Flat] index and the [HNSW] graph over cosine similarity, with SIMD dot
// products (vek32's AVX2+FMA kernels where the CPU has them, a 4-way
// unrolled Go loop elsewhere). The lexical index (BM25) lands with hybrid
// recall.
//
// # Basics
//
//	h, err := index.NewHNSW(384, nil) // M 16, EfConstruction 200, EfSearch 64
//	err = h.Add(id, vec)              // normalised copy; safe from many goroutines
//	hits, err := h.Search(q, 10, &index.SearchOptions{Filter: allowed})
//
// Vectors are normalised when they enter an index, so cosine similarity is a
// single dot product; a [Result]'s Score is that similarity. Indexes are
// pure in-memory structures: [HNSW.Encode] and [DecodeHNSW] snapshot a
// graph (magic number, version and checksum), and the engine rebuilds one
// from its stored vectors when a snapshot is missing or corrupt.
//
// # Caveats
//
//   - Nothing panics on input: wrong lengths return [ErrDimensionMismatch],
//     zero or non-finite vectors [ErrZeroVector].
//   - HNSW deletion keeps the node as a waypoint: memory is reclaimed only
//     by rebuilding (see [HNSW.Deleted]).
//   - A filtered HNSW search walks the graph applying the filter; when a
//     sample says the filter matches few vectors, it scans them exactly.
//   - The package imports no other package of this module.
package index
