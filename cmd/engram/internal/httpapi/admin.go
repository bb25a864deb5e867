package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/memory"
)

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

// flush waits until every message appended before the request has been
// extracted (POST /v1/admin/flush): memory formation runs in the
// background, and a client that appends and then recalls at once (a test,
// a benchmark, a demo) may want what extraction forms from its messages.
// Store-wide, not per tenant: it may wait for other tenants' messages too,
// and tells nothing about them. A client that goes away stops the wait,
// not the extraction. The wait is bounded by Options.FlushTimeout: past
// it the answer is 503 extraction_pending (with Retry-After) naming how
// many messages still wait, and a client calls again.
func (h *Handler) flush(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), h.flushTimeout)
	defer cancel()
	err := h.store.Flush(ctx)
	var fe *memory.FlushError
	if errors.As(err, &fe) && r.Context().Err() == nil {
		return &apiError{status: http.StatusServiceUnavailable, code: "extraction_pending",
			message: fmt.Sprintf("%s still waiting for extraction after %s; call again", plural.Count(fe.Pending, "message"), h.flushTimeout)}
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
