package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/cmd/engram/internal/kgraph"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Bounds of the graph tools, the bounds of package kgraph, which both
// the tools and the HTTP graph routes answer from.
const (
	// DefaultReadGraphLimit is how many entities and relations, together,
	// read_graph returns when its limit is left out: a graph that small
	// comes back whole, as the reference server returns every graph; a
	// larger one comes back in pages, each with the nextCursor of the next.
	DefaultReadGraphLimit = kgraph.DefaultReadLimit
	// MaxReadGraphLimit is the largest limit read_graph accepts.
	MaxReadGraphLimit = kgraph.MaxReadLimit
	// MaxSearchResults bounds the entities search_nodes returns. The
	// reference returns every match; Engram bounds the answer as it
	// bounds read_graph's default page.
	MaxSearchResults = kgraph.DefaultSearchLimit
	// MaxRelations bounds the relations search_nodes and open_nodes
	// return.
	MaxRelations = kgraph.MaxRelations
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

// The handlers below decode the reference's arguments, call package
// kgraph, which the HTTP graph routes call too (so that both answer the
// same graph; TestGraphParityMCPHTTP in package httpapi compares them),
// and encode the reference's answer.

func (h *handlers) createEntities(ctx context.Context, _ *mcp.CallToolRequest, in createEntitiesIn) (*mcp.CallToolResult, createEntitiesOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, createEntitiesOut{}, err
	}
	es := make([]graph.Entity, len(in.Entities))
	for i, e := range in.Entities {
		es[i] = graph.Entity{Name: e.Name, Type: e.EntityType, Observations: e.Observations}
	}
	created, err := kgraph.CreateEntities(ctx, h.store, sc, es)
	if err != nil {
		return nil, createEntitiesOut{}, err
	}
	out := createEntitiesOut{Entities: toEntities(created)}
	res, err := jsonResult(out.Entities)
	return res, out, err
}

func (h *handlers) createRelations(ctx context.Context, _ *mcp.CallToolRequest, in relationsIn) (*mcp.CallToolResult, relationsOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, relationsOut{}, err
	}
	created, err := kgraph.CreateRelations(ctx, h.store, sc, in.Relations)
	if err != nil {
		return nil, relationsOut{}, err
	}
	out := relationsOut{Relations: created}
	res, err := jsonResult(out.Relations)
	return res, out, err
}

func (h *handlers) addObservations(ctx context.Context, _ *mcp.CallToolRequest, in addObservationsIn) (*mcp.CallToolResult, addObservationsOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, addObservationsOut{}, err
	}
	sets := make([]graph.ObservationSet, len(in.Observations))
	for i, o := range in.Observations {
		sets[i] = graph.ObservationSet{EntityName: o.EntityName, Observations: o.Contents}
	}
	added, err := kgraph.AddObservations(ctx, h.store, sc, sets)
	if err != nil {
		return nil, addObservationsOut{}, err
	}
	out := addObservationsOut{Results: make([]addedJSON, 0, len(added))}
	for _, a := range added {
		out.Results = append(out.Results, addedJSON{EntityName: a.EntityName, AddedObservations: a.Observations})
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
	if err := kgraph.DeleteEntities(ctx, h.store, sc, in.EntityNames); err != nil {
		return nil, statusOut{}, err
	}
	return status("Entities deleted successfully")
}

func (h *handlers) deleteObservations(ctx context.Context, _ *mcp.CallToolRequest, in deleteObservationsIn) (*mcp.CallToolResult, statusOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, statusOut{}, err
	}
	if err := kgraph.DeleteObservations(ctx, h.store, sc, in.Deletions); err != nil {
		return nil, statusOut{}, err
	}
	return status("Observations deleted successfully")
}

func (h *handlers) deleteRelations(ctx context.Context, _ *mcp.CallToolRequest, in relationsIn) (*mcp.CallToolResult, statusOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, statusOut{}, err
	}
	if err := kgraph.DeleteRelations(ctx, h.store, sc, in.Relations); err != nil {
		return nil, statusOut{}, err
	}
	return status("Relations deleted successfully")
}

func (h *handlers) readGraph(ctx context.Context, _ *mcp.CallToolRequest, in readGraphIn) (*mcp.CallToolResult, readGraphOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, readGraphOut{}, err
	}
	page, err := kgraph.Read(ctx, h.store, sc, graph.ReadOptions{Cursor: in.Cursor, Limit: in.Limit})
	if errors.Is(err, memory.ErrInvalidCursor) {
		return nil, readGraphOut{}, fmt.Errorf("invalid cursor %q: pass the nextCursor of the previous page, or no cursor to start", in.Cursor)
	}
	if err != nil {
		return nil, readGraphOut{}, err
	}
	out := readGraphOut{Entities: toEntities(page.Entities), Relations: page.Relations, NextCursor: page.Next}
	res, err := jsonResult(out)
	return res, out, err
}

func (h *handlers) searchNodes(ctx context.Context, _ *mcp.CallToolRequest, in searchNodesIn) (*mcp.CallToolResult, graphJSON, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, graphJSON{}, err
	}
	found, err := kgraph.Search(ctx, h.store, sc, in.Query, 0)
	if err != nil {
		return nil, graphJSON{}, err
	}
	return nodesResult(found)
}

func (h *handlers) openNodes(ctx context.Context, _ *mcp.CallToolRequest, in openNodesIn) (*mcp.CallToolResult, graphJSON, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, graphJSON{}, err
	}
	if len(in.Names) > graph.MaxPageSize {
		return nil, graphJSON{}, fmt.Errorf("open_nodes takes at most %d names, not %d", graph.MaxPageSize, len(in.Names))
	}
	found, err := kgraph.Open(ctx, h.store, sc, in.Names)
	if err != nil {
		return nil, graphJSON{}, err
	}
	return nodesResult(found)
}

// nodesResult answers search_nodes and open_nodes: the entities and the
// relations with at least one end among them, as the reference does.
func nodesResult(found graph.Graph) (*mcp.CallToolResult, graphJSON, error) {
	out := graphJSON{Entities: toEntities(found.Entities), Relations: found.Relations}
	res, err := jsonResult(out)
	return res, out, err
}
