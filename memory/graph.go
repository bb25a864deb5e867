package memory

import (
	"context"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// Fact is a triple with bi-temporal validity, shared with package graph
// (see [graph.Fact]); [Store.Relate] stores one.
type Fact = graph.Fact

// graphRoot returns the key prefix of the graph of scope: the user's, or
// the tenant's shared graph when User is empty. Session and Agent do not
// select a graph: facts belong to the user.
func graphRoot(scope Scope) ([]byte, error) {
	p, err := scope.PartitionPrefix()
	if err != nil {
		return nil, err
	}
	return partitionPrefix(p).graphRoot(), nil
}

// UpdateGraph runs fn on the graph of scope's user (or the tenant's shared
// graph when User is empty) in one read-write transaction: everything fn
// writes commits together when it returns nil, and nothing is written when
// it returns an error or panics (the panic is re-raised). As in
// [engine.DB.Update], fn runs again when the commit conflicts with a
// concurrent writer, so it must have no effects outside the transaction
// but setting its results. The [graph.Tx] is valid only until fn returns.
//
// UpdateGraph and [Store.ViewGraph] are the one door to the graph's
// methods (Invalidate, Delete, CreateEntities, AddObservations,
// MergeEntities, ...; see package graph for each). After a commit the
// store forgets the entity names it caches for linking, so Recall sees
// the new names at once.
func (s *Store) UpdateGraph(ctx context.Context, scope Scope, fn func(*graph.Tx) error) error {
	root, err := graphRoot(scope)
	if err != nil {
		return err
	}
	err = s.db.Update(ctx, func(tx *engine.Tx) error { return fn(s.graph.Tx(tx.KV(), root)) })
	if err == nil {
		s.nameCache.invalidate(root)
	}
	return err
}

// ViewGraph runs fn on the graph of scope's user (or the tenant's shared
// graph when User is empty) in one read-only transaction over a consistent
// snapshot: Facts, History, Traverse, ReadGraph, SearchNodes, Export, ...
// The [graph.Tx] is valid only until fn returns, and fn must not write
// through it.
func (s *Store) ViewGraph(ctx context.Context, scope Scope, fn func(*graph.Tx) error) error {
	root, err := graphRoot(scope)
	if err != nil {
		return err
	}
	return s.db.View(ctx, func(tx *engine.Tx) error { return fn(s.graph.Tx(tx.KV(), root)) })
}

// Relate stores a fact in the graph of scope's user (or the tenant's shared
// graph when User is empty) and returns it as stored; see [graph.Tx.Relate]
// for duplicates and for single-valued predicates (Options.SingleValued).
// With Options.Redactor, personal data in the subject and object is
// replaced by placeholders first, numbered as in [Store.Redact]. To write a
// fact in the same transaction as the message it came from, use
// [Store.Write].
func (s *Store) Relate(ctx context.Context, scope Scope, fact Fact) (Fact, error) {
	if err := s.redactFact(ctx, scope, &fact); err != nil {
		return Fact{}, err
	}
	root, err := graphRoot(scope)
	if err != nil {
		return Fact{}, err
	}
	enc, err := s.encoder()
	if err != nil {
		return Fact{}, err
	}
	var out Fact
	err = s.db.Update(ctx, func(tx *engine.Tx) (err error) {
		if out, err = s.graph.Tx(tx.KV(), root).Relate(fact); err != nil {
			return err
		}
		return s.putFactTokens(tx, root, enc, &out)
	})
	if err == nil {
		s.nameCache.invalidate(root)
	}
	return out, err
}

// putFactTokens stores the token count of f's text, f as stored in the
// graph whose root is root, in the partition's factTokens key (see
// lineTokens). A fact written otherwise (UpdateGraph, ImportGraph) has
// none, and Recall counts its line.
func (s *Store) putFactTokens(tx *engine.Tx, root []byte, enc ordinaryEncoder, f *Fact) error {
	id, err := ulid.ParseStrict(f.ID)
	if err != nil {
		return fmt.Errorf("memory: fact id %q: %w", f.ID, err)
	}
	text := factText(f)
	return tx.Set(graphPartition(root).factTokens(id), formatFactTokens(s.opts.Encoding, memoryTextTokens(enc, text), text))
}

// ImportGraph bulk-loads a dump of entities and facts into the graph of
// scope's user (or the tenant's shared graph when User is empty), keeping
// fact ids and record times as given; opts may be nil. It is much faster
// than Relate per fact. Every entity and fact is checked before anything is
// written: a bad one is an error and nothing is written. The writes then go
// in transactions of a few thousand facts, so a storage failure part way
// leaves the chunks before it (importing the same dump again completes it,
// since facts already stored are skipped), and the load is not isolated
// from concurrent writers to the same graph; see [graph.Store.Load].
//
// To load N-Quads (as [graph.Tx.Export] writes them inside
// [Store.ViewGraph], or from any other tool), read them into a dump with
// [graph.ParseNQuads] first; it holds the whole input in memory, as a load
// does anyway.
func (s *Store) ImportGraph(ctx context.Context, scope Scope, d *graph.Dump, opts *graph.LoadOptions) (graph.LoadStats, error) {
	root, err := graphRoot(scope)
	if err != nil {
		return graph.LoadStats{}, err
	}
	defer s.nameCache.invalidate(root)
	st, err := s.graph.Load(ctx, s.db.KV(), root, d, opts)
	if err != nil {
		return st, err
	}
	return st, s.storeFactTokens(ctx, root)
}

// factTokensPage is how many facts storeFactTokens counts per transaction.
const factTokensPage = 1000

// storeFactTokens stores the token count (see putFactTokens) of every fact
// of the graph at root that has none, a page of facts at a time: each
// page is read and counted outside any write, then its counts written in
// one transaction. A fact changed in between is no harm: a count is
// checked against its text when read.
func (s *Store) storeFactTokens(ctx context.Context, root []byte) error {
	enc, err := s.encoder()
	if err != nil {
		return err
	}
	p := graphPartition(root)
	for after := ""; ; {
		var page []Fact
		var keys [][]byte
		err := s.db.View(ctx, func(tx *engine.Tx) error {
			facts, err := s.graph.Tx(tx.KV(), root).Facts(graph.FactQuery{History: true, After: after, Limit: factTokensPage})
			if err != nil {
				return err
			}
			page, keys = page[:0], keys[:0]
			for i := range facts {
				after = facts[i].ID
				id, err := ulid.ParseStrict(facts[i].ID)
				if err != nil {
					continue
				}
				k := p.factTokens(id)
				if ok, err := tx.KV().Has(k); err != nil || ok {
					if err != nil {
						return err
					}
					continue
				}
				page, keys = append(page, facts[i]), append(keys, k)
			}
			if len(facts) < factTokensPage {
				after = ""
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("memory: count imported facts: %w", err)
		}
		vals := make([][]byte, len(page))
		for i := range page {
			text := factText(&page[i])
			vals[i] = formatFactTokens(s.opts.Encoding, memoryTextTokens(enc, text), text)
		}
		if len(page) > 0 {
			if err := s.db.Update(ctx, func(tx *engine.Tx) error {
				for i := range keys {
					if err := tx.Set(keys[i], vals[i]); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return fmt.Errorf("memory: store imported facts' counts: %w", err)
			}
		}
		if after == "" {
			return nil
		}
	}
}
