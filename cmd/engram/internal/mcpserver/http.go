package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// The headers [ScopeFromHeaders] reads.
const (
	// HeaderUser names the user whose memory a request reads and writes.
	HeaderUser = "X-Engram-User"
	// HeaderSession names the user's current conversation.
	HeaderSession = "X-Engram-Session"
)

// NewHTTPHandler returns a handler that serves the tools of [NewServer]
// over MCP's streamable HTTP transport, to be mounted at a path such as
// /mcp behind authentication.
//
// scope is called once for every HTTP request and says whose memory the
// request's tool calls read and write; on engram serve it is
// [ScopeFromHeaders] with the tenant of the bearer token. When it fails the
// request is answered 400 Bad Request, or 403 Forbidden for an error that
// does not wrap [memory.ErrInvalidScope], with a JSON-RPC error naming the
// cause.
//
// The handler is stateless (the SDK's StreamableHTTPOptions.Stateless):
// every request is served on its own, with the scope of that request, and
// no MCP session outlives it. So a session id can never carry one tenant's
// scope into another tenant's request, and the server keeps no state per
// client. Responses are application/json; GET and DELETE answer 405, as
// there is nothing to stream or end. The handler is safe for concurrent
// use.
func NewHTTPHandler(store *memory.Store, scope func(*http.Request) (memory.Scope, error)) http.Handler {
	if store == nil || scope == nil {
		panic("mcpserver: NewHTTPHandler needs a store and a scope function")
	}
	return &httpHandler{store: store, scope: scope}
}

type httpHandler struct {
	store *memory.Store
	scope func(*http.Request) (memory.Scope, error)
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sc, err := h.scope(r)
	if err != nil {
		code := http.StatusForbidden
		if errors.Is(err, memory.ErrInvalidScope) {
			code = http.StatusBadRequest
		}
		writeRPCError(w, code, fmt.Sprintf("no scope for this request: %v", err)) // err carries the one "engine: "
		return
	}
	// One server per request, bound to the request's scope. Building it
	// registers fourteen tools whose schemas schemaCache already holds.
	srv := NewServer(h.store, func(context.Context) (memory.Scope, error) { return sc, nil })
	mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
	}).ServeHTTP(w, r)
}

// writeRPCError answers with a JSON-RPC error that has no id: the request
// was refused before its body was read.
func writeRPCError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": -32600, "message": msg}, // invalid request
	})
}

// ScopeFromHeaders returns a scope function for [NewHTTPHandler]: the
// tenant is tenant(r) (on engram serve, the tenant of the request's bearer
// token, never anything the client sends); the user is the X-Engram-User
// header, [DefaultUser] when it is absent; the session is the
// X-Engram-Session header, [DefaultSession] when absent. An empty tenant,
// or a header that is not a valid id (see engine.ValidateScopeID), is an error
// wrapping [memory.ErrInvalidScope].
func ScopeFromHeaders(tenant func(*http.Request) string) func(*http.Request) (memory.Scope, error) {
	return func(r *http.Request) (memory.Scope, error) {
		sc := memory.Scope{Tenant: tenant(r), User: DefaultUser, Session: DefaultSession}
		if _, ok := r.Header[http.CanonicalHeaderKey(HeaderUser)]; ok {
			sc.User = r.Header.Get(HeaderUser)
		}
		if _, ok := r.Header[http.CanonicalHeaderKey(HeaderSession)]; ok {
			sc.Session = r.Header.Get(HeaderSession)
		}
		if err := sc.Validate(engine.LevelSession); err != nil {
			return memory.Scope{}, fmt.Errorf("%w (tenant from the token, user from %s, session from %s)", err, HeaderUser, HeaderSession)
		}
		return sc, nil
	}
}
