// Package embed turns text into vectors for Engram's semantic recall.
//
// It has only a few types: the [Embedder] interface; [Hashing], the offline
// default; [Provider], a network embedding API (Ollama, or OpenAI and any
// server compatible with it); and [Cache], which remembers another
// Embedder's vectors in a [CacheStore]. It imports no other package of
// Engram. Package embedtest has fakes for tests.
//
// # Basics
//
// An [Embedder] returns one vector per text, in order. Every Embedder here
// is safe for concurrent use and returns vectors of unit L2 norm, so a dot
// product is a cosine similarity (the one exception is below, in Caveats):
//
//	h, err := embed.NewHashing(nil) // 384 dimensions, no model, no network
//	vecs, err := h.Embed(ctx, []string{"Alice prefers dark roast", "Bob's car"})
//
// [Hashing] is the default because it needs nothing: no model download, no
// server, no warm-up, and it embeds a sentence in microseconds. It hashes
// words, word pairs and character n-grams into a fixed number of dimensions.
//
// A network provider embeds with a real model. [NewOllama] and [NewOpenAI]
// build one on the embedding functions of
// github.com/philippgille/chromem-go:
//
//	p, err := embed.NewOllama(&embed.OllamaOptions{Model: "nomic-embed-text"})
//	p, err := embed.NewOpenAI(&embed.OpenAIOptions{APIKey: key, Model: "text-embedding-3-small"})
//
// A [Cache] in front of an embedder looks vectors up by content before
// asking it, so a text is embedded once per model, across restarts:
//
//	Cache ──▶ CacheStore (the engine's kv, or embedtest.CacheStore)
//	  │ misses
//	  ▼
//	inner Embedder ──▶ Hashing, or Provider ──▶ Ollama / OpenAI server
//
// Each vector's [Identity] (provider and model) is part of its cache key, so
// vectors of different models never mix.
//
// # Caveats
//
//   - [Hashing] captures lexical similarity, not semantic: texts are close
//     when they share words or word fragments. "car" and "automobile" are
//     unrelated to it. It has no notion of how rare a word is either: the
//     engine's BM25 index does that part. A text with no letters or digits
//     embeds to the zero vector.
//   - A [Provider] sends every text it embeds to the configured server, in
//     plain text over http unless the URL says https. Nothing in this package
//     touches the network unless a program constructs one. Its requests have
//     no timeout of their own: put a deadline on the context.
//   - [Cache] keys are the SHA-256 of the text plus the identity; see
//     [CacheKey] for the stable layout. Two texts that differ by a single
//     byte (a trailing space, Unicode normalisation) are different entries. A
//     cached vector outlives the text it came from until the engine erases
//     it by its content-hash prefix.
//   - An embedder's [Identity] promises that equal identities give
//     interchangeable vectors. [Hashing] bumps its version whenever its output
//     changes; a network model that changes behind an unchanged name is not
//     detected.
package embed
