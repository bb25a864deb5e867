package httpapi

import (
	"net/http"
	"slices"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

// recall answers the context for the next model call: the chat messages
// ready to send, the recalled items, the session summary and the trace.
func (h *Handler) recall(w http.ResponseWriter, r *http.Request) error {
	var req recallRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	c := timeCheck{code: "invalid_options"}
	q := memory.Query{
		Scope:       memory.Scope{Tenant: Tenant(r.Context()), User: req.User, Session: req.Session},
		Text:        req.Text,
		MaxMessages: req.MaxMessages,
		MaxTokens:   req.MaxTokens,
		TopK:        req.TopK,
		Hops:        req.Hops,
		Since:       c.get("since", req.Since),
		Until:       c.get("until", req.Until),
		MMR:         req.MMR,
		Now:         c.get("now", req.Now),
		Trace:       req.Trace,
	}
	if c.err != nil {
		return c.err
	}
	if req.User == "" {
		// Without a user the store would recall the tenant's shared
		// memory; this API always names the user.
		return badRequest("invalid_scope", "user is required")
	}
	if req.HalfLife != "" {
		d, err := time.ParseDuration(req.HalfLife)
		if err != nil || d < 0 {
			return badRequest("invalid_options", "half_life %s is not a non-negative duration such as 720h or 90m", quote(req.HalfLife))
		}
		q.HalfLife = d
	}
	for _, s := range req.Sources {
		src := memory.Source(s)
		if !slices.Contains(memory.Sources(), src) {
			return badRequest("invalid_options", "source %s is not memories, shared, episodes or graph", quote(s))
		}
		q.Sources = append(q.Sources, src)
	}
	if req.Shared {
		q.Sources = wire.WithShared(q.Sources)
	}
	switch req.Retrieval {
	case "", "hybrid":
		q.Retrieval = memory.RetrievalHybrid
	case "vector":
		q.Retrieval = memory.RetrievalVector
	case "lexical":
		q.Retrieval = memory.RetrievalLexical
	default:
		return badRequest("invalid_options", "retrieval %s is not hybrid, vector or lexical", quote(req.Retrieval))
	}
	start := time.Now()
	rec, err := h.store.Recall(r.Context(), q)
	h.metrics.recall.Observe(time.Since(start).Seconds())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newRecallResponse(rec))
	return nil
}
