package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/engramdb/engram/memory"
)

// partitionOf returns the function that finds the partition of a route's
// requests, for the router (the tenant's shared partition for the routes
// under /v1/shared/); nil for the routes this node serves whatever
// their partition: /healthz, /metrics, /openapi.json, and the admin
// routes, which act on this node's store (compact) and its own
// extraction queue (flush), or read the whole store (backup, export,
// stats): with PostgreSQL behind several nodes that store is the shared
// database, so any node's backup is of all of it (one snapshot of the
// table, as engram backup --postgres takes) and its export and stats are
// of every partition, whoever holds its lease.
func (h *Handler) partitionOf(rt route) func(*http.Request) ([]byte, bool) {
	switch {
	case strings.Contains(rt.path, "{user}"):
		return userPartition
	case rt.shared:
		return sharedPartition
	case rt.path == "/v1/recall":
		return h.recallPartition
	case rt.path == "/mcp" && h.mcpScope != nil:
		return func(r *http.Request) ([]byte, bool) {
			sc, err := h.mcpScope(r)
			if err != nil {
				return nil, false // the MCP handler answers the error
			}
			return memory.Partition(memory.Scope{Tenant: sc.Tenant, User: sc.User}), true
		}
	}
	return nil
}

// userPartition is the partition of the token's tenant and the {user}
// path segment.
func userPartition(r *http.Request) ([]byte, bool) {
	sc := memory.Scope{Tenant: Tenant(r.Context()), User: r.PathValue("user")}
	if sc.User == "" || sc.Validate(sc.Level()) != nil {
		return nil, false
	}
	return memory.Partition(sc), true
}

// recallPartition is the partition of the user a recall's body names. It
// reads the body (bounded by the body limit already) and puts a copy back
// for whoever serves the request.
func (h *Handler) recallPartition(r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		// Served here: reading the copy fails the same way (too large).
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return nil, false
	}
	var req struct {
		User string `json:"user"`
	}
	if json.Unmarshal(body, &req) != nil || req.User == "" {
		return nil, false
	}
	sc := memory.Scope{Tenant: Tenant(r.Context()), User: req.User}
	if sc.Validate(sc.Level()) != nil {
		return nil, false
	}
	return memory.Partition(sc), true
}

// errReader returns its error on every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
