// Package index will hold Engram's in-memory search structures: exact and
// HNSW vector indexes over cosine similarity (SIMD through vek on amd64) and
// the BM25 lexical index, each a pure in-memory structure with Encode and
// Decode so the engine can snapshot it.
//
// # Basics
//
// Nothing is exported yet: the vector index lands with the vector-index work
// (issue 3) and BM25 with hybrid recall (issue 5). The package exists now so
// that the module's layout is fixed from the start.
//
// # Caveats
//
// The package imports no other package of this module, by design: the
// engine feeds it vectors and postings and persists what it encodes.
package index
