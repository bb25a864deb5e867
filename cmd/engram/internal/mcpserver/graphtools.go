package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Bounds of the graph tools.
const (
	// DefaultReadGraphLimit is how many entities and relations, together,
	// read_graph returns when its limit is left out: a graph that small
	// comes back whole, as the reference server returns every graph; a
	// larger one comes back in pages, each with the nextCursor of the next.
	// At about 60 bytes a relation and 150 an entity with a few
	// observations, a full page is some 100 KB of JSON: already more than a
	// model should read at once, so paging past it costs nothing useful.
	DefaultReadGraphLimit = 1000
	// MaxReadGraphLimit is the largest limit read_graph accepts.
	MaxReadGraphLimit = graph.MaxPageSize
	// MaxSearchResults bounds the entities search_nodes returns. The
	// reference returns every match; Engram bounds the answer as it
	// bounds read_graph's default page.
	MaxSearchResults = DefaultReadGraphLimit
	// MaxRelations bounds the relations search_nodes and open_nodes
	// return.
	MaxRelations = graph.MaxPageSize
)

// The wire shapes of the memory server. Entities go out without Engram's
// aliases and creation time, so that clients see exactly the reference's
// shape.
type (
	entityJSON struct {
		Name         string   `json:"name"`
		EntityType   string   `json:"entityType"`
		Observations []string `json:"observations"`
	}
	graphJSON struct {
		Entities  []entityJSON     `json:"entities"`
		Relations []graph.Relation `json:"relations"`
	}
	readGraphOut struct {
		Entities   []entityJSON     `json:"entities"`
		Relations  []graph.Relation `json:"relations"`
		NextCursor string           `json:"nextCursor,omitempty"`
	}
	statusOut struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}

	createEntitiesIn struct {
		Entities []entityJSON `json:"entities"`
	}
	createEntitiesOut struct {
		Entities []entityJSON `json:"entities"`
	}
	relationsIn struct {
		Relations []graph.Relation `json:"relations"`
	}
	relationsOut struct {
		Relations []graph.Relation `json:"relations"`
	}
	addObservationsIn struct {
		Observations []struct {
			EntityName string   `json:"entityName"`
			Contents   []string `json:"contents"`
		} `json:"observations"`
	}
	addedJSON struct {
		EntityName        string   `json:"entityName"`
		AddedObservations []string `json:"addedObservations"`
	}
	addObservationsOut struct {
		Results []addedJSON `json:"results"`
	}
	deleteEntitiesIn struct {
		EntityNames []string `json:"entityNames"`
	}
	deleteObservationsIn struct {
		Deletions []graph.ObservationSet `json:"deletions"`
	}
	readGraphIn struct {
		Cursor string `json:"cursor,omitempty"`
		Limit  int    `json:"limit,omitempty"`
	}
	searchNodesIn struct {
		Query string `json:"query"`
	}
	openNodesIn struct {
		Names []string `json:"names"`
	}
)

// The schemas below are the reference server's (version 2026.8.31, from
// tools/list), field for field: the compatibility test compares them. Its
// input objects allow unknown properties (zod strips them); its output
// objects do not.

func stringSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func stringsSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: &jsonschema.Schema{Type: "string"}}
}

func objectSchema(closed bool, props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: props, Required: required}
	if closed {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	return s
}

func arraySchema(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: items}
}

func entitySchema(closed bool) *jsonschema.Schema {
	return objectSchema(closed, map[string]*jsonschema.Schema{
		"name":         stringSchema("The name of the entity"),
		"entityType":   stringSchema("The type of the entity"),
		"observations": stringsSchema("An array of observation contents associated with the entity"),
	}, "name", "entityType", "observations")
}

func relationSchema(closed bool) *jsonschema.Schema {
	return objectSchema(closed, map[string]*jsonschema.Schema{
		"from":         stringSchema("The name of the entity where the relation starts"),
		"to":           stringSchema("The name of the entity where the relation ends"),
		"relationType": stringSchema("The type of the relation"),
	}, "from", "to", "relationType")
}

func graphSchema() *jsonschema.Schema {
	return objectSchema(true, map[string]*jsonschema.Schema{
		"entities":  arraySchema(entitySchema(true)),
		"relations": arraySchema(relationSchema(true)),
	}, "entities", "relations")
}

func statusSchema() *jsonschema.Schema {
	return objectSchema(true, map[string]*jsonschema.Schema{
		"success": {Type: "boolean"},
		"message": {Type: "string"},
	}, "success", "message")
}

