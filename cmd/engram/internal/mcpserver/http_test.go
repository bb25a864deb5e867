package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

type tenantKey struct{}

// withTokens stands in for engram serve's authentication: a bearer token
// names a tenant, put in the request's context; no token, 401.
func withTokens(next http.Handler, tokens map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

func tenantOf(r *http.Request) string {
	s, _ := r.Context().Value(tenantKey{}).(string)
	return s
}

// headers adds fixed headers to every request.
type headers struct {
	h    http.Header
	next http.RoundTripper
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// startHTTP serves NewHTTPHandler behind withTokens on a loopback port.
func startHTTP(t *testing.T, st *memory.Store) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(withTokens(NewHTTPHandler(st, ScopeFromHeaders(tenantOf)),
		map[string]string{"tok-acme": "acme", "tok-globex": "globex"}))
	t.Cleanup(srv.Close)
	return srv
}

// connectHTTP connects the SDK's client over streamable HTTP, sending h
// with every request.
func connectHTTP(t *testing.T, srv *httptest.Server, h http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	client := &http.Client{Transport: headers{h: h, next: srv.Client().Transport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "engram-test", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: client, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnectHTTP(t *testing.T, srv *httptest.Server, h http.Header) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, srv, h)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestStreamableHTTP(t *testing.T) {
	st := openStore(t)
	srv := startHTTP(t, st)
	acme := mustConnectHTTP(t, srv, http.Header{
		"Authorization": {"Bearer tok-acme"}, HeaderUser: {"alice"}, HeaderSession: {"s1"},
	})

	tools, err := acme.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 14 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	seed(t, acme)
	var g testGraph
	ok(t, acme, "read_graph", nil, &g)
	if len(g.Entities) != 3 || len(g.Relations) != 2 {
		t.Errorf("read_graph %v %v", g.names(), g.relations())
	}
	ok(t, acme, "append_message", raw(`{"role": "user", "content": "hello over HTTP"}`), nil)
	var w getWindowOut
	ok(t, acme, "get_window", nil, &w)
	if len(w.Messages) != 1 || w.Messages[0].Content != "hello over HTTP" {
		t.Errorf("window %s", mustJSON(w))
	}
	fails(t, acme, "add_observations", raw(`{"observations": [{"entityName": "Nobody", "contents": ["x"]}]}`),
		"Entity with name Nobody not found")

	// The headers chose the scope: the writes are alice's, session s1.
	sc := memory.Scope{Tenant: "acme", User: "alice", Session: "s1"}
	if e, err := storedEntity(st, sc, "Alice"); err != nil || e.Type != "person" {
		t.Errorf("store has %+v, %v", e, err)
	}
	if msgs, err := st.Session(sc).Messages(context.Background(), memory.MessagesOptions{}); err != nil || len(msgs) != 1 {
		t.Errorf("session s1 has %d messages, %v", len(msgs), err)
	}

	// Another tenant, with the same user and session headers, sees
	// nothing: the tenant comes from the token. So does another user.
	for name, h := range map[string]http.Header{
		"another tenant": {"Authorization": {"Bearer tok-globex"}, HeaderUser: {"alice"}, HeaderSession: {"s1"}},
		"another user":   {"Authorization": {"Bearer tok-acme"}, HeaderUser: {"bob"}, HeaderSession: {"s1"}},
	} {
		cs := mustConnectHTTP(t, srv, h)
		ok(t, cs, "read_graph", nil, &g)
		ok(t, cs, "get_window", nil, &w)
		if len(g.Entities) != 0 || len(w.Messages) != 0 {
			t.Errorf("%s sees %v and %d messages", name, g.names(), len(w.Messages))
		}
	}

	// Without the headers, the user and session are the defaults.
	cs := mustConnectHTTP(t, srv, http.Header{"Authorization": {"Bearer tok-acme"}})
	ok(t, cs, "remember", raw(`{"text": "the default user's memory"}`), nil)
	def := memory.Scope{Tenant: "acme", User: DefaultUser}
	if mems, err := st.Memories(context.Background(), def, memory.MemoriesOptions{}); err != nil || len(mems) != 1 {
		t.Errorf("default user has %d memories, %v", len(mems), err)
	}

	// A bad scope is refused before the request reaches MCP.
	if _, err := connectHTTP(t, srv, http.Header{"Authorization": {"Bearer tok-acme"}, HeaderUser: {strings.Repeat("u", 1000)}}); err == nil {
		t.Error("an over-long user id connected")
	}
}

func TestHTTPRefusesBadScope(t *testing.T) {
	st := openStore(t)
	for _, tc := range []struct {
		name   string
		scope  func(*http.Request) (memory.Scope, error)
		header http.Header
		code   int
		want   string
	}{
		{"empty user header", ScopeFromHeaders(func(*http.Request) string { return "acme" }),
			http.Header{HeaderUser: {""}}, http.StatusBadRequest, "User is empty"},
		{"no tenant", ScopeFromHeaders(func(*http.Request) string { return "" }),
			nil, http.StatusBadRequest, "Tenant is empty"},
		{"refused", func(*http.Request) (memory.Scope, error) { return memory.Scope{}, errors.New("not yours") },
			nil, http.StatusForbidden, "not yours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			NewHTTPHandler(st, tc.scope).ServeHTTP(w, r)
			var resp struct {
				Error struct {
					Code    int
					Message string
				}
			}
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != tc.code || resp.Error.Code != -32600 || !strings.Contains(resp.Error.Message, tc.want) {
				t.Errorf("%d %+v, want %d and a JSON-RPC error with %q", w.Code, resp.Error, tc.code, tc.want)
			}
		})
	}
}

func TestScopeFromHeaders(t *testing.T) {
	scope := ScopeFromHeaders(func(r *http.Request) string { return r.Host })
	for _, tc := range []struct {
		name   string
		host   string
		header http.Header
		want   memory.Scope
		err    bool
	}{
		{"defaults", "acme", nil, memory.Scope{Tenant: "acme", User: DefaultUser, Session: DefaultSession}, false},
		{"headers", "acme", http.Header{HeaderUser: {"alice"}, HeaderSession: {"renewal"}},
			memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"}, false},
		{"user only", "acme", http.Header{HeaderUser: {"alice"}},
			memory.Scope{Tenant: "acme", User: "alice", Session: DefaultSession}, false},
		{"empty session", "acme", http.Header{HeaderSession: {""}}, memory.Scope{}, true},
		{"long user", "acme", http.Header{HeaderUser: {strings.Repeat("u", 1000)}}, memory.Scope{}, true},
		{"dot dot user", "acme", http.Header{HeaderUser: {".."}}, memory.Scope{}, true},
		{"dot user", "acme", http.Header{HeaderUser: {"."}}, memory.Scope{}, true},
		{"slash user", "acme", http.Header{HeaderUser: {"../evil"}}, memory.Scope{}, true},
		{"slash session", "acme", http.Header{HeaderSession: {"a/b"}}, memory.Scope{}, true},
		{"bidi override user", "acme", http.Header{HeaderUser: {"alice\u202e"}}, memory.Scope{}, true},
		{"bidi isolate session", "acme", http.Header{HeaderSession: {"\u2066s1"}}, memory.Scope{}, true},
		{"dot dot tenant", "..", nil, memory.Scope{}, true},
		{"no tenant", "", nil, memory.Scope{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = tc.host
			for k, v := range tc.header {
				r.Header[http.CanonicalHeaderKey(k)] = v
			}
			got, err := scope(r)
			if tc.err {
				if !errors.Is(err, memory.ErrInvalidScope) {
					t.Errorf("got %+v, %v; want ErrInvalidScope", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// storedEntity reads the entity name names from the store's graph of sc.
func storedEntity(st *memory.Store, sc memory.Scope, name string) (graph.Entity, error) {
	var e graph.Entity
	err := st.ViewGraph(context.Background(), sc, func(g *graph.Tx) (err error) {
		e, err = g.Entity(name)
		return err
	})
	return e, err
}
