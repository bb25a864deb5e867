package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/cmd/engram/internal/kgraph"
	"github.com/engramdb/engram/graph"
)

// maxTraverseLimit bounds the facts one traversal answers: a response of
// ten thousand steps is already several megabytes.
const maxTraverseLimit = 10000

func (h *Handler) relate(w http.ResponseWriter, r *http.Request) error {
	var in factInput
	if err := decode(r, &in); err != nil {
		return err
	}
	c := timeCheck{code: "invalid_fact"}
	fact := in.fact(&c, "")
	if c.err != nil {
		return c.err
	}
	f, err := h.store.Relate(r.Context(), ownerScope(r), fact)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, f)
	return nil
}

func (h *Handler) listFacts(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	fq := graph.FactQuery{
		Subject:   q.str("subject"),
		Predicate: q.str("predicate"),
		Object:    q.str("object"),
		AsOf:      q.time("as_of"),
		History:   q.bool("history"),
		After:     q.str("after"),
		Limit:     q.int("limit", MaxPageSize),
	}
	if q.err != nil {
		return q.err
	}
	var facts []graph.Fact
	err := h.store.ViewGraph(r.Context(), ownerScope(r), func(g *graph.Tx) (err error) {
		facts, err = g.Facts(fq)
		return err
	})
	if err != nil {
		return err
	}
	resp := factsResponse{Facts: nonNil(facts)}
	if len(facts) == pageLimit(fq.Limit) {
		resp.Next = facts[len(facts)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) deleteFact(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.UpdateGraph(r.Context(), ownerScope(r), func(g *graph.Tx) error { return g.Delete(r.PathValue("id")) }); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) traverse(w http.ResponseWriter, r *http.Request) error {
	var req traverseRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var dir graph.Direction
	switch req.Direction {
	case "", "both":
		dir = graph.Both
	case "out":
		dir = graph.Out
	case "in":
		dir = graph.In
	default:
		return badRequest("invalid_query", "direction %s is not both, out or in", quote(req.Direction))
	}
	if req.Limit > maxTraverseLimit {
		return badRequest("invalid_query", "limit %d is above the limit of %d", req.Limit, maxTraverseLimit)
	}
	c := timeCheck{code: "invalid_query"}
	q := graph.TraverseQuery{
		From: req.From, MaxHops: req.MaxHops, Direction: dir, Predicates: req.Predicates,
		AsOf: c.get("as_of", req.AsOf), MaxFanout: req.MaxFanout, Limit: req.Limit,
	}
	if c.err != nil {
		return c.err
	}
	var t graph.Traversal
	err := h.store.ViewGraph(r.Context(), ownerScope(r), func(g *graph.Tx) (err error) {
		t, err = g.Traverse(q)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, traversalResponse{Steps: nonNil(t.Steps), Truncated: t.Truncated})
	return nil
}

// The graph routes below decode the request, call package kgraph, which
// the MCP graph tools call too (so that both answer the same graph;
// TestGraphParityMCPHTTP compares them), and encode the answer.

// createEntities answers the entities that were new (create_entities);
// an entity that exists is left as it is.
func (h *Handler) createEntities(w http.ResponseWriter, r *http.Request) error {
	var req entitiesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	es := make([]graph.Entity, len(req.Entities))
	for i, e := range req.Entities {
		es[i] = graph.Entity{Name: e.Name, Type: e.Type, Observations: e.Observations, Aliases: e.Aliases}
	}
	created, err := kgraph.CreateEntities(r.Context(), h.store, ownerScope(r), es)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, entitiesResponse{Entities: entities(created)})
	return nil
}

func (h *Handler) deleteEntities(w http.ResponseWriter, r *http.Request) error {
	var req deleteEntitiesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := kgraph.DeleteEntities(r.Context(), h.store, ownerScope(r), req.EntityNames); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createRelations answers the relations that were new (create_relations).
func (h *Handler) createRelations(w http.ResponseWriter, r *http.Request) error {
	var req relationsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	created, err := kgraph.CreateRelations(r.Context(), h.store, ownerScope(r), req.Relations)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, relationsResponse{Relations: created})
	return nil
}

func (h *Handler) deleteRelations(w http.ResponseWriter, r *http.Request) error {
	var req relationsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := kgraph.DeleteRelations(r.Context(), h.store, ownerScope(r), req.Relations); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// addObservations answers the observations that were new
// (add_observations), in MCP's shape and, deprecated, the shape of before.
func (h *Handler) addObservations(w http.ResponseWriter, r *http.Request) error {
	var req addObservationsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	sets := make([]graph.ObservationSet, len(req.Observations))
	for i, o := range req.Observations {
		if o.Contents != nil && o.Observations != nil {
			return badRequest("invalid_json", "observations[%d] has both contents and observations (deprecated); send contents", i)
		}
		sets[i] = graph.ObservationSet{EntityName: o.EntityName, Observations: o.Contents}
		if o.Contents == nil {
			sets[i].Observations = o.Observations
		}
	}
	added, err := kgraph.AddObservations(r.Context(), h.store, ownerScope(r), sets)
	if err != nil {
		return err
	}
	resp := observationsResponse{Results: make([]addedObservations, len(added)), Observations: added}
	for i := range added {
		resp.Results[i] = addedObservations{EntityName: added[i].EntityName, AddedObservations: added[i].Observations}
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

// deleteObservations removes observations (delete_observations).
func (h *Handler) deleteObservations(w http.ResponseWriter, r *http.Request) error {
	var req deleteObservationsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Deletions != nil && req.Observations != nil {
		return badRequest("invalid_json", "the body has both deletions and observations (deprecated); send deletions")
	}
	sets := req.Deletions
	if sets == nil {
		sets = req.Observations
	}
	if err := kgraph.DeleteObservations(r.Context(), h.store, ownerScope(r), sets); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readGraph answers one page of the graph (read_graph); follow next.
func (h *Handler) readGraph(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := graph.ReadOptions{Cursor: q.str("cursor"), Limit: q.int("limit", MaxPageSize)}
	if q.err != nil {
		return q.err
	}
	page, err := kgraph.Read(r.Context(), h.store, ownerScope(r), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(page.Graph, page.Next))
	return nil
}

// searchNodes answers the entities matching q and the relations with at
// least one end among them (search_nodes).
func (h *Handler) searchNodes(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	text := q.str("q")
	limit := q.int("limit", MaxPageSize)
	if q.err != nil {
		return q.err
	}
	if text == "" {
		return badRequest("invalid_parameter",
			"query parameter q is required: the text to find in entity names, types, aliases and observations (search_nodes' query), as in /graph/search?q=tea")
	}
	found, err := kgraph.Search(r.Context(), h.store, ownerScope(r), text, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(found, ""))
	return nil
}

// openNodes answers the named entities and the relations with at least
// one end among them (open_nodes).
func (h *Handler) openNodes(w http.ResponseWriter, r *http.Request) error {
	var req openNodesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Names) > graph.MaxPageSize {
		return badRequest("invalid_query", "names has %d names, above the limit of %d", len(req.Names), graph.MaxPageSize)
	}
	found, err := kgraph.Open(r.Context(), h.store, ownerScope(r), req.Names)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(found, ""))
	return nil
}
