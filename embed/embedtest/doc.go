// Package embedtest provides fakes of package embed for other packages'
// tests, the way net/http/httptest does for net/http.
//
// # Basics
//
// [Fake] is a deterministic [embed.Embedder] that needs no model and no
// network, counts its calls and can be told to fail. [CacheStore] is an
// in-memory [embed.CacheStore]: a map under a mutex, with counters and
// direct access to the entries so a test can plant corrupt ones.
// [WriteStaticModel] writes a small Model2Vec model folder (a table of
// random or given rows, a WordPiece tokenizer) for embed.NewStatic, and
// [WriteSafetensors] writes arbitrary, even malformed, safetensors files.
//
//	fake := embedtest.NewFake(nil)
//	store := embedtest.NewCacheStore()
//	cache, err := embed.NewCache(fake, store, nil)
//	vecs, err := cache.Embed(ctx, []string{"a", "b", "a"})
//	// fake.Calls() == 1, fake.Texts() == ["a", "b"], store.Len() == 2
//
// # Caveats
//
//   - A [Fake] vector is pseudo-random noise derived from a hash of the text:
//     equal texts give equal vectors, but similar texts do not give similar
//     ones. Test recall quality with [embed.Hashing] or a real model.
//   - Both types are for tests: [CacheStore] keeps everything in memory and
//     forgets it at exit, and [Fake] keeps every text it was given.
package embedtest
