package memory

import (
	"context"

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
	var out Fact
	err := s.UpdateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Relate(fact)
		return err
	})
	return out, err
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
	return s.graph.Load(ctx, s.db.KV(), root, d, opts)
}