func hints(readOnly, destructive, idempotent bool) *mcp.ToolAnnotations {
	openWorld := false
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &openWorld,
	}
}

// graphTools are the nine tools' definitions, built once so that every
// server shares their schemas (and [schemaCache] their resolutions).
var graphTools = struct {
	createEntities, createRelations, addObservations,
	deleteEntities, deleteObservations, deleteRelations,
	readGraph, searchNodes, openNodes *mcp.Tool
}{
	createEntities: &mcp.Tool{
		Name:        "create_entities",
		Title:       "Create Entities",
		Description: "Create multiple new entities in the knowledge graph",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"entities": arraySchema(entitySchema(false)),
		}, "entities"),
		OutputSchema: objectSchema(true, map[string]*jsonschema.Schema{
			"entities": arraySchema(entitySchema(true)),
		}, "entities"),
		Annotations: hints(false, false, false),
	},
	createRelations: &mcp.Tool{
		Name:        "create_relations",
		Title:       "Create Relations",
		Description: "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"relations": arraySchema(relationSchema(false)),
		}, "relations"),
		OutputSchema: objectSchema(true, map[string]*jsonschema.Schema{
			"relations": arraySchema(relationSchema(true)),
		}, "relations"),
		Annotations: hints(false, false, false),
	},
	addObservations: &mcp.Tool{
		Name:        "add_observations",
		Title:       "Add Observations",
		Description: "Add new observations to existing entities in the knowledge graph",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"observations": arraySchema(objectSchema(false, map[string]*jsonschema.Schema{
				"entityName": stringSchema("The name of the entity to add the observations to"),
				"contents":   stringsSchema("An array of observation contents to add"),
			}, "entityName", "contents")),
		}, "observations"),
		OutputSchema: objectSchema(true, map[string]*jsonschema.Schema{
			"results": arraySchema(objectSchema(true, map[string]*jsonschema.Schema{
				"entityName":        {Type: "string"},
				"addedObservations": stringsSchema(""),
			}, "entityName", "addedObservations")),
		}, "results"),
		Annotations: hints(false, false, false),
	},
	deleteEntities: &mcp.Tool{
		Name:        "delete_entities",
		Title:       "Delete Entities",
		Description: "Delete multiple entities and their associated relations from the knowledge graph",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"entityNames": stringsSchema("An array of entity names to delete"),
		}, "entityNames"),
		OutputSchema: statusSchema(),
		Annotations:  hints(false, true, true),
	},
	deleteObservations: &mcp.Tool{
		Name:        "delete_observations",
		Title:       "Delete Observations",
		Description: "Delete specific observations from entities in the knowledge graph",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"deletions": arraySchema(objectSchema(false, map[string]*jsonschema.Schema{
				"entityName":   stringSchema("The name of the entity containing the observations"),
				"observations": stringsSchema("An array of observations to delete"),
			}, "entityName", "observations")),
		}, "deletions"),
		OutputSchema: statusSchema(),
		Annotations:  hints(false, true, true),
	},
	deleteRelations: &mcp.Tool{
		Name:        "delete_relations",
		Title:       "Delete Relations",
		Description: "Delete multiple relations from the knowledge graph",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"relations": func() *jsonschema.Schema {
				s := arraySchema(relationSchema(false))
				s.Description = "An array of relations to delete"
				return s
			}(),
		}, "relations"),
		OutputSchema: statusSchema(),
		Annotations:  hints(false, true, true),
	},
	readGraph: &mcp.Tool{
		Name:  "read_graph",
		Title: "Read Graph",
		Description: fmt.Sprintf("Read the entire knowledge graph. A graph of up to %d entities and relations "+
			"comes back whole; a larger one in pages: call again with cursor set to the nextCursor of the "+
			"previous page until there is none.", DefaultReadGraphLimit),
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"cursor": stringSchema("Where to continue: the nextCursor of the previous page. Leave out to start."),
			"limit": {
				Type: "integer",
				Description: fmt.Sprintf("The most entities and relations, together, to return (default %d).",
					DefaultReadGraphLimit),
				Minimum: jsonschema.Ptr(1.0),
				Maximum: jsonschema.Ptr(float64(MaxReadGraphLimit)),
			},
		}),
		OutputSchema: func() *jsonschema.Schema {
			s := graphSchema()
			s.Properties["nextCursor"] = stringSchema("Set when the graph has more: pass it as cursor to read the next page.")
			return s
		}(),
		Annotations: hints(true, false, true),
	},
	searchNodes: &mcp.Tool{
		Name:        "search_nodes",
		Title:       "Search Nodes",
		Description: "Search for nodes in the knowledge graph based on a query",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"query": stringSchema("The search query to match against entity names, types, and observation content"),
		}, "query"),
		OutputSchema: graphSchema(),
		Annotations:  hints(true, false, true),
	},
	openNodes: &mcp.Tool{
		Name:        "open_nodes",
		Title:       "Open Nodes",
		Description: "Open specific nodes in the knowledge graph by their names",
		InputSchema: objectSchema(false, map[string]*jsonschema.Schema{
			"names": stringsSchema("An array of entity names to retrieve"),
		}, "names"),
		OutputSchema: graphSchema(),
		Annotations:  hints(true, false, true),
	},
}

