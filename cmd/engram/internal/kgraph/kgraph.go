// Package kgraph is the knowledge graph as the MCP memory server shows it,
// one implementation behind both of Engram's graph interfaces: the nine MCP
// graph tools (package mcpserver) and their HTTP routes (package httpapi),
// so that the same call answers the same graph through either.
//
// The reference server (@modelcontextprotocol/server-memory) sets the
// rules: creating an entity that exists leaves it as it is; search_nodes
// and open_nodes answer, with the entities, every relation that has at
// least one end among them; and a name that is only the end of a relation
// is no entity. Engram's graph creates an entity, with no type,
// observations or aliases, for every name a fact mentions ([Implicit]);
// the functions here treat it as the reference treats the bare name.
//
// Each function takes the store and the scope of the graph, and redacts
// observations as the store redacts the user's memories
// (memory.Options.Redactor).
package kgraph

import (
	"context"
	"errors"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Bounds of the reads.
const (
	// DefaultReadLimit is how many entities and relations, together,
	// [Read] returns when its limit is zero: a graph that small comes
	// back whole, as the reference returns every graph; a larger one
	// comes back in pages. At about 60 bytes a relation and 150 an entity
	// with a few observations, a full page is some 100 KB of JSON.
	DefaultReadLimit = 1000
	// MaxReadLimit is the largest limit [Read] accepts.
	MaxReadLimit = graph.MaxPageSize
	// DefaultSearchLimit bounds the entities [Search] returns when its
	// limit is zero. The reference returns every match; Engram bounds
	// the answer as it bounds a page of [Read].
	DefaultSearchLimit = DefaultReadLimit
	// MaxRelations bounds the relations [Search] and [Open] return.
	MaxRelations = graph.MaxPageSize
)

// Implicit reports whether e exists only as the end of a relation: no
// type, observations or aliases. It is absent from [Read], [Search] and
// [Open] (its relations stay), not found by [AddObservations], and given
// the details of [CreateEntities].
//
// One case differs from the reference: an entity created with an empty
// type and no observations looks implicit too, and is hidden as if it
// were.
func Implicit(e graph.Entity) bool {
	return e.Type == "" && len(e.Observations) == 0 && len(e.Aliases) == 0
}

// visible returns the entities that are not [Implicit].
func visible(es []graph.Entity) []graph.Entity {
	out := es[:0:0]
	for _, e := range es {
		if !Implicit(e) {
			out = append(out, e)
		}
	}
	return out
}

// entity returns the entity that name (or an alias) names, in a
// transaction of its own.
func entity(ctx context.Context, s *memory.Store, sc memory.Scope, name string) (graph.Entity, error) {
	var e graph.Entity
	err := s.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		e, err = g.Entity(name)
		return err
	})
	return e, err
}

// redact replaces the personal data in n lists of observations (the i-th
// at list(i)) as the store redacts a memory of the user, numbered for the
// user since the graph is the user's whatever the session. The same text
// gets the same placeholders, so a deletion finds what an addition stored.
// Entity names and relation ends stay: they are the keys a client names
// the entity by.
func redact(ctx context.Context, s *memory.Store, sc memory.Scope, n int, list func(i int) *[]string) error {
	sc.Session = ""
	for i := range n {
		obs := list(i)
		if len(*obs) == 0 {
			continue
		}
		red, err := s.Redact(ctx, sc, *obs...)
		if err != nil {
			return err
		}
		*obs = red
	}
	return nil
}

// CreateEntities creates the entities whose names are unknown or
// [Implicit] and returns them as stored, in the order given, each once; an
// existing entity is left unchanged and left out of the answer, as the
// reference does. (graph.Tx.CreateEntities would add the details.)
//
// The check and the creation are two transactions: an entity created by
// another client between them gets this call's observations added.
func CreateEntities(ctx context.Context, s *memory.Store, sc memory.Scope, in []graph.Entity) ([]graph.Entity, error) {
	es := make([]graph.Entity, 0, len(in))
	wasImplicit := map[string]bool{}
	for _, e := range in {
		cur, err := entity(ctx, s, sc, e.Name)
		switch {
		case err == nil && !Implicit(cur):
			continue // the reference leaves it as it is
		case err == nil:
			wasImplicit[graph.Fold(cur.Name)] = true
		case !errors.Is(err, memory.ErrEntityNotFound) && !errors.Is(err, memory.ErrInvalidName):
			return nil, err
		}
		es = append(es, e)
	}
	if err := redact(ctx, s, sc, len(es), func(i int) *[]string { return &es[i].Observations }); err != nil {
		return nil, err
	}
	var created []graph.Entity
	err := s.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		created, err = g.CreateEntities(es)
		return err
	})
	if err != nil {
		return nil, err
	}
	byName := make(map[string]graph.Entity, len(created))
	for _, e := range created {
		byName[graph.Fold(e.Name)] = e
	}
	answer := make([]graph.Entity, 0, len(es))
	for _, e := range es {
		f := graph.Fold(e.Name)
		c, ok := byName[f]
		if !ok && wasImplicit[f] {
			if c, err = entity(ctx, s, sc, e.Name); err != nil {
				return nil, err
			}
			ok = true
		}
		if ok {
			answer = append(answer, c)
			delete(byName, f)
			delete(wasImplicit, f)
		}
	}
	return answer, nil
}

