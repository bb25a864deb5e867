package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/memory"
)

// maxTraverseLimit bounds the facts one traversal answers: a response of
// ten thousand steps is already several megabytes.
const maxTraverseLimit = 10000

func (h *Handler) relate(w http.ResponseWriter, r *http.Request) error {
	var in factInput
	if err := decode(r, &in); err != nil {
		return err
	}
	f, err := h.store.Relate(r.Context(), userScope(r), in.fact())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, f)
	return nil
}

func (h *Handler) listFacts(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	fq := memory.FactQuery{
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
	facts, err := h.store.Facts(r.Context(), userScope(r), fq)
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
	if err := h.store.DeleteFact(r.Context(), userScope(r), r.PathValue("id")); err != nil {
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
	var dir memory.Direction
	switch req.Direction {
	case "", "both":
		dir = memory.DirectionBoth
	case "out":
		dir = memory.DirectionOut
	case "in":
		dir = memory.DirectionIn
	default:
		return badRequest("invalid_query", "direction %q is not both, out or in", req.Direction)
	}
	if req.Limit > maxTraverseLimit {
		return badRequest("invalid_query", "limit %d is above the limit of %d", req.Limit, maxTraverseLimit)
	}
	t, err := h.store.Traverse(r.Context(), userScope(r), memory.TraverseQuery{
		From: req.From, MaxHops: req.MaxHops, Direction: dir, Predicates: req.Predicates,
		AsOf: req.AsOf, MaxFanout: req.MaxFanout, Limit: req.Limit,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, traversalResponse{Steps: nonNil(t.Steps), Truncated: t.Truncated})
	return nil
}

// createEntities answers the entities that were new (create_entities).
func (h *Handler) createEntities(w http.ResponseWriter, r *http.Request) error {
	var req entitiesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	es := make([]memory.Entity, len(req.Entities))
	for i, e := range req.Entities {
		es[i] = memory.Entity{Name: e.Name, Type: e.Type, Observations: e.Observations, Aliases: e.Aliases}
	}
	created, err := h.store.CreateEntities(r.Context(), userScope(r), es)
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
	if err := h.store.DeleteEntities(r.Context(), userScope(r), req.EntityNames); err != nil {
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
	created, err := h.store.CreateRelations(r.Context(), userScope(r), req.Relations)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, relationsResponse{Relations: nonNil(created)})
	return nil
}

func (h *Handler) deleteRelations(w http.ResponseWriter, r *http.Request) error {
	var req relationsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := h.store.DeleteRelations(r.Context(), userScope(r), req.Relations); err != nil {
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
	sets := make([]memory.ObservationSet, len(req.Observations))
	for i, o := range req.Observations {
		if o.Contents != nil && o.Observations != nil {
			return badRequest("invalid_json", "observations[%d] has both contents and observations (deprecated); send contents", i)
		}
		sets[i] = memory.ObservationSet{EntityName: o.EntityName, Observations: o.Contents}
		if o.Contents == nil {
			sets[i].Observations = o.Observations
		}
	}
	added, err := h.store.AddObservations(r.Context(), userScope(r), sets)
	if err != nil {
		return err
	}
	resp := observationsResponse{Results: make([]addedObservations, len(added)), Observations: nonNil(added)}
	for i := range added {
		added[i].Observations = nonNil(added[i].Observations)
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
	if err := h.store.DeleteObservations(r.Context(), userScope(r), sets); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readGraph answers one page of the graph (read_graph); follow next.
func (h *Handler) readGraph(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.ReadGraphOptions{Cursor: q.str("cursor"), Limit: q.int("limit", MaxPageSize)}
	if q.err != nil {
		return q.err
	}
	page, err := h.store.ReadGraph(r.Context(), userScope(r), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(page.Graph, page.Next))
	return nil
}

// searchNodes answers the entities matching q and the relations among
// them (search_nodes).
func (h *Handler) searchNodes(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	text := q.str("q")
	opts := memory.SearchNodesOptions{Limit: q.int("limit", MaxPageSize)}
	if q.err != nil {
		return q.err
	}
	if text == "" {
		return badRequest("invalid_parameter", "query parameter q is required")
	}
	g, err := h.store.SearchNodes(r.Context(), userScope(r), text, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(g, ""))
	return nil
}

// openNodes answers the named entities and the relations among them
// (open_nodes).
func (h *Handler) openNodes(w http.ResponseWriter, r *http.Request) error {
	var req openNodesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	g, err := h.store.OpenNodes(r.Context(), userScope(r), req.Names)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newGraphResponse(g, ""))
	return nil
}