func (h *handlers) addGraphTools(s *mcp.Server) {
	t := &graphTools
	mcp.AddTool(s, t.createEntities, h.createEntities)
	mcp.AddTool(s, t.createRelations, h.createRelations)
	mcp.AddTool(s, t.addObservations, h.addObservations)
	mcp.AddTool(s, t.deleteEntities, h.deleteEntities)
	mcp.AddTool(s, t.deleteObservations, h.deleteObservations)
	mcp.AddTool(s, t.deleteRelations, h.deleteRelations)
	mcp.AddTool(s, t.readGraph, h.readGraph)
	mcp.AddTool(s, t.searchNodes, h.searchNodes)
	mcp.AddTool(s, t.openNodes, h.openNodes)
}

func toEntities(es []graph.Entity) []entityJSON {
	out := make([]entityJSON, 0, len(es))
	for _, e := range es {
		obs := e.Observations
		if obs == nil {
			obs = []string{}
		}
		out = append(out, entityJSON{Name: e.Name, EntityType: e.Type, Observations: obs})
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// implicit reports whether e exists only as the end of a relation: the
// graph creates an entity, with no type, observations or aliases, for each
// name a fact mentions, while the reference keeps such a relation with no
// entity behind it. The graph tools treat an implicit entity as the
// reference treats the name: absent from read_graph, search_nodes and
// open_nodes (its relations stay), not found by add_observations, and
// created, with the details given, by create_entities.
//
// One case differs: an entity created with an empty type and no
// observations looks implicit too, and is hidden as if it were.
func implicit(e graph.Entity) bool {
	return e.Type == "" && len(e.Observations) == 0 && len(e.Aliases) == 0
}

// visible returns the entities that are not [implicit].
func visible(es []graph.Entity) []graph.Entity {
	out := es[:0:0]
	for _, e := range es {
		if !implicit(e) {
			out = append(out, e)
		}
	}
	return out
}

// entity returns the entity that name (or an alias) names in the scope's
// graph, in a transaction of its own.
func (h *handlers) entity(ctx context.Context, sc memory.Scope, name string) (graph.Entity, error) {
	var e graph.Entity
	err := h.store.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		e, err = g.Entity(name)
		return err
	})
	return e, err
}

// redactObservations replaces the personal data in n lists of
// observations (the i-th at list(i)) as the store redacts a memory of the
// user (memory.Options.Redactor; nothing without one), numbered for the
// user since the graph is the user's whatever the session. The same text
// gets the same placeholders, so a deletion finds what an addition
// stored. Entity names and relation ends stay: they are the keys a client
// names the entity by.
func (h *handlers) redactObservations(ctx context.Context, sc memory.Scope, n int, list func(i int) *[]string) error {
	sc.Session = ""
	for i := range n {
		obs := list(i)
		if len(*obs) == 0 {
			continue
		}
		red, err := h.store.Redact(ctx, sc, *obs...)
		if err != nil {
			return err
		}
		*obs = red
	}
	return nil
}

