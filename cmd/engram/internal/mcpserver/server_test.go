package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// raw is a tool's arguments as JSON text.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

type testGraph struct {
	Entities   []entityJSON     `json:"entities"`
	Relations  []graph.Relation `json:"relations"`
	NextCursor string           `json:"nextCursor"`
}

func (g *testGraph) names() []string {
	var out []string
	for _, e := range g.Entities {
		out = append(out, e.Name)
	}
	return out
}

func (g *testGraph) relations() []string {
	var out []string
	for _, r := range g.Relations {
		out = append(out, r.From+" -"+r.RelationType+"-> "+r.To)
	}
	slices.Sort(out)
	return out
}

// seed creates Alice, Bob and Acme, related.
func seed(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ok(t, cs, "create_entities", raw(`{"entities": [
		{"name": "Alice", "entityType": "person", "observations": ["likes tea"]},
		{"name": "Bob", "entityType": "person", "observations": []},
		{"name": "Acme", "entityType": "organization", "observations": ["makes <rockets> & more"]}]}`), nil)
	ok(t, cs, "create_relations", raw(`{"relations": [
		{"from": "Alice", "to": "Acme", "relationType": "works_at"},
		{"from": "Bob", "to": "Alice", "relationType": "knows"}]}`), nil)
}

func TestToolList(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("%s: no description or input schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{
		"add_observations", "append_message", "create_entities", "create_relations", "delete_entities",
		"delete_observations", "delete_relations", "forget", "get_window", "open_nodes", "read_graph",
		"recall", "remember", "search_nodes",
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func TestCreateEntities(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	var out struct{ Entities []entityJSON }
	res := ok(t, cs, "create_entities", raw(`{"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes <tea> & cake"]}]}`), &out)
	if len(out.Entities) != 1 || out.Entities[0].Name != "Alice" || out.Entities[0].Observations[0] != "likes <tea> & cake" {
		t.Errorf("created %+v", out.Entities)
	}
	// The text is the reference's JSON.stringify(result, null, 2).
	want := "[\n  {\n    \"name\": \"Alice\",\n    \"entityType\": \"person\",\n    \"observations\": [\n      \"likes <tea> & cake\"\n    ]\n  }\n]"
	if got := text(res); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	// An existing name is skipped, in any case: Engram folds names.
	res = ok(t, cs, "create_entities", raw(`{"entities": [{"name": "alice", "entityType": "person", "observations": []}]}`), &out)
	if len(out.Entities) != 0 || text(res) != "[]" {
		t.Errorf("re-created %+v, text %q", out.Entities, text(res))
	}
	fails(t, cs, "create_entities", raw(`{"entities": [{"name": "", "entityType": "person", "observations": []}]}`), "name")
	fails(t, cs, "create_entities", raw(`{"entities": "Alice"}`), "validating")
	fails(t, cs, "create_entities", raw(`{"entities": [{"name": "Bob"}]}`), "entityType")
}

func TestCreateRelations(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var out struct{ Relations []graph.Relation }
	ok(t, cs, "create_relations", raw(`{"relations": [
		{"from": "Alice", "to": "Acme", "relationType": "works_at"},
		{"from": "Alice", "to": "Bob", "relationType": "manages"}]}`), &out)
	if want := []graph.Relation{{From: "Alice", To: "Bob", RelationType: "manages"}}; !slices.Equal(out.Relations, want) {
		t.Errorf("created %+v, want only the new %+v", out.Relations, want)
	}
	fails(t, cs, "create_relations", raw(`{"relations": [{"from": "Alice", "to": "Bob", "relationType": ""}]}`), "empty predicate")
	fails(t, cs, "create_relations", raw(`{"relations": [{"from": "Alice", "relationType": "knows"}]}`), "to")
}

func TestAddObservations(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var out struct {
		Results []addedJSON `json:"results"`
	}
	res := ok(t, cs, "add_observations", raw(`{"observations": [
		{"entityName": "Alice", "contents": ["likes tea", "speaks Portuguese"]},
		{"entityName": "Bob", "contents": []}]}`), &out)
	want := []addedJSON{
		{EntityName: "Alice", AddedObservations: []string{"speaks Portuguese"}},
		{EntityName: "Bob", AddedObservations: []string{}},
	}
	if mustJSON(out.Results) != mustJSON(want) {
		t.Errorf("results %s, want %s", mustJSON(out.Results), mustJSON(want))
	}
	if !strings.HasPrefix(text(res), "[\n  {\n    \"entityName\": \"Alice\",") {
		t.Errorf("text %q is not the results array", text(res))
	}
	// An unknown entity fails the call as the reference words it, and
	// nothing of the call is written.
	msg := fails(t, cs, "add_observations", raw(`{"observations": [
		{"entityName": "Alice", "contents": ["must not stay"]},
		{"entityName": "Dave", "contents": ["x"]}]}`), "")
	if msg != "Entity with name Dave not found" {
		t.Errorf("error %q", msg)
	}
	var g testGraph
	ok(t, cs, "open_nodes", raw(`{"names": ["Alice"]}`), &g)
	if slices.Contains(g.Entities[0].Observations, "must not stay") {
		t.Errorf("a failed add_observations wrote %v", g.Entities[0].Observations)
	}
}

func TestDeleteEntities(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var st statusOut
	res := ok(t, cs, "delete_entities", raw(`{"entityNames": ["alice", "Nobody"]}`), &st)
	if !st.Success || st.Message != "Entities deleted successfully" || text(res) != st.Message {
		t.Errorf("status %+v, text %q", st, text(res))
	}
	var g testGraph
	ok(t, cs, "read_graph", nil, &g)
	if slices.Contains(g.names(), "Alice") || len(g.Relations) != 0 {
		t.Errorf("after deleting Alice: %v %v", g.names(), g.relations())
	}
	fails(t, cs, "delete_entities", raw(`{}`), "entityNames")
}

func TestDeleteObservations(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var st statusOut
	res := ok(t, cs, "delete_observations", raw(`{"deletions": [
		{"entityName": "Alice", "observations": ["likes tea", "never said"]},
		{"entityName": "Nobody", "observations": ["x"]}]}`), &st)
	if st.Message != "Observations deleted successfully" || text(res) != st.Message {
		t.Errorf("status %+v", st)
	}
	var g testGraph
	ok(t, cs, "open_nodes", raw(`{"names": ["Alice"]}`), &g)
	if len(g.Entities[0].Observations) != 0 {
		t.Errorf("observations left: %v", g.Entities[0].Observations)
	}
	fails(t, cs, "delete_observations", raw(`{"deletions": [{"entityName": "Alice", "observations": "likes tea"}]}`), "validating")
}

func TestDeleteRelations(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var st statusOut
	ok(t, cs, "delete_relations", raw(`{"relations": [
		{"from": "Bob", "to": "Alice", "relationType": "knows"},
		{"from": "Nobody", "to": "Alice", "relationType": "knows"}]}`), &st)
	if st.Message != "Relations deleted successfully" {
		t.Errorf("status %+v", st)
	}
	var g testGraph
	ok(t, cs, "read_graph", nil, &g)
	if want := []string{"Alice -works_at-> Acme"}; !slices.Equal(g.relations(), want) {
		t.Errorf("relations %v, want %v", g.relations(), want)
	}
	fails(t, cs, "delete_relations", raw(`{"relations": [{"from": "Bob", "to": "Alice"}]}`), "relationType")
}

func TestReadGraph(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var whole testGraph
	res := ok(t, cs, "read_graph", nil, &whole)
	if want := []string{"Acme", "Alice", "Bob"}; !slices.Equal(whole.names(), want) || len(whole.Relations) != 2 || whole.NextCursor != "" {
		t.Errorf("read_graph %v %v next %q", whole.names(), whole.relations(), whole.NextCursor)
	}
	if !strings.Contains(text(res), `"makes <rockets> & more"`) || strings.Contains(text(res), "nextCursor") {
		t.Errorf("text %s", text(res))
	}

	// Pages of two hold the same graph, each item once.
	var paged testGraph
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("read_graph does not end")
		}
		var p testGraph
		ok(t, cs, "read_graph", map[string]any{"cursor": cursor, "limit": 2}, &p)
		if n := len(p.Entities) + len(p.Relations); n > 2 {
			t.Errorf("page of %d items, limit 2", n)
		}
		paged.Entities = append(paged.Entities, p.Entities...)
		paged.Relations = append(paged.Relations, p.Relations...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(paged.names(), whole.names()) || !slices.Equal(paged.relations(), whole.relations()) {
		t.Errorf("pages hold %v %v, want %v %v", paged.names(), paged.relations(), whole.names(), whole.relations())
	}

	fails(t, cs, "read_graph", raw(`{"cursor": "bogus"}`), "invalid cursor")
	fails(t, cs, "read_graph", raw(`{"limit": 0.5}`), "validating")
	fails(t, cs, "read_graph", raw(`{"limit": 10001}`), "validating")
}

func TestSearchNodes(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	ok(t, cs, "create_entities", raw(`{"entities": [{"name": "Carol", "entityType": "person", "observations": ["ROCKETS fan"]}]}`), nil)
	var g testGraph
	ok(t, cs, "search_nodes", raw(`{"query": "rockets"}`), &g)
	// Matches in any case; relations with one end among the answers come
	// too, as the reference returns them.
	if want := []string{"Acme", "Carol"}; !slices.Equal(g.names(), want) {
		t.Errorf("entities %v, want %v", g.names(), want)
	}
	if want := []string{"Alice -works_at-> Acme"}; !slices.Equal(g.relations(), want) {
		t.Errorf("relations %v, want %v", g.relations(), want)
	}
	ok(t, cs, "search_nodes", raw(`{"query": "nothing like it"}`), &g)
	if len(g.Entities) != 0 || len(g.Relations) != 0 {
		t.Errorf("no match gave %v %v", g.names(), g.relations())
	}
	fails(t, cs, "search_nodes", raw(`{}`), "query")
}

func TestOpenNodes(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	seed(t, cs)
	var g testGraph
	ok(t, cs, "open_nodes", raw(`{"names": ["bob", "Nobody"]}`), &g)
	if want := []string{"Bob"}; !slices.Equal(g.names(), want) {
		t.Errorf("entities %v, want %v", g.names(), want)
	}
	if want := []string{"Bob -knows-> Alice"}; !slices.Equal(g.relations(), want) {
		t.Errorf("relations %v, want %v", g.relations(), want)
	}
	ok(t, cs, "open_nodes", raw(`{"names": ["Alice", "Bob", "Acme"]}`), &g)
	if len(g.Relations) != 2 {
		t.Errorf("relations %v: each once", g.relations())
	}
	fails(t, cs, "open_nodes", raw(`{"names": "Alice"}`), "validating")
}

func TestRemember(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	var a, b rememberOut
	ok(t, cs, "remember", raw(`{"text": "Alice's account number is 3942", "tags": ["billing"]}`), &a)
	ok(t, cs, "remember", raw(`{"text": "alice's account number is 3942", "kind": "fact"}`), &b)
	if a.ID == "" || a.ID != b.ID {
		t.Errorf("ids %q and %q: the same memory twice should keep one id", a.ID, b.ID)
	}
	fails(t, cs, "remember", raw(`{"text": ""}`), "invalid memory")
	fails(t, cs, "remember", raw(`{"text": "x", "kind": "rumour"}`), "validating")
	fails(t, cs, "remember", raw(`{"text": "x", "expires_at": "tomorrow"}`), "")
	// The zero time is refused, not read as "no expiry" (issue 26), and
	// so are years the store cannot keep.
	fails(t, cs, "remember", raw(`{"text": "zero", "expires_at": "0001-01-01T00:00:00Z"}`), "expires_at")
	fails(t, cs, "remember", raw(`{"text": "far", "expires_at": "9999-12-31T00:00:00Z"}`), "ExpiresAt")
	fails(t, cs, "remember", raw(`{"text": "early", "expires_at": "0000-01-01T00:00:00Z"}`), "ExpiresAt")
}

func TestAppendMessageAndGetWindow(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	var id appendMessageOut
	ok(t, cs, "append_message", raw(`{"role": "system", "content": "Be brief."}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "user", "content": "Weather in Lisbon?", "name": "alice"}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "assistant", "tool_calls": [{"id": "c1", "name": "weather", "arguments": "{\"city\":\"Lisbon\"}"}]}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "tool", "tool_call_id": "c1", "content": "21°C, sunny"}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "assistant", "content": "21°C and sunny."}`), &id)
	if id.ID == "" {
		t.Error("append_message returned no id")
	}

	var w getWindowOut
	ok(t, cs, "get_window", nil, &w)
	if len(w.Messages) != 5 || w.Messages[4].ID != id.ID || w.Tokens <= 0 {
		t.Fatalf("window %s", mustJSON(w))
	}
	if c := w.Messages[2].ToolCalls; len(c) != 1 || c[0].Arguments != `{"city":"Lisbon"}` {
		t.Errorf("tool call %+v", c)
	}
	// Two messages: the system message and the last; the tool pair goes
	// with the older turns.
	ok(t, cs, "get_window", raw(`{"max_messages": 2}`), &w)
	if len(w.Messages) != 2 || w.Messages[0].Role != "system" || w.Messages[1].ID != id.ID {
		t.Errorf("window of two: %s", mustJSON(w))
	}

	fails(t, cs, "append_message", raw(`{"role": "tool", "tool_call_id": "c9", "content": "?"}`), "no earlier tool call")
	fails(t, cs, "append_message", raw(`{"role": "narrator", "content": "?"}`), "validating")
	fails(t, cs, "append_message", raw(`{"role": "assistant", "tool_calls": [{"id": "c2", "name": "f", "arguments": "{nope"}]}`), "not valid JSON")
	fails(t, cs, "get_window", raw(`{"max_messages": -1}`), "validating")
	fails(t, cs, "get_window", raw(`{"max_tokens": 1}`), "system messages alone")
}

func TestRecall(t *testing.T) {
	st := openStore(t)
	cs := connect(t, NewServer(st, fixed(testScope)))
	ok(t, cs, "remember", raw(`{"text": "Alice's account number is 3942", "kind": "fact"}`), nil)
	ok(t, cs, "create_entities", raw(`{"entities": [{"name": "Alice", "entityType": "person", "observations": []}]}`), nil)
	ok(t, cs, "create_relations", raw(`{"relations": [{"from": "Alice", "to": "Dana", "relationType": "renewal owner"}]}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "user", "content": "Hi, it's Alice again."}`), nil)

	var out recallOut
	var plain recallOut
	ok(t, cs, "recall", raw(`{"text": "What is Alice's account 3942 and who owns her renewal?", "max_tokens": 1000}`), &plain)
	if plain.Trace != nil || len(plain.Items) < 2 {
		t.Errorf("a recall without trace: items %d, trace %s", len(plain.Items), mustJSON(plain.Trace))
	}
	ok(t, cs, "recall", raw(`{"text": "What is Alice's account 3942 and who owns her renewal?", "max_tokens": 1000, "trace": true}`), &out)
	if len(out.Messages) < 2 || out.Messages[0].Role != "system" {
		t.Fatalf("messages %s", mustJSON(out.Messages))
	}
	pre := out.Messages[0].Content
	for _, want := range []string{"3942", "Dana"} {
		if !strings.Contains(pre, want) {
			t.Errorf("preamble lacks %q:\n%s", want, pre)
		}
	}
	if last := out.Messages[len(out.Messages)-1]; last.Content != "Hi, it's Alice again." {
		t.Errorf("window does not end with the session's message: %+v", last)
	}
	if len(out.Items) < 2 || out.Trace.Budget != 1000 || out.Trace.TokensUsed > 1000 || len(out.Trace.Candidates) == 0 {
		t.Errorf("items %d, trace %s", len(out.Items), mustJSON(out.Trace))
	}
	if !slices.Contains(out.Trace.Entities, "Alice") {
		t.Errorf("trace names entities %v, want Alice", out.Trace.Entities)
	}
	var kept int
	for _, c := range out.Trace.Candidates {
		if c.Kept {
			kept++
		}
	}
	if kept != len(out.Items) {
		t.Errorf("%d kept candidates, %d items", kept, len(out.Items))
	}
	for _, it := range out.Items {
		if it.Memory != nil || it.Fact != nil {
			t.Errorf("item %s carries its record: %s", it.ID, mustJSON(it))
		}
	}

	ok(t, cs, "recall", raw(`{"text": "account", "sources": ["memories"]}`), &out)
	for _, it := range out.Items {
		if it.Source != "memories" {
			t.Errorf("sources [memories] recalled %+v", it)
		}
	}
	fails(t, cs, "recall", raw(`{"text": "x", "top_k": 201}`), "validating")
	fails(t, cs, "recall", raw(`{"text": "x", "sources": ["rumours"]}`), "validating")
}

func TestForget(t *testing.T) {
	st := openStore(t)
	cs := connect(t, NewServer(st, fixed(testScope)))
	ok(t, cs, "remember", raw(`{"text": "Alice prefers email"}`), nil)
	ok(t, cs, "append_message", raw(`{"role": "user", "content": "hello"}`), nil)
	seed(t, cs)

	var out forgetOut
	ok(t, cs, "forget", nil, &out)
	if out != (forgetOut{Erased: "session", User: "alice", Session: "s1"}) {
		t.Errorf("forget %+v", out)
	}
	var w getWindowOut
	ok(t, cs, "get_window", nil, &w)
	var g testGraph
	ok(t, cs, "read_graph", nil, &g)
	mems, err := st.Memories(context.Background(), testScope, memory.MemoriesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Messages) != 0 || len(g.Entities) != 3 || len(mems) != 1 {
		t.Errorf("after forgetting the session: %d messages (want 0), %d entities (3), %d memories (1)",
			len(w.Messages), len(g.Entities), len(mems))
	}

	out = forgetOut{}
	ok(t, cs, "forget", raw(`{"erase_user": true}`), &out)
	if out != (forgetOut{Erased: "user", User: "alice"}) {
		t.Errorf("forget user %+v", out)
	}
	ok(t, cs, "read_graph", nil, &g)
	if mems, _ = st.Memories(context.Background(), testScope, memory.MemoriesOptions{}); len(g.Entities) != 0 || len(mems) != 0 {
		t.Errorf("after forgetting the user: %d entities, %d memories", len(g.Entities), len(mems))
	}
	fails(t, cs, "forget", raw(`{"erase_user": "yes"}`), "validating")

	noSession := connect(t, NewServer(st, fixed(memory.Scope{Tenant: "acme", User: "alice"})))
	fails(t, noSession, "forget", nil, "no session")
}

// TestScope checks that the scope function decides whose memory a call
// sees, and that its error is a tool error.
func TestScope(t *testing.T) {
	st := openStore(t)
	alice := connect(t, NewServer(st, fixed(testScope)))
	bob := connect(t, NewServer(st, fixed(memory.Scope{Tenant: "acme", User: "bob", Session: "s1"})))
	other := connect(t, NewServer(st, fixed(memory.Scope{Tenant: "globex", User: "alice", Session: "s1"})))
	seed(t, alice)
	ok(t, alice, "remember", raw(`{"text": "Alice's account number is 3942"}`), nil)
	for name, cs := range map[string]*mcp.ClientSession{"another user": bob, "another tenant": other} {
		var g testGraph
		ok(t, cs, "read_graph", nil, &g)
		var out recallOut
		ok(t, cs, "recall", raw(`{"text": "account 3942 Alice"}`), &out)
		if len(g.Entities) != 0 || len(out.Items) != 0 {
			t.Errorf("%s sees %v and %d recalled items", name, g.names(), len(out.Items))
		}
	}

	broken := connect(t, NewServer(st, func(context.Context) (memory.Scope, error) {
		return memory.Scope{}, errors.New("no user signed in")
	}))
	fails(t, broken, "read_graph", nil, "no scope for this call: no user signed in")
	invalid := connect(t, NewServer(st, fixed(memory.Scope{User: "alice"})))
	fails(t, invalid, "remember", raw(`{"text": "x"}`), "invalid scope")
}

// TestErrorsQuoteBounded: a tool error names the bad value by its first
// bytes, never whole (issue 26: errors echoed a 3 MiB value whole). The
// SDK's schema validation quotes the value it refuses, as do protocol
// errors such as an unknown tool's name.
func TestErrorsQuoteBounded(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct{ tool, args string }{
		{"remember", `{"text": "x", "kind": "` + big + `"}`},
		{"append_message", `{"role": "` + big + `", "content": "x"}`},
		{"remember", `{"text": "x", "expires_at": "` + big + `"}`},
	} {
		if msg := fails(t, cs, c.tool, raw(c.args), ""); len(msg) > 600 {
			t.Errorf("%s: a %d-byte error: %.200s", c.tool, len(msg), msg)
		}
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: big, Arguments: raw(`{}`)})
	if err == nil || len(err.Error()) > 600 {
		t.Errorf("an unknown tool of 1 MiB: %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
}

// TestObservationsRedacted: with a Redactor, observations written through
// create_entities and add_observations are stored with placeholders,
// numbered for the user (the graph is the user's, whatever the session),
// and delete_observations naming the original text finds them.
func TestObservationsRedacted(t *testing.T) {
	st, err := memory.Open("", &memory.Options{Redactor: memory.NewRedactor()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := connect(t, NewServer(st, fixed(testScope)))
	// The session numbers carol first; the user's numbering is its own.
	if err := st.Session(testScope).Append(context.Background(), memory.Message{Role: memory.RoleUser, Content: "I am carol@example.com"}); err != nil {
		t.Fatal(err)
	}
	ok(t, cs, "create_entities", raw(`{"entities": [{"name": "Bob", "entityType": "person", "observations": ["mail bob@example.org"]}]}`), nil)
	ok(t, cs, "add_observations", raw(`{"observations": [{"entityName": "Bob", "contents": ["phone +44 20 7946 0958"]}]}`), nil)
	stored := func() []string {
		var e graph.Entity
		err := st.ViewGraph(context.Background(), testScope, func(tx *graph.Tx) (err error) {
			e, err = tx.Entity("Bob")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return e.Observations
	}
	if got := stored(); !slices.Equal(got, []string{"mail [EMAIL_1]", "phone [PHONE_1]"}) {
		t.Fatalf("observations stored %q", got)
	}
	ok(t, cs, "delete_observations", raw(`{"deletions": [{"entityName": "Bob", "observations": ["mail bob@example.org"]}]}`), nil)
	if got := stored(); !slices.Equal(got, []string{"phone [PHONE_1]"}) {
		t.Errorf("after the deletion: %q", got)
	}
}
