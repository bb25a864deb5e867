package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
)

// TestMCPMount: Options.MCP is served at /mcp behind bearer authentication
// and the body limit, and sees the token's tenant through Tenant.
func TestMCPMount(t *testing.T) {
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Panic") != "" {
			panic("mcp handler bug")
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.Method+" tenant="+Tenant(r.Context())+" body="+string(body))
	})
	s := newTestServer(t, nil, &Options{MCP: mcp, MaxBodyBytes: 64})

	for tok, tenant := range map[string]string{tokenAcme: "acme", tokenGlobex: "globex"} {
		r := s.must(200, "POST", "/mcp", tok, `{"jsonrpc":"2.0"}`)
		if want := `POST tenant=` + tenant + ` body={"jsonrpc":"2.0"}`; string(r.body) != want {
			t.Errorf("/mcp = %q, want %q", r.body, want)
		}
	}
	// Only POST reaches the handler: the transport is stateless.
	for _, m := range []string{"GET", "DELETE"} {
		if r := s.must(405, m, "/mcp", tokenAcme, nil); r.header.Get("Allow") != "POST" {
			t.Errorf("%s /mcp: Allow %q", m, r.header.Get("Allow"))
		}
	}
	r := s.must(401, "POST", "/mcp", "", `{}`)
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without a challenge")
	}
	s.must(413, "POST", "/mcp", tokenAcme, strings.Repeat("x", 100))
	s.must(405, "PUT", "/mcp", tokenAcme, `{}`)

	// A panicking handler answers a JSON 500 and keeps the server up.
	req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set("X-Panic", "1")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"code":"internal"`) || strings.Contains(string(body), "mcp handler bug") {
		t.Errorf("panic = %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(s.log.String(), "panic: mcp handler bug") {
		t.Errorf("the log lacks the panic:\n%s", s.log.String())
	}
	s.must(200, "GET", "/healthz", "", nil)

	if Tenant(t.Context()) != "" {
		t.Error("Tenant of a bare context is not empty")
	}
}

func TestMCPNotMounted(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(404, "POST", "/mcp", tokenAcme, `{}`)
}

// mcpServer is a test server with engram's MCP handler at /mcp.
func mcpServer(t *testing.T) *testServer {
	t.Helper()
	scope := mcpserver.ScopeFromHeaders(func(r *http.Request) string { return Tenant(r.Context()) })
	s := newTestServer(t, nil, &Options{MCP: &lateMCP{}, MCPScope: scope})
	s.h.mcp.(*lateMCP).h = mcpserver.NewHTTPHandler(s.store, scope)
	return s
}

// lateMCP lets the test build the MCP handler over the store the test
// server opened.
type lateMCP struct{ h http.Handler }

func (l *lateMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.h.ServeHTTP(w, r) }

// mcpPost posts body to /mcp with the headers a client sends, changed by
// hdr (an empty value deletes the header).
func (s *testServer) mcpPost(body string, hdr map[string]string) response {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return s.do(req)
}

// TestMCPErrorEnvelope: /mcp answers its HTTP errors in the API's JSON
// envelope, as every other path does (issue 26: 400, 405 and 415 came in
// plain text), and only POST is served: GET and DELETE, which the
// stateless transport has no use for, answer 405 with Allow: POST, as the
// document says.
func TestMCPErrorEnvelope(t *testing.T) {
	s := mcpServer(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	cases := []struct {
		name   string
		method string
		body   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"text body", "POST", list, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"no Accept", "POST", list, map[string]string{"Accept": ""}, 400, "invalid_request"},
		{"unknown version", "POST", list, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, "invalid_request"},
		{"bad user header", "POST", list, map[string]string{"X-Engram-User": "a/b"}, 400, "invalid_scope"},
		{"not JSON", "POST", `{"jsonrpc":`, nil, 400, "invalid_request"},
		{"GET", "GET", "", nil, 405, "method_not_allowed"},
		{"DELETE", "DELETE", "", nil, 405, "method_not_allowed"},
	}
	for _, c := range cases {
		var r response
		if c.method == "POST" {
			r = s.mcpPost(c.body, c.hdr)
		} else {
			r = s.call(c.method, "/mcp", tokenAcme, nil)
		}
		if r.status != c.status || r.header.Get("Content-Type") != "application/json" || r.errorCode() != c.code {
			t.Errorf("%s: %d %s %s, want %d and code %s", c.name, r.status, r.header.Get("Content-Type"), r.body, c.status, c.code)
		}
		if c.status == 405 && r.header.Get("Allow") != "POST" {
			t.Errorf("%s: Allow %q", c.name, r.header.Get("Allow"))
		}
	}
	// A good call still answers JSON-RPC.
	if r := s.mcpPost(list, nil); r.status != 200 || !strings.Contains(string(r.body), `"tools"`) {
		t.Errorf("tools/list = %d %.200s", r.status, r.body)
	}
}

// TestMCPBatchesAndIDsHTTP: over HTTP, as over stdio, a JSON-RPC batch is
// taken only from a client that declared a protocol version with batches
// (MCP-Protocol-Version 2024-11-05 or 2025-03-26; issue 26: HTTP took them
// without, stdio refused them), and an id is echoed exactly: one the SDK
// would change (1e30 came back as -9223372036854775808, 2^53+1 as 2^53) is
// refused instead.
func TestMCPBatchesAndIDsHTTP(t *testing.T) {
	s := mcpServer(t)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	if r := s.mcpPost(batch, nil); r.status != 400 || r.errorCode() != "invalid_request" || !strings.Contains(string(r.body), "batch") {
		t.Errorf("a batch without a protocol version = %d %s", r.status, r.body)
	}
	if r := s.mcpPost(batch, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}); r.status != 400 || r.errorCode() != "invalid_request" {
		t.Errorf("a batch under 2025-06-18 = %d %s", r.status, r.body)
	}
	if r := s.mcpPost(batch, map[string]string{"Mcp-Protocol-Version": "2025-03-26"}); r.status != 200 || !strings.HasPrefix(strings.TrimSpace(string(r.body)), "[") {
		t.Errorf("a batch under 2025-03-26 = %d %.300s", r.status, r.body)
	}
	for _, id := range []string{`1e30`, `9007199254740993`, `-9007199254740993`, `1.5`, `-0`, `1E2`, `true`, `{}`} {
		r := s.mcpPost(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, nil)
		if r.status != 400 || r.errorCode() != "invalid_request" || !strings.Contains(string(r.body), "id") {
			t.Errorf("id %s = %d %s, want 400 invalid_request", id, r.status, r.body)
		}
	}
	for _, id := range []string{`0`, `42`, `-7`, `9007199254740992`, `-9007199254740992`, `"1e30"`, `"abc"`} {
		r := s.mcpPost(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, nil)
		var resp struct {
			ID json.RawMessage `json:"id"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || string(resp.ID) != id {
			t.Errorf("id %s = %d %s, want it echoed", id, r.status, r.body)
		}
	}
}
