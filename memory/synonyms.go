package memory

import "github.com/engramdb/engram/engine"

// withSynonyms returns opts for a BM25 search, asking for synonym
// expansion when on (Options.Synonyms). opts is not changed.
func withSynonyms(opts *engine.SearchOptions, on bool) *engine.SearchOptions {
	if !on {
		return opts
	}
	o := *opts
	o.Synonyms = true
	return &o
}
