package httpapi

import "net/http"

// compact forces the store's compaction (POST /v1/admin/compact), so that
// the bytes of erased and expired data leave the files now rather than at
// the background compaction that follows every erasure. Any valid token
// may ask: it changes no data, and the work it costs is bounded by running
// one at a time.
func (h *Handler) compact(w http.ResponseWriter, r *http.Request) error {
	// One at a time: a second request waits for the first, then runs its
	// own, which covers what was erased in between.
	h.compactMu.Lock()
	defer h.compactMu.Unlock()
	if err := h.store.Compact(r.Context()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
