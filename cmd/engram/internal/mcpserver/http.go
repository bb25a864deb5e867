package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// HeaderShared, set to true, makes the request work on the tenant's
	// shared memory (a scope with no user) instead of a user's: the graph
	// tools on the shared graph, remember on the shared memories. It
	// cannot be sent with HeaderUser or HeaderSession.
	HeaderShared = "X-Engram-Shared"
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
// there is nothing to stream or end. A POST is checked as a stdio line is
// (see [NewStdioTransport]): a JSON-RPC batch is taken only with an
// MCP-Protocol-Version header of a version that has batches (2024-11-05,
// 2025-03-26), and an id the SDK would not echo exactly is refused; both
// answer 400 with a JSON-RPC error. The handler is safe for concurrent
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
		writeRPCError(w, code, jsonrpc.CodeInvalidRequest, fmt.Sprintf("no scope for this request: %v", err)) // err carries the one "engine: "
		return
	}
	if r.Method == http.MethodPost && isJSON(r.Header.Get("Content-Type")) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the body is larger than %d bytes", mbe.Limit))
				return
			}
			writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "the body could not be read")
			return
		}
		// The rules of the stdio transport: batches only under a
		// protocol version that has them, ids echoed exactly or
		// refused.
		if code, msg := checkPayload(body, batchVersions[r.Header.Get("Mcp-Protocol-Version")]); code != 0 {
			writeRPCError(w, http.StatusBadRequest, code, msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	// One server per request, bound to the request's scope. Building it
	// registers fourteen tools whose schemas schemaCache already holds.
	srv := NewServer(h.store, func(context.Context) (memory.Scope, error) { return sc, nil })
	mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
	}).ServeHTTP(w, r)
}

// writeRPCError answers status with a JSON-RPC error of code that has no
// id: the request was refused before the SDK read it.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
}

// isJSON reports whether a Content-Type is application/json, as the SDK
// requires of a POST.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// ScopeFromHeaders returns a scope function for [NewHTTPHandler]: the
// tenant is tenant(r) (on engram serve, the tenant of the request's bearer
// token, never anything the client sends); the user is the X-Engram-User
// header, [DefaultUser] when it is absent; the session is the
// X-Engram-Session header, [DefaultSession] when absent. With
// X-Engram-Shared: true the scope is the tenant's alone, its shared
// memory and graph (see [HeaderShared]). An empty tenant, a header that is
// not a valid id (see engine.ValidateScopeID), an X-Engram-Shared that is
// not true or false, or one that is true next to a user or session header,
// is an error wrapping [memory.ErrInvalidScope].
func ScopeFromHeaders(tenant func(*http.Request) string) func(*http.Request) (memory.Scope, error) {
	return func(r *http.Request) (memory.Scope, error) {
		if shared, err := sharedHeader(r); err != nil || shared {
			sc := memory.Scope{Tenant: tenant(r)}
			if err == nil {
				err = sc.Validate(engine.LevelTenant)
			}
			if err != nil {
				return memory.Scope{}, fmt.Errorf("%w (tenant from the token, %s: true)", err, HeaderShared)
			}
			return sc, nil
		}
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

// sharedHeader reads X-Engram-Shared: absent or false is false. Any other
// value than true or false, and true next to a user or session header, is
// an error wrapping [memory.ErrInvalidScope].
func sharedHeader(r *http.Request) (bool, error) {
	vs, ok := r.Header[http.CanonicalHeaderKey(HeaderShared)]
	if !ok {
		return false, nil
	}
	v := strings.TrimSpace(strings.Join(vs, ","))
	shared, err := strconv.ParseBool(v)
	switch {
	case err != nil || len(vs) > 1:
		return false, fmt.Errorf("%w: %s is %q; send true or false", memory.ErrInvalidScope, HeaderShared, v)
	case !shared:
		return false, nil
	}
	for _, h := range []string{HeaderUser, HeaderSession} {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			return false, fmt.Errorf("%w: %s: true names the tenant's shared memory, which has no user or session; leave %s out", memory.ErrInvalidScope, HeaderShared, h)
		}
	}
	return true, nil
}