// createEntities creates the entities whose names are unknown, as the
// reference does, and leaves an existing entity unchanged: the details of
// a name created again are ignored, not added. (The graph's CreateEntities
// adds them, so the existing ones are left out of the call.) An implicit
// entity gets its type and observations, and is answered as created.
//
// The check and the creation are two transactions: an entity created by
// another client between them gets this call's observations added.
func (h *handlers) createEntities(ctx context.Context, _ *mcp.CallToolRequest, in createEntitiesIn) (*mcp.CallToolResult, createEntitiesOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, createEntitiesOut{}, err
	}
	es := make([]graph.Entity, 0, len(in.Entities))
	wasImplicit := map[string]bool{}
	for _, e := range in.Entities {
		cur, err := h.entity(ctx, sc, e.Name)
		switch {
		case err == nil && !implicit(cur):
			continue // the reference leaves it as it is
		case err == nil:
			wasImplicit[graph.Fold(cur.Name)] = true
		case !errors.Is(err, memory.ErrEntityNotFound) && !errors.Is(err, memory.ErrInvalidName):
			return nil, createEntitiesOut{}, err
		}
		es = append(es, graph.Entity{Name: e.Name, Type: e.EntityType, Observations: e.Observations})
	}
	if err := h.redactObservations(ctx, sc, len(es), func(i int) *[]string { return &es[i].Observations }); err != nil {
		return nil, createEntitiesOut{}, err
	}
	var created []graph.Entity
	err = h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		created, err = g.CreateEntities(es)
		return err
	})
	if err != nil {
		return nil, createEntitiesOut{}, err
	}
	// Answer in the order asked, each entity once, as stored.
	byName := make(map[string]graph.Entity, len(created))
	for _, e := range created {
		byName[graph.Fold(e.Name)] = e
	}
	answer := make([]graph.Entity, 0, len(es))
	for _, e := range es {
		f := graph.Fold(e.Name)
		c, ok := byName[f]
		if !ok && wasImplicit[f] {
			if c, err = h.entity(ctx, sc, e.Name); err != nil {
				return nil, createEntitiesOut{}, err
			}
			ok = true
		}
		if ok {
			answer = append(answer, c)
			delete(byName, f)
			delete(wasImplicit, f)
		}
	}
	out := createEntitiesOut{Entities: toEntities(answer)}
	res, err := jsonResult(out.Entities)
	return res, out, err
}

func (h *handlers) createRelations(ctx context.Context, _ *mcp.CallToolRequest, in relationsIn) (*mcp.CallToolResult, relationsOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, relationsOut{}, err
	}
	var created []graph.Relation
	err = h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		created, err = g.CreateRelations(in.Relations)
		return err
	})
	if err != nil {
		return nil, relationsOut{}, err
	}
	out := relationsOut{Relations: nonNil(created)}
	res, err := jsonResult(out.Relations)
	return res, out, err
}

// entityNotFoundError is add_observations' error for an unknown entity,
// worded as the reference words it.
type entityNotFoundError struct{ name string }

func (e entityNotFoundError) Error() string { return "Entity with name " + e.name + " not found" }
func (e entityNotFoundError) Unwrap() error { return memory.ErrEntityNotFound }

func (h *handlers) addObservations(ctx context.Context, _ *mcp.CallToolRequest, in addObservationsIn) (*mcp.CallToolResult, addObservationsOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, addObservationsOut{}, err
	}
	sets := make([]graph.ObservationSet, len(in.Observations))
	for i, o := range in.Observations {
		sets[i] = graph.ObservationSet{EntityName: o.EntityName, Observations: o.Contents}
		// The end of a relation is no entity to the reference.
		if e, err := h.entity(ctx, sc, o.EntityName); err == nil && implicit(e) {
			return nil, addObservationsOut{}, entityNotFoundError{o.EntityName}
		}
	}
	if err := h.redactObservations(ctx, sc, len(sets), func(i int) *[]string { return &sets[i].Observations }); err != nil {
		return nil, addObservationsOut{}, err
	}
	var added []graph.ObservationSet
	err = h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) (err error) {
		added, err = g.AddObservations(sets)
		return err
	})
	if errors.Is(err, memory.ErrEntityNotFound) {
		// Nothing was written; name the first unknown entity.
		for _, set := range sets {
			if _, err := h.entity(ctx, sc, set.EntityName); errors.Is(err, memory.ErrEntityNotFound) {
				return nil, addObservationsOut{}, entityNotFoundError{set.EntityName}
			}
		}
	}
	if err != nil {
		return nil, addObservationsOut{}, err
	}
	out := addObservationsOut{Results: make([]addedJSON, 0, len(added))}
	for _, a := range added {
		out.Results = append(out.Results, addedJSON{EntityName: a.EntityName, AddedObservations: nonNil(a.Observations)})
	}
	res, err := jsonResult(out.Results)
	return res, out, err
}

// status returns the reference's answer to a delete: the message as text,
// and {success, message} as structured content.
func status(message string) (*mcp.CallToolResult, statusOut, error) {
	return textResult(message), statusOut{Success: true, Message: message}, nil
}

