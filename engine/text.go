package engine

import (
	"context"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/index"
)

// SearchText returns the k records of scope's partition (in opts.Space) that
// best match query by BM25 over their text, best first; Hit.Score is the
// BM25 score, comparable only within one query. The text is analyzed by
// [index.Analyze]: stop words go, words are stemmed, numbers and
// identifiers are kept whole. A query with no index terms matches nothing.
// With opts.Synonyms the query is expanded with WordNet synonyms at a
// lower weight ([index.ExpandQuery]). Filter applies as in [DB.Search]; Ef
// is ignored.
func (db *DB) SearchText(ctx context.Context, scope Scope, query string, k int, opts *SearchOptions) ([]Hit, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	prefix, err := recordPrefix(scope, o.Space)
	if err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, fmt.Errorf("%w: k %d must be positive", ErrInvalidOptions, k)
	}
	p, err := db.acquire(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer p.release()
	var terms []string
	var weighted []index.WeightedTerm
	if o.Synonyms {
		if weighted, err = index.ExpandQuery(query); err != nil {
			return nil, err
		}
	} else {
		terms = index.Analyze(query)
	}
	p.mu.RLock()
	if p.mu.lex == nil || len(terms)+len(weighted) == 0 {
		p.mu.RUnlock()
		return nil, nil
	}
	io := &index.SearchOptions{}
	if o.Filter != nil {
		keys := p.mu.keys
		io.Filter = func(ix uint64) bool { return o.Filter(keys[ix].String()) }
	}
	var res []index.Result
	if o.Synonyms {
		res, err = p.mu.lex.SearchWeighted(weighted, k, io)
	} else {
		res, err = p.mu.lex.SearchTerms(terms, k, io)
	}
	ids := make([]ulid.ULID, len(res))
	for i, r := range res {
		ids[i] = p.mu.keys[r.ID]
	}
	p.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return db.readHits(ctx, prefix, ids, res, o.IDsOnly)
}
