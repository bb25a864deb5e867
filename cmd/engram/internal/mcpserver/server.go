package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// Defaults of a scope: the ids engram mcp uses when its flags are not
// given, and that [ScopeFromHeaders] uses when a request leaves a header
// out.
const (
	DefaultTenant  = "default"
	DefaultUser    = "default"
	DefaultSession = "default"
)

// instructions tell the client what the server holds; clients may show
// them to the model.
const instructions = `Engram is a local memory for this agent.
The knowledge-graph tools (create_entities, create_relations, add_observations,
delete_entities, delete_observations, delete_relations, read_graph,
search_nodes, open_nodes) work as in the official MCP memory server; entity
names are matched without regard to case or runs of white space.
remember stores a long-term memory (a fact, preference, episode, summary or
observation), with shared: true in the tenant's memory that every user and
agent shares; recall returns the context for a question: the conversation
window, its summary, and the memories, earlier messages and graph facts that
match, with a trace of why each was kept. append_message and get_window keep
the current conversation; forget erases the session, or the whole user.`

// schemaCache keeps the resolved schemas of the tools across servers: the
// HTTP handler builds a server per request, and without the cache every
// request would resolve every schema again.
var schemaCache = mcp.NewSchemaCache()

// NewServer returns an MCP server whose tools read and write store: the
// official memory server's nine knowledge-graph tools and Engram's own
// (see the package documentation for the list).
//
// scope is called on every tool call, with the call's context, to say whose
// memory it reads and writes; an error fails the call as a tool error.
// engram mcp passes a function that returns the scope of its flags; the
// HTTP handler one that returns the scope of the request (see
// [NewHTTPHandler]). The graph tools need Tenant, and work on the user's
// graph, or on the tenant's shared graph for a scope with no User (engram
// mcp --shared); remember likewise. recall needs a User, and the
// conversation tools (append_message, get_window, recall's window, forget
// without erase_user) also Session. The server does not close store.
//
// Serve it with Server.Run over a transport, such as
// &mcp.StdioTransport{}. The server is safe for concurrent use, as is the
// store.
func NewServer(store *memory.Store, scope func(context.Context) (memory.Scope, error)) *mcp.Server {
	if store == nil || scope == nil {
		panic("mcpserver: NewServer needs a store and a scope function")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "engram", Title: "Engram", Version: version()}, &mcp.ServerOptions{
		Instructions: instructions,
		// Tools only, and a fixed list: no logging capability, no
		// list-changed notifications.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SchemaCache:  schemaCache,
	})
	s.AddReceivingMiddleware(boundErrors, nullsAsAbsent, strictListing)
	h := &handlers{store: store, scope: scope}
	h.addGraphTools(s)
	h.addEngramTools(s)
	return s
}

// handlers holds what every tool handler needs.
type handlers struct {
	store *memory.Store
	scope func(context.Context) (memory.Scope, error)
}

// scopeOf returns the scope of a call.
func (h *handlers) scopeOf(ctx context.Context) (memory.Scope, error) {
	sc, err := h.scope(ctx)
	if err != nil {
		return memory.Scope{}, fmt.Errorf("no scope for this call: %w", err)
	}
	return sc, nil
}

// textResult returns a result whose only content is text.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// jsonResult returns a result whose text content is v as indented JSON,
// byte for byte what the reference server's JSON.stringify(v, null, 2)
// writes (no HTML escaping, two-space indent).
func jsonResult(v any) (*mcp.CallToolResult, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return textResult(strings.TrimSuffix(buf.String(), "\n")), nil
}

// Version is the version the servers NewServer makes report in their
// serverInfo. The engram command sets it to its own, stamped at link time
// by release builds; empty means the module version the Go toolchain
// recorded, or "devel".
var Version string

// version is Version, or the module version of the binary, or "devel".
func version() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
