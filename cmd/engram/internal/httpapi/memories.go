package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/memory"
)

// remember stores a memory (or finds its duplicate) and answers it as
// stored: after a merge with a duplicate, with the merged tags and metadata.
func (h *Handler) remember(w http.ResponseWriter, r *http.Request) error {
	var in memoryInput
	if err := decode(r, &in); err != nil {
		return err
	}
	scope := ownerScope(r)
	scope.Agent = in.Agent
	mem, err := in.memory()
	if err != nil {
		return err
	}
	id, err := h.store.Remember(r.Context(), scope, mem)
	if err != nil {
		return err
	}
	m, err := h.store.Memory(r.Context(), scope, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
}

func (h *Handler) listMemories(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.MemoriesOptions{
		Kind:  memory.Kind(q.str("kind")),
		Tag:   q.str("tag"),
		After: q.str("after"),
		Limit: q.int("limit", MaxPageSize),
	}
	if q.err != nil {
		return q.err
	}
	if opts.Kind != "" && !opts.Kind.Valid() {
		return badRequest("invalid_parameter", "kind %s is not fact, preference, episode, summary or observation", quote(string(opts.Kind)))
	}
	ms, err := h.store.Memories(r.Context(), ownerScope(r), opts)
	if err != nil {
		return err
	}
	resp := memoriesResponse{Memories: nonNil(ms)}
	if len(ms) == pageLimit(opts.Limit) {
		resp.Next = ms[len(ms)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) getMemory(w http.ResponseWriter, r *http.Request) error {
	m, err := h.store.Memory(r.Context(), ownerScope(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// updateMemory writes a new version of a memory and answers it; its id is
// new, and its supersedes field names the version it replaced.
func (h *Handler) updateMemory(w http.ResponseWriter, r *http.Request) error {
	var in memoryInput
	if err := decode(r, &in); err != nil {
		return err
	}
	scope := ownerScope(r)
	scope.Agent = in.Agent
	mem, err := in.memory()
	if err != nil {
		return err
	}
	id, err := h.store.UpdateMemory(r.Context(), scope, r.PathValue("id"), mem)
	if err != nil {
		return err
	}
	m, err := h.store.Memory(r.Context(), scope, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (h *Handler) deleteMemory(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.DeleteMemory(r.Context(), ownerScope(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) memoryHistory(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.store.MemoryHistory(r.Context(), ownerScope(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memoriesResponse{Memories: nonNil(ms)})
	return nil
}
