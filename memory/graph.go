package memory

import (
	"context"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// The knowledge graph's types, shared with package graph (see its
// documentation for the semantics of each).
type (
	// Fact is a triple with bi-temporal validity; see [graph.Fact].
	Fact = graph.Fact
	// FactQuery selects facts for [Store.Facts].
	FactQuery = graph.FactQuery
	// TraverseQuery is a breadth-first walk for [Store.Traverse].
	TraverseQuery = graph.TraverseQuery
	// Traversal is what [Store.Traverse] returns.
	Traversal = graph.Traversal
	// Step is one fact of a [Traversal], with its hop count and path.
	Step = graph.Step
	// NeighborQuery selects the facts of one entity for [Store.Neighbors].
	NeighborQuery = graph.NeighborQuery
	// PathQuery asks [Store.ShortestPath] for a chain of facts.
	PathQuery = graph.PathQuery
	// Direction says which facts of an entity a walk follows.
	Direction = graph.Direction
	// Entity is a node of the graph, in the MCP memory server's shape.
	Entity = graph.Entity
	// Relation is a fact in the MCP memory server's shape.
	Relation = graph.Relation
	// ObservationSet names observations of one entity.
	ObservationSet = graph.ObservationSet
	// Graph is a set of entities and the relations among them.
	Graph = graph.Graph
	// GraphPage is one page of [Store.ReadGraph].
	GraphPage = graph.GraphPage
	// ReadGraphOptions pages through [Store.ReadGraph].
	ReadGraphOptions = graph.ReadOptions
	// SearchNodesOptions bounds [Store.SearchNodes].
	SearchNodesOptions = graph.SearchOptions
)

// Directions of a walk.
const (
	// DirectionBoth follows facts an entity is the subject or object of.
	DirectionBoth = graph.Both
	// DirectionOut follows facts an entity is the subject of.
	DirectionOut = graph.Out
	// DirectionIn follows facts an entity is the object of.
	DirectionIn = graph.In
)

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

// updateGraph runs fn on the scope's graph in a read-write transaction.
func (s *Store) updateGraph(ctx context.Context, scope Scope, fn func(*graph.Tx) error) error {
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

// viewGraph runs fn on the scope's graph in a read-only transaction.
func (s *Store) viewGraph(ctx context.Context, scope Scope, fn func(*graph.Tx) error) error {
	root, err := graphRoot(scope)
	if err != nil {
		return err
	}
	return s.db.View(ctx, func(tx *engine.Tx) error { return fn(s.graph.Tx(tx.KV(), root)) })
}

// Relate stores a fact in the graph of scope's user (or the tenant's shared
// graph when User is empty) and returns it as stored; see [graph.Tx.Relate]
// for duplicates and for single-valued predicates (Options.SingleValued).
// To write a fact in the same transaction as the message it came from, use
// [Store.Write].
func (s *Store) Relate(ctx context.Context, scope Scope, fact Fact) (Fact, error) {
	var out Fact
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Relate(fact)
		return err
	})
	return out, err
}

// Invalidate records that a fact stopped holding at event time at (zero:
// now); see [graph.Tx.Invalidate].
func (s *Store) Invalidate(ctx context.Context, scope Scope, id string, at time.Time) (Fact, error) {
	var out Fact
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Invalidate(id, at)
		return err
	})
	return out, err
}

// DeleteFact removes a fact and forgets that it ever held.
func (s *Store) DeleteFact(ctx context.Context, scope Scope, id string) error {
	return s.updateGraph(ctx, scope, func(g *graph.Tx) error { return g.Delete(id) })
}

// Facts returns the facts of the scope's graph that match q, valid now or
// at q.AsOf; see [graph.Tx.Facts].
func (s *Store) Facts(ctx context.Context, scope Scope, q FactQuery) ([]Fact, error) {
	var out []Fact
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Facts(q)
		return err
	})
	return out, err
}

// History returns every version of a (subject, predicate) pair in order of
// ValidFrom: how its value changed.
func (s *Store) History(ctx context.Context, scope Scope, subject, predicate string) ([]Fact, error) {
	var out []Fact
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.History(subject, predicate)
		return err
	})
	return out, err
}

// Traverse walks the scope's graph breadth-first from q.From and returns
// each fact reached with its hop count and path; see [graph.Tx.Traverse].
func (s *Store) Traverse(ctx context.Context, scope Scope, q TraverseQuery) (Traversal, error) {
	var out Traversal
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Traverse(q)
		return err
	})
	return out, err
}

// Neighbors returns the facts linking one entity to its neighbours.
func (s *Store) Neighbors(ctx context.Context, scope Scope, q NeighborQuery) ([]Fact, error) {
	var out []Fact
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Neighbors(q)
		return err
	})
	return out, err
}

