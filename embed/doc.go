// Package embed turns text into vectors for Engram's semantic recall.
//
// It has only a few types: the [Embedder] interface; [Hashing], the offline
// default; [Static], a local static-embedding model (Model2Vec format);
// [Provider], a network embedding API (Ollama, or OpenAI and any server
// compatible with it); and [Cache], which remembers another Embedder's
// vectors in a [CacheStore]. [Pull] fetches a Static model from the Hugging
// Face Hub, verified ([PullOptions], [PullProgress]; [ModelInfo] and
// [ModelFile] describe what is pulled). It imports no other package of
// Engram. Package embedtest has fakes for tests (a fake Hub among them),
// and writes small model folders for [Static].
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
// [Static] embeds with a real model and still needs no network: a
// Model2Vec static-embedding model, a table of one vector per token, read
// once from a local folder. Pooling the vectors of a sentence's tokens
// takes microseconds, and the vectors carry meaning ("car" is near
// "automobile"), though less finely than a transformer's:
//
//	s, err := embed.NewStatic("/models/potion-base-8M", nil)
//	vecs, err := s.Embed(ctx, []string{"Alice drives a red car"})
//
// Engram never downloads a model by itself: only [Pull] does, which is
// what `engram model pull NAME` runs. Pull once, for example
// minishlab/potion-base-8M (MIT licence, 256 dimensions, 30 MB), at the
// commit and with the SHA-256 pinned here:
//
//	engram model pull potion-base-8M
//
// and open it by name, in one line, for example as the engine's embedder
// (the model goes to [ModelsDir], the user's cache folder unless
// $ENGRAM_MODEL_DIR says otherwise; [OpenModel] only reads it):
//
//	s, err := embed.OpenModel("potion-base-8M", nil)
//	st, err := memory.Open(dir, &memory.Options{Embedder: s})
//
// or let the engine open it: memory.Options{Model: "potion-base-8M"}.
//
// Or get a model folder any other way, say with
// `huggingface-cli download minishlab/potion-base-8M --local-dir DIR`, and
// point [NewStatic] at it: it reads model.safetensors, tokenizer.json and
// config.json.
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
//	inner Embedder ──▶ Hashing, Static (a model folder),
//	                   or Provider ──▶ Ollama / OpenAI server
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
//   - [Static] runs Model2Vec folders whose tokenizer is WordPiece or
//     Unigram behind the normalizers and pre-tokenizers Model2Vec models
//     use (BERT's, and the newer Sequence and Metaspace form; see [Static]
//     for the list); a component it does not implement (a BPE model, a
//     Split pre-tokenizer) is refused with a [*ComponentError] naming it. Its token ids are checked against
//     Hugging Face's tokenizers, but no real model's vectors have been
//     compared with Model2Vec's here: the tests use small generated tables
//     and one small quantized model whose vectors mean nothing. It pools at
//     most 512 tokens of a text, like Model2Vec (after first cutting the
//     text to 512 × the vocabulary's median token length in characters):
//     the rest of a long text does not count; see [StaticOptions.MaxTokens].
//     It always returns unit vectors, even when the model's config.json
//     says normalize: false, because the engine's index needs them. A text
//     with no known token (empty, punctuation only, a script the vocabulary
//     lacks) embeds to the zero vector, which the engine stores but never
//     finds. It holds the whole table in memory, about the size of
//     model.safetensors.
//   - A [Provider] sends every text it embeds to the configured server, in
//     plain text over http unless the URL says https. Nothing in this package
//     touches the network unless a program constructs one or calls [Pull].
//     Its requests have no timeout of their own: put a deadline on the
//     context.
//   - [Pull] trusts the Hub for the checksums of every model but
//     potion-base-8M: it checks each file against the SHA-256 the Hub
//     reports for a file in LFS, or the git blob id (SHA-1) it reports for
//     another, at the commit the revision resolves to; the lock file then
//     holds the Hub to those on every later pull of that commit. The
//     commits pinned for potion-base-32M, potion-retrieval-32M and
//     potion-multilingual-128M are those public projects pin; they have not
//     been fetched from here. Two pulls of the same model must not run at
//     once.
//   - [Cache] keys are the SHA-256 of the text plus the identity; see
//     [CacheKey] for the stable layout. Two texts that differ by a single
//     byte (a trailing space, Unicode normalisation) are different entries. A
//     cached vector outlives the text it came from until the engine erases
//     it by its content-hash prefix.
//   - An embedder's [Identity] promises that equal identities give
//     interchangeable vectors. [Hashing] bumps its version whenever its output
//     changes; [Static]'s identity hashes the model's table and vocabulary, so
//     it follows the content, not the folder; a network model that changes
//     behind an unchanged name is not detected.
package embed