func (h *handlers) deleteEntities(ctx context.Context, _ *mcp.CallToolRequest, in deleteEntitiesIn) (*mcp.CallToolResult, statusOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, statusOut{}, err
	}
	if err := h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteEntities(in.EntityNames) }); err != nil {
		return nil, statusOut{}, err
	}
	return status("Entities deleted successfully")
}

func (h *handlers) deleteObservations(ctx context.Context, _ *mcp.CallToolRequest, in deleteObservationsIn) (*mcp.CallToolResult, statusOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, statusOut{}, err
	}
	if err := h.redactObservations(ctx, sc, len(in.Deletions), func(i int) *[]string { return &in.Deletions[i].Observations }); err != nil {
		return nil, statusOut{}, err
	}
	if err := h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteObservations(in.Deletions) }); err != nil {
		return nil, statusOut{}, err
	}
	return status("Observations deleted successfully")
}

func (h *handlers) deleteRelations(ctx context.Context, _ *mcp.CallToolRequest, in relationsIn) (*mcp.CallToolResult, statusOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, statusOut{}, err
	}
	if err := h.store.UpdateGraph(ctx, sc, func(g *graph.Tx) error { return g.DeleteRelations(in.Relations) }); err != nil {
		return nil, statusOut{}, err
	}
	return status("Relations deleted successfully")
}

func (h *handlers) readGraph(ctx context.Context, _ *mcp.CallToolRequest, in readGraphIn) (*mcp.CallToolResult, readGraphOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, readGraphOut{}, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultReadGraphLimit
	}
	var page graph.GraphPage
	err = h.store.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		page, err = g.ReadGraph(graph.ReadOptions{Cursor: in.Cursor, Limit: limit})
		return err
	})
	if errors.Is(err, memory.ErrInvalidCursor) {
		return nil, readGraphOut{}, fmt.Errorf("invalid cursor %q: pass the nextCursor of the previous page, or no cursor to start", in.Cursor)
	}
	if err != nil {
		return nil, readGraphOut{}, err
	}
	out := readGraphOut{
		Entities:   toEntities(visible(page.Entities)),
		Relations:  nonNil(page.Relations),
		NextCursor: page.Next,
	}
	res, err := jsonResult(out)
	return res, out, err
}

func (h *handlers) searchNodes(ctx context.Context, _ *mcp.CallToolRequest, in searchNodesIn) (*mcp.CallToolResult, graphJSON, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, graphJSON{}, err
	}
	var found graph.Graph
	err = h.store.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		found, err = g.SearchNodes(in.Query, graph.SearchOptions{Limit: MaxSearchResults})
		return err
	})
	if err != nil {
		return nil, graphJSON{}, err
	}
	return h.nodes(ctx, sc, visible(found.Entities))
}

func (h *handlers) openNodes(ctx context.Context, _ *mcp.CallToolRequest, in openNodesIn) (*mcp.CallToolResult, graphJSON, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, graphJSON{}, err
	}
	if len(in.Names) > graph.MaxPageSize {
		return nil, graphJSON{}, fmt.Errorf("open_nodes takes at most %d names, not %d", graph.MaxPageSize, len(in.Names))
	}
	var found graph.Graph
	err = h.store.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
		found, err = g.OpenNodes(in.Names)
		return err
	})
	if err != nil {
		return nil, graphJSON{}, err
	}
	return h.nodes(ctx, sc, visible(found.Entities))
}

// nodes answers search_nodes and open_nodes as the reference does: the
// entities, and the relations that hold now with at least one end among
// them, so that a caller sees an entity's connections to entities outside
// the answer. (The memory package returns only the relations among them.)
func (h *handlers) nodes(ctx context.Context, sc memory.Scope, entities []graph.Entity) (*mcp.CallToolResult, graphJSON, error) {
	out := graphJSON{Entities: toEntities(entities), Relations: []graph.Relation{}}
	seen := map[string]bool{}
	for _, e := range entities {
		var facts []graph.Fact
		err := h.store.ViewGraph(ctx, sc, func(g *graph.Tx) (err error) {
			facts, err = g.Neighbors(graph.NeighborQuery{Entity: e.Name, Limit: graph.MaxPageSize})
			return err
		})
		if errors.Is(err, memory.ErrEntityNotFound) {
			continue // deleted since the search
		} else if err != nil {
			return nil, graphJSON{}, err
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
	res, err := jsonResult(out)
	return res, out, err
}
