package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
	"github.com/engramdb/engram/memory"
)

// withHeaders adds headers to every request.
type withHeaders struct {
	h    http.Header
	next http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.h {
		r.Header[k] = v
	}
	return w.next.RoundTrip(r)
}

// httpMCPClient connects an MCP client to the test server's /mcp with the
// token and the headers given (pairs of name and value).
func httpMCPClient(t *testing.T, s *testServer, token string, headers ...string) *mcp.ClientSession {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + token}}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: withHeaders{h: h, next: s.client.Transport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "shared", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolText calls a tool and returns its result's text and whether it is
// a tool error.
func toolText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return mustJSON(res.Content), res.IsError
}

// TestSharedParityMCPHTTP: the shared graph MCP reaches with
// X-Engram-Shared: true is the one under /v1/shared/. The graph parity
// run writes acme's shared graph through /mcp and globex's through
// /v1/shared/ and reads each through both, comparing every answer: the
// same data, and each tenant's its own (a second write to one graph
// would answer nothing created).
func TestSharedParityMCPHTTP(t *testing.T) {
	s := mcpServer(t)
	runGraphParity(t, s, [2]paritySide{
		{mcp: httpMCPClient(t, s, tokenAcme, mcpserver.HeaderShared, "true"), path: "/v1/shared", token: tokenAcme},
		{mcp: httpMCPClient(t, s, tokenGlobex, mcpserver.HeaderShared, "true"), path: "/v1/shared", token: tokenGlobex},
	})
}

// TestSharedMemoriesMCPHTTP: remember and recall with shared: true reach
// the memories under /v1/shared/memories, and only those; a shared
// connection's remember stores there too and its user tools refuse;
// another tenant sees none of it through MCP, whatever tenant header it
// sends; and forgetting the user, through either, leaves it.
func TestSharedMemoriesMCPHTTP(t *testing.T) {
	s := mcpServer(t)
	alice := httpMCPClient(t, s, tokenAcme, mcpserver.HeaderUser, "alice", mcpserver.HeaderSession, "s1")
	shared := httpMCPClient(t, s, tokenAcme, mcpserver.HeaderShared, "true")
	if text, isErr := toolText(t, alice, "remember", map[string]any{"text": "The office wifi password is " + sharedSecret, "shared": true}); isErr {
		t.Fatal(text)
	}
	if text, isErr := toolText(t, shared, "remember", map[string]any{"text": "The coffee machine is on floor " + sharedSecret}); isErr {
		t.Fatal(text)
	}
	s.must(201, "POST", "/v1/shared/memories", tokenAcme, `{"text":"The printer code is `+sharedSecret+`"}`)
	if text, isErr := toolText(t, alice, "remember", map[string]any{"text": "Alice's locker code is 5512"}); isErr {
		t.Fatal(text)
	}

	var ms memoriesResponse
	s.must(200, "GET", "/v1/shared/memories", tokenAcme, nil).decode(t, &ms)
	if got := mustJSON(ms); len(ms.Memories) != 3 || strings.Contains(got, "5512") {
		t.Fatalf("shared memories = %s", got)
	}
	s.must(200, "GET", "/v1/users/alice/memories", tokenAcme, nil).decode(t, &ms)
	if got := mustJSON(ms); len(ms.Memories) != 1 || strings.Contains(got, sharedSecret) {
		t.Fatalf("alice's memories = %s", got)
	}

	recall := func(cs *mcp.ClientSession, args map[string]any) string {
		t.Helper()
		args["text"] = "wifi password printer code coffee machine"
		text, isErr := toolText(t, cs, "recall", args)
		if isErr {
			t.Fatalf("recall %v: %s", args, text)
		}
		return text
	}
	if got := recall(alice, map[string]any{}); strings.Contains(got, sharedSecret) {
		t.Errorf("a default recall draws on shared memories: %s", got)
	}
	for _, args := range []map[string]any{{"shared": true}, {"sources": []string{"shared"}}, {"sources": []string{"memories"}, "shared": true}} {
		if got := recall(alice, args); strings.Count(got, sharedSecret) < 3 {
			t.Errorf("recall %v misses shared memories: %s", args, got)
		}
	}
	for tool, args := range map[string]map[string]any{
		"recall":         {"text": "x"},
		"append_message": {"role": "user", "content": "x"},
		"get_window":     {},
		"forget":         {"erase_user": true},
	} {
		if text, isErr := toolText(t, shared, tool, args); !isErr || !strings.Contains(text, "has no user") {
			t.Errorf("%s on the shared connection = %s, %v", tool, text, isErr)
		}
	}

	// Globex, through MCP, with a tenant header naming acme: nothing of
	// acme's.
	globexAlice := httpMCPClient(t, s, tokenGlobex, mcpserver.HeaderUser, "alice", "X-Engram-Tenant", "acme")
	globexShared := httpMCPClient(t, s, tokenGlobex, mcpserver.HeaderShared, "true", "X-Engram-Tenant", "acme")
	if got := recall(globexAlice, map[string]any{"shared": true}); strings.Contains(got, sharedSecret) {
		t.Errorf("globex recalls acme's shared memories: %s", got)
	}
	if text, _ := toolText(t, globexShared, "remember", map[string]any{"text": "globex shared"}); strings.Contains(text, sharedSecret) {
		t.Errorf("globex's remember: %s", text)
	}
	if n, err := s.store.Memories(t.Context(), memory.Scope{Tenant: "globex"}, memory.MemoriesOptions{}); err != nil || len(n) != 1 {
		t.Errorf("globex's shared memories = %v, %v", n, err)
	}

	// Forgetting alice through MCP and HTTP leaves the shared memories.
	if text, isErr := toolText(t, alice, "forget", map[string]any{"erase_user": true}); isErr {
		t.Fatal(text)
	}
	s.must(204, "DELETE", "/v1/users/alice", tokenAcme, nil)
	s.must(200, "GET", "/v1/shared/memories", tokenAcme, nil).decode(t, &ms)
	if len(ms.Memories) != 3 {
		t.Fatalf("shared memories after forgetting alice = %s", mustJSON(ms))
	}
}

// TestSharedHeader: X-Engram-Shared must be true or false, and true
// cannot come with a user or session header: those requests are 400.
func TestSharedHeader(t *testing.T) {
	s := mcpServer(t)
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, hdr := range []map[string]string{
		{mcpserver.HeaderShared: "yes"},
		{mcpserver.HeaderShared: "true", mcpserver.HeaderUser: "alice"},
		{mcpserver.HeaderShared: "true", mcpserver.HeaderSession: "s1"},
	} {
		if r := s.mcpPost(ping, hdr); r.status != 400 || r.errorCode() != "invalid_scope" {
			t.Errorf("%v: %d %s", hdr, r.status, r.body)
		}
	}
	for _, v := range []string{"true", "false", "TRUE", "0"} {
		if r := s.mcpPost(ping, map[string]string{mcpserver.HeaderShared: v}); r.status != 200 {
			t.Errorf("%s: %s: %d %s", mcpserver.HeaderShared, v, r.status, r.body)
		}
	}
}