// ShortestPath returns a shortest chain of facts between two entities
// within q.MaxHops, or nil; see [graph.Tx.ShortestPath].
func (s *Store) ShortestPath(ctx context.Context, scope Scope, q PathQuery) ([]Fact, error) {
	var out []Fact
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.ShortestPath(q)
		return err
	})
	return out, err
}

// Entity returns the entity that name (or an alias) names, or
// [ErrEntityNotFound].
func (s *Store) Entity(ctx context.Context, scope Scope, name string) (Entity, error) {
	var out Entity
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.Entity(name)
		return err
	})
	return out, err
}

// CreateEntities creates the entities not yet known and returns them (the
// MCP memory server's create_entities); see [graph.Tx.CreateEntities].
func (s *Store) CreateEntities(ctx context.Context, scope Scope, entities []Entity) ([]Entity, error) {
	var out []Entity
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.CreateEntities(entities)
		return err
	})
	return out, err
}

// CreateRelations relates each pair and returns the relations that were
// new (create_relations).
func (s *Store) CreateRelations(ctx context.Context, scope Scope, relations []Relation) ([]Relation, error) {
	var out []Relation
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.CreateRelations(relations)
		return err
	})
	return out, err
}

// AddObservations adds observations to entities and returns the new ones
// (add_observations). An unknown entity is [ErrEntityNotFound] and nothing
// is written.
func (s *Store) AddObservations(ctx context.Context, scope Scope, sets []ObservationSet) ([]ObservationSet, error) {
	var out []ObservationSet
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.AddObservations(sets)
		return err
	})
	return out, err
}

// DeleteEntities removes entities and every fact naming them
// (delete_entities).
func (s *Store) DeleteEntities(ctx context.Context, scope Scope, names []string) error {
	return s.updateGraph(ctx, scope, func(g *graph.Tx) error { return g.DeleteEntities(names) })
}

// DeleteObservations removes observations from entities
// (delete_observations).
func (s *Store) DeleteObservations(ctx context.Context, scope Scope, sets []ObservationSet) error {
	return s.updateGraph(ctx, scope, func(g *graph.Tx) error { return g.DeleteObservations(sets) })
}

// DeleteRelations removes the facts of each relation, of every time
// (delete_relations).
func (s *Store) DeleteRelations(ctx context.Context, scope Scope, relations []Relation) error {
	return s.updateGraph(ctx, scope, func(g *graph.Tx) error { return g.DeleteRelations(relations) })
}

// ReadGraph returns one page of the scope's graph (read_graph); follow
// GraphPage.Next for the rest.
func (s *Store) ReadGraph(ctx context.Context, scope Scope, opts ReadGraphOptions) (GraphPage, error) {
	var out GraphPage
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.ReadGraph(opts)
		return err
	})
	return out, err
}

// SearchNodes returns the entities whose name, type, aliases or
// observations contain query, and the relations among them (search_nodes).
func (s *Store) SearchNodes(ctx context.Context, scope Scope, query string, opts SearchNodesOptions) (Graph, error) {
	var out Graph
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.SearchNodes(query, opts)
		return err
	})
	return out, err
}

// OpenNodes returns the named entities and the relations among them
// (open_nodes).
func (s *Store) OpenNodes(ctx context.Context, scope Scope, names []string) (Graph, error) {
	var out Graph
	err := s.viewGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.OpenNodes(names)
		return err
	})
	return out, err
}

// AddAliases makes each alias another name of the entity name names.
func (s *Store) AddAliases(ctx context.Context, scope Scope, name string, aliases ...string) (Entity, error) {
	var out Entity
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.AddAliases(name, aliases...)
		return err
	})
	return out, err
}

// MergeEntities folds the entity from into the entity into, facts and all;
// see [graph.Tx.MergeEntities].
func (s *Store) MergeEntities(ctx context.Context, scope Scope, into, from string) (Entity, error) {
	var out Entity
	err := s.updateGraph(ctx, scope, func(g *graph.Tx) (err error) {
		out, err = g.MergeEntities(into, from)
		return err
	})
	return out, err
}

// GraphDump is a graph's entities and facts for [Store.ImportGraph].
type GraphDump = graph.Dump

// ImportGraph bulk-loads entities and facts into the scope's graph, in
// chunked transactions (see graph.Store.Load, including its caveats: it is
// much faster than Relate per fact, keeps ids and times as given, and is
// not isolated from concurrent writers to the same graph).
func (s *Store) ImportGraph(ctx context.Context, scope Scope, d *GraphDump) (graph.LoadStats, error) {
	root, err := graphRoot(scope)
	if err != nil {
		return graph.LoadStats{}, err
	}
	defer s.nameCache.invalidate(root)
	return s.graph.Load(ctx, s.db.KV(), root, d, nil)
}
