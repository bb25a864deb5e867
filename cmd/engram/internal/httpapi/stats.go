package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/cmd/engram/internal/inspection"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// stats answers what engram inspect prints, as its --json does (GET
// /v1/admin/stats[?tenant=T[&user=U]]): the store's tenants, a tenant's
// users and shared data, or a user's sessions, with the extraction queue.
// Admin tokens only: it names every tenant. The disk sizes are of the
// running store's files.
func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	scope := memory.Scope{Tenant: q.Get("tenant"), User: q.Get("user")}
	if scope.User != "" && scope.Tenant == "" {
		return badRequest("invalid_parameter", "user needs tenant")
	}
	if scope.Tenant != "" {
		if err := scope.Validate(scope.Level()); err != nil {
			return err
		}
	}
	o := inspection.Options{Scope: scope, Where: h.where}
	if dir := h.store.Stats().Dir; dir != "" {
		o.Disk = kv.DiskUsage(dir)
	}
	rep, err := inspection.Build(r.Context(), h.store, o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
