package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
	"github.com/engramdb/engram/memory"
)

// graphCall is one of the nine MCP graph tools and the HTTP route that
// does the same thing, with the same arguments.
type graphCall struct {
	tool   string
	args   map[string]any
	method string
	path   string // after /v1/users/{user}, with the query if any
	status int    // the HTTP status of success
}

// TestGraphParityMCPHTTP runs every MCP graph tool and its HTTP route on
// one store, and checks that both answer the same: the writes the same
// result, and each read (read_graph, search_nodes, open_nodes) the same
// graph, read through MCP and through HTTP from the graph MCP wrote and
// from the graph HTTP wrote. The calls include the cases where the two
// used to differ: relations of open and search that reach an entity
// outside the answer, an entity that exists only as a relation's end,
// and an entity created again.
//
// What the comparison normalises, and only that (see normalise):
//   - HTTP entities carry Engram's createdAt and aliases; MCP's have the
//     reference's three fields. Both are dropped from HTTP entities.
//   - HTTP names the cursor of the next page next; MCP nextCursor.
//   - HTTP's add_observations also answers the deprecated observations
//     list next to results; it is dropped.
//   - The deletes answer 204 with no body over HTTP and the reference's
//     {success, message} over MCP: only success is compared.
func TestGraphParityMCPHTTP(t *testing.T) {
	s := newTestServer(t, nil, nil)
	var sides [2]paritySide
	for i, user := range []string{"viamcp", "viahttp"} {
		sides[i] = paritySide{
			mcp:   mcpClient(t, s.store, memory.Scope{Tenant: "acme", User: user}),
			path:  "/v1/users/" + user,
			token: tokenAcme,
		}
	}
	runGraphParity(t, s, sides)
}

// paritySide is one graph of a parity run: an MCP client on it, and the
// HTTP path prefix and token that reach it.
type paritySide struct {
	mcp         *mcp.ClientSession
	path, token string
}

// runGraphParity writes the same graph through MCP on sides[0] and through
// HTTP on sides[1], comparing each answer, then reads both graphs through
// both, comparing every answer (see TestGraphParityMCPHTTP).
func runGraphParity(t *testing.T, s *testServer, sides [2]paritySide) {
	t.Helper()
	writes := []graphCall{
		{tool: "create_entities", args: map[string]any{"entities": []map[string]any{
			{"name": "Alice", "entityType": "person", "observations": []string{"likes tea"}},
			{"name": "Acme", "entityType": "company", "observations": []string{}},
			{"name": "Bob", "entityType": "person", "observations": []string{"speaks Dutch"}},
		}}, method: "POST", path: "/entities", status: 201},
		{tool: "create_relations", args: map[string]any{"relations": []map[string]any{
			{"from": "Alice", "to": "Acme", "relationType": "works_at"},
			{"from": "Bob", "to": "Alice", "relationType": "knows"},
			{"from": "Carol", "to": "Bob", "relationType": "knows"}, // Carol is no entity
		}}, method: "POST", path: "/relations", status: 201},
		{tool: "add_observations", args: map[string]any{"observations": []map[string]any{
			{"entityName": "Alice", "contents": []string{"likes tea", "lives in Lisbon"}},
		}}, method: "POST", path: "/observations", status: 201},
		// Alice again is left as she is; Carol gets her details.
		{tool: "create_entities", args: map[string]any{"entities": []map[string]any{
			{"name": "Alice", "entityType": "robot", "observations": []string{"is new"}},
			{"name": "Carol", "entityType": "person", "observations": []string{"plays chess"}},
		}}, method: "POST", path: "/entities", status: 201},
		{tool: "create_relations", args: map[string]any{"relations": []map[string]any{
			{"from": "Dave", "to": "Acme", "relationType": "founded"}, // Dave is no entity
		}}, method: "POST", path: "/relations", status: 201},
	}
	reads := []graphCall{
		{tool: "read_graph", args: map[string]any{}, method: "GET", path: "/graph"},
		{tool: "read_graph", args: map[string]any{"limit": 3}, method: "GET", path: "/graph?limit=3"},
		{tool: "search_nodes", args: map[string]any{"query": "dutch"}, method: "GET", path: "/graph/search?q=dutch"},
		{tool: "search_nodes", args: map[string]any{"query": "a"}, method: "GET", path: "/graph/search?q=a"},
		{tool: "search_nodes", args: map[string]any{"query": "dave"}, method: "GET", path: "/graph/search?q=dave"},
		{tool: "open_nodes", args: map[string]any{"names": []string{"Alice"}}, method: "POST", path: "/graph/open"},
		{tool: "open_nodes", args: map[string]any{"names": []string{"Bob", "Dave", "Nobody"}}, method: "POST", path: "/graph/open"},
	}
	deletes := []graphCall{
		{tool: "delete_observations", args: map[string]any{"deletions": []map[string]any{
			{"entityName": "Alice", "observations": []string{"likes tea"}},
		}}, method: "DELETE", path: "/observations", status: 204},
		{tool: "delete_relations", args: map[string]any{"relations": []map[string]any{
			{"from": "Bob", "to": "Alice", "relationType": "knows"},
		}}, method: "DELETE", path: "/relations", status: 204},
		{tool: "delete_entities", args: map[string]any{"entityNames": []string{"Carol"}}, method: "DELETE", path: "/entities", status: 204},
	}
	write := func(c graphCall) {
		t.Helper()
		got := callTool(t, sides[0].mcp, c.tool, c.args)
		r := s.must(c.status, c.method, sides[1].path+c.path, sides[1].token, c.args)
		compareGraphAnswers(t, c, got, r.body)
	}
	read := func(c graphCall) {
		t.Helper()
		for _, side := range sides {
			got := callTool(t, side.mcp, c.tool, c.args)
			var body any
			if c.method == "POST" {
				body = c.args
			}
			r := s.must(200, c.method, side.path+c.path, side.token, body)
			compareGraphAnswers(t, c, got, r.body)
		}
		// The graph written through MCP and the one written through
		// HTTP are the same.
		if a, b := callTool(t, sides[0].mcp, c.tool, c.args), callTool(t, sides[1].mcp, c.tool, c.args); !reflect.DeepEqual(a, b) {
			t.Errorf("%s %v: the graph written through MCP reads %s, through HTTP %s", c.tool, c.args, mustJSON(a), mustJSON(b))
		}
	}
	for _, c := range writes {
		write(c)
	}
	for _, c := range reads {
		read(c)
	}
	// A name that is only a relation's end is no entity to either.
	for _, name := range []string{"Dave", "Nobody"} {
		args := map[string]any{"observations": []map[string]any{{"entityName": name, "contents": []string{"x"}}}}
		res, err := sides[0].mcp.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_observations", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		want := "Entity with name " + name + " not found"
		if !res.IsError || !strings.Contains(mustJSON(res.Content), want) {
			t.Errorf("MCP add_observations to %s = %s, want the error %q", name, mustJSON(res), want)
		}
		var e errorBody
		r := s.must(404, "POST", sides[1].path+"/observations", sides[1].token, args)
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code != "entity_not_found" || !strings.Contains(e.Error.Message, want) {
			t.Errorf("HTTP add_observations to %s = %s, want entity_not_found %q", name, r.body, want)
		}
	}
	for _, c := range deletes {
		write(c)
	}
	for _, c := range reads {
		read(c)
	}
}

