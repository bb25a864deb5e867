// Package index holds Engram's in-memory search structures: the exact
// [Flat] index and the [HNSW] graph over cosine similarity, with SIMD dot
// products (our AVX-512F or AVX2+FMA assembly, distance_amd64.s, where the
// CPU has it, with a batch form that prefetches for the graph walk; a 4-way
// unrolled Go loop elsewhere or with the purego build tag), and the lexical [BM25] index with its
// analyzer, [Analyze].
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
// # Lexical search
//
//	x := index.NewBM25(nil)             // k1 1.2, b 0.75, as in Lucene
//	x.Add(id, "Alice's account 3942")   // terms: alic, account, 3942
//	hits, err := x.Search("account 3942", 10, &index.SearchOptions{Filter: allowed})
//
// [Analyze] turns text into terms: NFKC, word segmentation, Unicode case
// folding, the Snowball English stop words dropped and the remaining words
// stemmed with Snowball's English (Porter2) stemmer, while tokens holding a
// digit or an inner '-', '_', '.', '/', '@' or ':' ("v1.2.3", "user_id",
// "alice@example.com") stay whole, so identifiers match exactly. A
// [Result]'s Score from [BM25.Search] is the BM25 score, comparable only
// within one query. Deletes keep the statistics exact at once and reclaim
// memory once half the documents are deleted; [BM25.Encode] and
// [DecodeBM25] snapshot the index like an HNSW graph.
//
//	text ──Analyze──▶ terms ──▶ dictionary  term ─▶ term id
//	                            postings    term id ─▶ [(slot, tf) …]
//	                            documents   slot ─▶ id, length, term ids
//
// Analysis is English: other languages are folded and split into words but
// not stemmed, and Chinese and Japanese text is indexed one Han or Hiragana
// character per term (no dictionary segmentation). A hyphenated word is one
// term: "state-of-the-art" does not match "state of the art".
//
// [ExpandQuery] adds WordNet synonyms (from [wordnet], embedded in the
// binary) to a query's terms at half weight, and [BM25.SearchWeighted]
// ranks such [WeightedTerm]s, so "automobile" also finds "car":
//
//	terms, err := index.ExpandQuery("What automobile does she own?")
//	hits, err := x.SearchWeighted(terms, 10, nil) // automobil 1; car, auto, motorcar ½
//
// # Caveats
//
//   - Nothing panics on input: wrong lengths return [ErrDimensionMismatch],
//     zero or non-finite vectors [ErrZeroVector].
//   - HNSW deletion keeps the node as a waypoint: memory is reclaimed only
//     by rebuilding (see [HNSW.Deleted]).
//   - A filtered HNSW search walks the graph applying the filter; when a
//     sample says the filter matches few vectors, it scans them exactly.
//   - Where the CPU has AVX-512F and the dimension is a multiple of 16, an
//     HNSW index also keeps an int8 copy of each vector (dim + 4 bytes): a
//     search walks layer 0 on the copies and re-scores the ef nodes it
//     keeps with the float vectors, so the returned scores are exact;
//     recall@10 on siftsmall moved by at most 0.01 (bench/results/
//     vectors.md).
//   - The package imports no other package of this module but its own
//     [wordnet], the synonym table.
package index