// CreateRelations creates the relations that do not hold yet and returns
// them.
func CreateRelations(ctx context.Context, s *memory.Store, sc memory.Scope, rels []graph.Relation) ([]graph.Relation, error) {
	var created []graph.Relation
	err := s.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		created, err = g.CreateRelations(rels)
		return err
	})
	return nonNil(created), err
}

// AddObservations adds the observations each entity lacks and returns the
// ones added. A name that is unknown or [Implicit] is an
// [EntityNotFoundError], and nothing is written.
func AddObservations(ctx context.Context, s *memory.Store, sc memory.Scope, sets []graph.ObservationSet) ([]graph.ObservationSet, error) {
	for _, set := range sets {
		// The end of a relation is no entity to the reference.
		if e, err := entity(ctx, s, sc, set.EntityName); err == nil && Implicit(e) {
			return nil, EntityNotFoundError{set.EntityName}
		}
	}
	if err := redact(ctx, s, sc, len(sets), func(i int) *[]string { return &sets[i].Observations }); err != nil {
		return nil, err
	}
	var added []graph.ObservationSet
	err := s.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		added, err = g.AddObservations(sets)
		return err
	})
	if errors.Is(err, memory.ErrEntityNotFound) {
		// Nothing was written; name the first unknown entity.
		for _, set := range sets {
			if _, err := entity(ctx, s, sc, set.EntityName); errors.Is(err, memory.ErrEntityNotFound) {
				return nil, EntityNotFoundError{set.EntityName}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	for i := range added {
		added[i].Observations = nonNil(added[i].Observations)
	}
	return nonNil(added), nil
}

// DeleteEntities deletes the named entities and their relations; unknown
// names are skipped.
func DeleteEntities(ctx context.Context, s *memory.Store, sc memory.Scope, names []string) error {
	return s.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteEntities(names) })
}

// DeleteObservations deletes the observations named, redacted first as
// [AddObservations] redacts them so that the same text is found.
func DeleteObservations(ctx context.Context, s *memory.Store, sc memory.Scope, sets []graph.ObservationSet) error {
	if err := redact(ctx, s, sc, len(sets), func(i int) *[]string { return &sets[i].Observations }); err != nil {
		return err
	}
	return s.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteObservations(sets) })
}

// DeleteRelations deletes the relations given; those that do not hold are
// skipped.
func DeleteRelations(ctx context.Context, s *memory.Store, sc memory.Scope, rels []graph.Relation) error {
	return s.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteRelations(rels) })
}

// Read returns a page of the graph (see graph.Tx.ReadGraph), without the
// [Implicit] entities; a zero limit means [DefaultReadLimit]. A bad cursor
// is memory.ErrInvalidCursor.
func Read(ctx context.Context, s *memory.Store, sc memory.Scope, opts graph.ReadOptions) (graph.GraphPage, error) {
	if opts.Limit == 0 {
		opts.Limit = DefaultReadLimit
	}
	var page graph.GraphPage
	err := s.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		page, err = g.ReadGraph(opts)
		return err
	})
	if err != nil {
		return graph.GraphPage{}, err
	}
	page.Entities = visible(page.Entities)
	page.Relations = nonNil(page.Relations)
	return page, nil
}

// Search returns the entities whose name, type, aliases or observations
// contain query (see graph.Tx.SearchNodes), at most limit of them
// ([DefaultSearchLimit] when zero), and their relations as [Open] does.
func Search(ctx context.Context, s *memory.Store, sc memory.Scope, query string, limit int) (graph.Graph, error) {
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	var found graph.Graph
	err := s.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		found, err = g.SearchNodes(query, graph.SearchOptions{Limit: limit})
		return err
	})
	if err != nil {
		return graph.Graph{}, err
	}
	return nodes(ctx, s, sc, visible(found.Entities))
}

// Open returns the entities the names (or aliases) name, in the order
// given, skipping unknown names, [Implicit] entities and repeats, and the
// relations that hold now with at least one end among them, so that a
// caller sees an entity's connections to entities outside the answer; at
// most [MaxRelations]. More than graph.MaxPageSize names is
// memory.ErrInvalidQuery.
func Open(ctx context.Context, s *memory.Store, sc memory.Scope, names []string) (graph.Graph, error) {
	var found graph.Graph
	err := s.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		found, err = g.OpenNodes(names)
		return err
	})
	if err != nil {
		return graph.Graph{}, err
	}
	return nodes(ctx, s, sc, visible(found.Entities))
}

// nodes returns the entities and the relations that hold now with at
// least one end among them, each once. (The graph package returns only
// the relations among them.)
func nodes(ctx context.Context, s *memory.Store, sc memory.Scope, entities []graph.Entity) (graph.Graph, error) {
	out := graph.Graph{Entities: entities, Relations: []graph.Relation{}}
	seen := map[string]bool{}
	for _, e := range entities {
		var facts []graph.Fact
		err := s.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
			facts, err = g.Neighbors(graph.NeighborQuery{Entity: e.Name, Limit: graph.MaxPageSize})
			return err
		})
		if errors.Is(err, memory.ErrEntityNotFound) {
			continue // deleted since the search
		} else if err != nil {
			return graph.Graph{}, err
		}
		for i := range facts {
			if seen[facts[i].ID] {
				continue // a relation between two answers, or a loop
			}
			seen[facts[i].ID] = true
			if len(out.Relations) == MaxRelations {
				break
			}
			out.Relations = append(out.Relations, facts[i].Relation())
		}
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