// mcpClient connects an in-process MCP client to a server on store whose
// calls work on sc.
func mcpClient(t *testing.T, store *memory.Store, sc memory.Scope) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := mcpserver.NewServer(store, func(context.Context) (memory.Scope, error) { return sc, nil })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// callTool calls a tool and returns its structured content as plain JSON
// values, failing the test on an error.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s %v failed: %s", tool, args, mustJSON(res.Content))
	}
	return plainJSON(t, res.StructuredContent)
}

func plainJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareGraphAnswers fails the test unless the MCP answer and the HTTP
// body are the same after normalise.
func compareGraphAnswers(t *testing.T, c graphCall, viaMCP any, httpBody []byte) {
	t.Helper()
	if c.status == 204 {
		if m, _ := viaMCP.(map[string]any); m["success"] != true || len(httpBody) != 0 {
			t.Errorf("%s: MCP %s, HTTP %q", c.tool, mustJSON(viaMCP), httpBody)
		}
		return
	}
	var viaHTTP any
	if err := json.Unmarshal(httpBody, &viaHTTP); err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	viaHTTP = normalise(viaHTTP)
	if !reflect.DeepEqual(viaMCP, viaHTTP) {
		q, _ := url.QueryUnescape(c.path)
		t.Errorf("%s %v answers through MCP\n%s\nbut %s %s through HTTP\n%s",
			c.tool, mustJSON(c.args), mustJSON(viaMCP), c.method, strings.TrimSpace(q), mustJSON(viaHTTP))
	}
}

// normalise removes from an HTTP answer what legitimately differs from
// MCP's (see TestGraphParityMCPHTTP): entities' createdAt and aliases,
// the deprecated observations of add_observations, and next for
// nextCursor.
func normalise(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if es, ok := m["entities"].([]any); ok {
		for _, e := range es {
			delete(e.(map[string]any), "createdAt")
			delete(e.(map[string]any), "aliases")
		}
	}
	if _, ok := m["results"]; ok {
		delete(m, "observations")
	}
	if next, ok := m["next"]; ok {
		delete(m, "next")
		m["nextCursor"] = next
	}
	return m
}

// TestGraphSearchNeedsQ: the search route says, in its error and in
// openapi.json, that the text goes in the query parameter q.
func TestGraphSearchNeedsQ(t *testing.T) {
	s := newTestServer(t, nil, nil)
	for _, path := range []string{"/graph/search", "/graph/search?q=", "/graph/search?limit=5"} {
		r := s.must(400, "GET", "/v1/users/alice"+path, tokenAcme, nil)
		var e errorBody
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatal(err)
		}
		if e.Error.Code != "invalid_parameter" || !strings.Contains(e.Error.Message, "q is required") || !strings.Contains(e.Error.Message, "?q=") {
			t.Errorf("GET %s = %s, want invalid_parameter saying q is required, with an example ?q=", path, r.body)
		}
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
			Parameters  []struct {
				Name     string `json:"name"`
				In       string `json:"in"`
				Required bool   `json:"required"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/v1/users/{user}/graph/search"]["get"]
	if !strings.Contains(op.Description, "?q=") || !strings.Contains(op.Description, "required") {
		t.Errorf("openapi.json's graph search description %q does not say q is required, with an example", op.Description)
	}
	required := false
	for _, p := range op.Parameters {
		required = required || (p.Name == "q" && p.In == "query" && p.Required)
	}
	if !required {
		t.Error("openapi.json's graph search has no required query parameter q")
	}
}
