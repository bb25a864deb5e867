package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

// TestEndToEnd drives every route family over a real loopback connection.
func TestEndToEnd(t *testing.T) {
	s := newTestServer(t, &memory.Options{SingleValued: []string{"renewal_owner"}}, nil)
	const base = "/v1/users/alice"

	t.Run("meta", func(t *testing.T) {
		var health map[string]string
		s.must(200, "GET", "/healthz", "", nil).decode(t, &health)
		if health["status"] != "ok" {
			t.Fatalf("healthz = %v", health)
		}
		r := s.must(200, "GET", "/openapi.json", "", nil)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("openapi Content-Type = %q", ct)
		}
		var doc map[string]any
		r.decode(t, &doc)
		if doc["openapi"] != "3.1.0" {
			t.Errorf("openapi = %v", doc["openapi"])
		}
	})

	var ids []string
	t.Run("messages", func(t *testing.T) {
		var app appendResponse
		s.must(201, "POST", base+"/sessions/renewal/messages", tokenAcme, map[string]any{
			"messages": []map[string]any{
				{"role": "system", "content": "You are Acme's support agent."},
				{"role": "user", "content": "My renewal owner is Dana."},
				{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_1", "name": "lookup", "arguments": map[string]any{"customer": "Alice"}}}},
				{"role": "tool", "tool_call_id": "call_1", "content": `{"account":"3942"}`},
				{"role": "assistant", "content": "Account 3942 renews on 1 December."},
			},
			"facts": []map[string]any{{"subject": "Alice", "predicate": "renewal_owner", "object": "Dana"}},
		}).decode(t, &app)
		if len(app.IDs) != 5 || len(app.Facts) != 1 {
			t.Fatalf("append = %+v", app)
		}
		if app.Facts[0].Source != app.IDs[4] {
			t.Errorf("fact source = %q, want the batch's last message %q", app.Facts[0].Source, app.IDs[4])
		}
		ids = app.IDs

		var page messagesResponse
		s.must(200, "GET", base+"/sessions/renewal/messages?limit=2", tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 2 || page.Next != ids[1] || page.Messages[0].ID != ids[0] {
			t.Fatalf("page 1 = %+v", page)
		}
		if page.Messages[1].Tokens == 0 {
			t.Errorf("messages carry no token counts: %+v", page.Messages[1])
		}
		s.must(200, "GET", base+"/sessions/renewal/messages?limit=2&after="+page.Next, tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 2 || page.Messages[0].ID != ids[2] || string(page.Messages[0].ToolCalls[0].Arguments) != `{"customer":"Alice"}` {
			t.Fatalf("page 2 = %+v", page)
		}
		s.must(200, "GET", base+"/sessions/renewal/messages?reverse=true&limit=10", tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 5 || page.Messages[0].ID != ids[4] || page.Next != "" {
			t.Fatalf("reverse = %+v", page)
		}
		s.must(200, "GET", base+"/sessions/renewal/messages?before="+ids[1], tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 1 || page.Messages[0].ID != ids[0] {
			t.Fatalf("before = %+v", page)
		}
		since := esc(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		s.must(200, "GET", base+"/sessions/renewal/messages?since="+since, tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 0 || page.Messages == nil {
			t.Fatalf("since the future = %+v (want [], not null)", page)
		}

		// A batch with a bad message writes nothing.
		r := s.must(400, "POST", base+"/sessions/renewal/messages", tokenAcme, map[string]any{
			"messages": []map[string]any{{"role": "user", "content": "fine"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}},
		})
		if r.errorCode() != "invalid_message" {
			t.Errorf("orphan tool result: %s", r.body)
		}
		s.must(200, "GET", base+"/sessions/renewal/messages", tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 5 {
			t.Fatalf("a failed batch wrote %d messages", len(page.Messages)-5)
		}
	})

	t.Run("window", func(t *testing.T) {
		var win windowResponse
		s.must(200, "GET", base+"/sessions/renewal/window?max_messages=2", tokenAcme, nil).decode(t, &win)
		// The system message stays; the last message fills the budget, and
		// the tool pair before it is dropped whole.
		if len(win.Messages) != 2 || win.Messages[0].Role != memory.RoleSystem || win.Messages[1].ID != ids[4] {
			t.Fatalf("window = %+v", win)
		}
		if want := win.Messages[0].Tokens + win.Messages[1].Tokens; win.Tokens != want || want == 0 {
			t.Errorf("window tokens = %d, want %d", win.Tokens, want)
		}
		r := s.must(422, "GET", base+"/sessions/renewal/window?max_tokens=3", tokenAcme, nil)
		if r.errorCode() != "budget_too_small" {
			t.Errorf("tiny budget: %s", r.body)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		s.must(201, "POST", base+"/sessions/billing/messages", tokenAcme, `{"messages":[{"role":"user","content":"Send invoices to billing@alice.example."}]}`)
		var ss sessionsResponse
		s.must(200, "GET", base+"/sessions", tokenAcme, nil).decode(t, &ss)
		if len(ss.Sessions) != 2 || ss.Sessions[0].ID != "billing" || ss.Sessions[1].ID != "renewal" || ss.Sessions[1].Messages != 5 {
			t.Fatalf("sessions = %+v", ss)
		}
		s.must(200, "GET", base+"/sessions?limit=1", tokenAcme, nil).decode(t, &ss)
		if len(ss.Sessions) != 1 || ss.Next != "billing" {
			t.Fatalf("sessions page = %+v", ss)
		}
		s.must(200, "GET", base+"/sessions?after=billing", tokenAcme, nil).decode(t, &ss)
		if len(ss.Sessions) != 1 || ss.Sessions[0].ID != "renewal" {
			t.Fatalf("sessions after = %+v", ss)
		}
	})

	var memID string
	t.Run("memories", func(t *testing.T) {
		var m memory.Memory
		s.must(201, "POST", base+"/memories", tokenAcme, map[string]any{
			"kind": "preference", "text": "Alice wants invoices sent to billing@alice.example", "tags": []string{"billing"}, "agent": "support",
		}).decode(t, &m)
		if m.ID == "" || m.Kind != memory.KindPreference || m.Agent != "support" || m.CreatedAt.IsZero() {
			t.Fatalf("remember = %+v", m)
		}
		memID = m.ID
		// The same text again is the same memory, tags merged.
		var dup memory.Memory
		s.must(201, "POST", base+"/memories", tokenAcme, map[string]any{
			"kind": "preference", "text": "alice wants invoices sent to  billing@alice.example", "tags": []string{"email"},
		}).decode(t, &dup)
		if dup.ID != memID || !slices.Contains(dup.Tags, "billing") || !slices.Contains(dup.Tags, "email") {
			t.Fatalf("duplicate = %+v", dup)
		}
		s.must(201, "POST", base+"/memories", tokenAcme, map[string]any{"text": "Alice's account number is 3942"})

		var list memoriesResponse
		s.must(200, "GET", base+"/memories", tokenAcme, nil).decode(t, &list)
		if len(list.Memories) != 2 {
			t.Fatalf("memories = %+v", list)
		}
		s.must(200, "GET", base+"/memories?kind=preference", tokenAcme, nil).decode(t, &list)
		if len(list.Memories) != 1 || list.Memories[0].ID != memID {
			t.Fatalf("memories of a kind = %+v", list)
		}
		s.must(200, "GET", base+"/memories?tag=email&limit=1", tokenAcme, nil).decode(t, &list)
		if len(list.Memories) != 1 || list.Next != memID {
			t.Fatalf("memories with a tag = %+v", list)
		}

		var got memory.Memory
		s.must(200, "GET", base+"/memories/"+memID, tokenAcme, nil).decode(t, &got)
		if got.Text != m.Text {
			t.Fatalf("get = %+v", got)
		}
		var v2 memory.Memory
		s.must(200, "PUT", base+"/memories/"+memID, tokenAcme, map[string]any{"text": "Alice wants invoices sent to ap@alice.example"}).decode(t, &v2)
		if v2.ID == memID || v2.Supersedes != memID || v2.Kind != memory.KindPreference {
			t.Fatalf("update = %+v", v2)
		}
		var hist memoriesResponse
		s.must(200, "GET", base+"/memories/"+v2.ID+"/history", tokenAcme, nil).decode(t, &hist)
		if len(hist.Memories) != 2 || hist.Memories[0].ID != v2.ID || hist.Memories[1].SupersededBy != v2.ID {
			t.Fatalf("history = %+v", hist)
		}
		memID = v2.ID

		r := s.must(404, "GET", base+"/memories/01JNOSUCHMEMORY0000000000", tokenAcme, nil)
		if r.errorCode() != "not_found" {
			t.Errorf("missing memory: %s", r.body)
		}
		r = s.must(400, "POST", base+"/memories", tokenAcme, map[string]any{"kind": "gossip", "text": "x"})
		if r.errorCode() != "invalid_memory" {
			t.Errorf("bad kind: %s", r.body)
		}
		r = s.must(400, "GET", base+"/memories?kind=gossip", tokenAcme, nil)
		if r.errorCode() != "invalid_parameter" {
			t.Errorf("bad kind filter: %s", r.body)
		}
	})

	t.Run("facts", func(t *testing.T) {
		march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		var f memory.Fact
		s.must(201, "POST", base+"/facts", tokenAcme, map[string]any{
			"subject": "Acme Corp", "predicate": "renewal_owner", "object": "Dana", "valid_from": march,
		}).decode(t, &f)
		if f.ID == "" || f.Confidence != 1 {
			t.Fatalf("relate = %+v", f)
		}
		s.must(201, "POST", base+"/facts", tokenAcme, map[string]any{
			"subject": "Acme Corp", "predicate": "renewal_owner", "object": "Eve", "valid_from": june,
		})
		s.must(201, "POST", base+"/facts", tokenAcme, map[string]any{"subject": "Eve", "predicate": "works_at", "object": "Initech"})

		var facts factsResponse
		s.must(200, "GET", base+"/facts?subject=Acme+Corp&predicate=renewal_owner", tokenAcme, nil).decode(t, &facts)
		if len(facts.Facts) != 1 || facts.Facts[0].Object != "Eve" {
			t.Fatalf("facts now = %+v", facts)
		}
		s.must(200, "GET", base+"/facts?subject=Acme+Corp&predicate=renewal_owner&as_of=2026-04-01T00:00:00Z", tokenAcme, nil).decode(t, &facts)
		if len(facts.Facts) != 1 || facts.Facts[0].Object != "Dana" {
			t.Fatalf("facts in April = %+v", facts)
		}
		s.must(200, "GET", base+"/facts?subject=Acme+Corp&history=true", tokenAcme, nil).decode(t, &facts)
		if len(facts.Facts) != 2 {
			t.Fatalf("history = %+v", facts)
		}

		var walk traversalResponse
		s.must(200, "POST", base+"/traverse", tokenAcme, map[string]any{"from": []string{"Acme Corp"}, "max_hops": 2, "direction": "out"}).decode(t, &walk)
		if len(walk.Steps) != 2 || walk.Steps[1].Object != "Initech" || walk.Steps[1].Hops != 2 ||
			!slices.Equal(walk.Steps[1].Path, []string{"Acme Corp", "Eve", "Initech"}) {
			t.Fatalf("traverse = %+v", walk)
		}
		r := s.must(400, "POST", base+"/traverse", tokenAcme, map[string]any{"from": []string{"Acme Corp"}, "direction": "sideways"})
		if r.errorCode() != "invalid_query" {
			t.Errorf("bad direction: %s", r.body)
		}

		s.must(204, "DELETE", base+"/facts/"+f.ID, tokenAcme, nil)
		s.must(200, "GET", base+"/facts?subject=Acme+Corp&history=true", tokenAcme, nil).decode(t, &facts)
		if len(facts.Facts) != 1 {
			t.Fatalf("after delete = %+v", facts)
		}
		if r := s.must(404, "DELETE", base+"/facts/"+f.ID, tokenAcme, nil); r.errorCode() != "fact_not_found" {
			t.Errorf("delete twice: %s", r.body)
		}
	})

	t.Run("entities", func(t *testing.T) {
		const gbase = "/v1/users/bob"
		var es entitiesResponse
		s.must(201, "POST", gbase+"/entities", tokenAcme, map[string]any{"entities": []map[string]any{
			{"name": "Bob", "entityType": "person", "observations": []string{"likes tea"}},
			{"name": "Globex", "entityType": "company", "aliases": []string{"Globex Corp"}},
			{"name": "Carol", "entityType": "person"},
		}}).decode(t, &es)
		if len(es.Entities) != 3 || es.Entities[2].Observations == nil {
			t.Fatalf("create entities = %s", mustJSON(es))
		}
		var rs relationsResponse
		s.must(201, "POST", gbase+"/relations", tokenAcme, map[string]any{"relations": []map[string]any{
			{"from": "Bob", "to": "Globex Corp", "relationType": "works_at"},
			{"from": "Carol", "to": "Globex", "relationType": "works_at"},
		}}).decode(t, &rs)
		if len(rs.Relations) != 2 || rs.Relations[0].To != "Globex" {
			t.Fatalf("create relations = %+v", rs)
		}
		var obs observationsResponse
		s.must(201, "POST", gbase+"/observations", tokenAcme, map[string]any{"observations": []map[string]any{
			{"entityName": "Bob", "observations": []string{"likes tea", "speaks Dutch"}},
		}}).decode(t, &obs)
		if len(obs.Observations) != 1 || !slices.Equal(obs.Observations[0].Observations, []string{"speaks Dutch"}) {
			t.Fatalf("add observations = %+v", obs)
		}
		r := s.must(404, "POST", gbase+"/observations", tokenAcme, map[string]any{"observations": []map[string]any{
			{"entityName": "Nobody", "observations": []string{"x"}},
		}})
		if r.errorCode() != "entity_not_found" {
			t.Errorf("observations of nobody: %s", r.body)
		}

		// read_graph, a page at a time: 3 entities and 2 relations.
		var all graphResponse
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("read_graph does not end")
			}
			var page graphResponse
			s.must(200, "GET", gbase+"/graph?limit=2&cursor="+esc(cursor), tokenAcme, nil).decode(t, &page)
			all.Entities = append(all.Entities, page.Entities...)
			all.Relations = append(all.Relations, page.Relations...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if len(all.Entities) != 3 || len(all.Relations) != 2 {
			t.Fatalf("read_graph = %s", mustJSON(all))
		}
		var g graphResponse
		s.must(200, "GET", gbase+"/graph/search?q=dutch", tokenAcme, nil).decode(t, &g)
		if len(g.Entities) != 1 || g.Entities[0].Name != "Bob" || g.Relations == nil {
			t.Fatalf("search_nodes = %s", mustJSON(g))
		}
		if r := s.must(400, "GET", gbase+"/graph/search", tokenAcme, nil); r.errorCode() != "invalid_parameter" {
			t.Errorf("search without q: %s", r.body)
		}
		// Both of Globex's relations: open_nodes answers every relation
		// with an end among the entities, as MCP's does.
		s.must(200, "POST", gbase+"/graph/open", tokenAcme, map[string]any{"names": []string{"Bob", "Globex"}}).decode(t, &g)
		if len(g.Entities) != 2 || len(g.Relations) != 2 {
			t.Fatalf("open_nodes = %s", mustJSON(g))
		}

		s.must(204, "DELETE", gbase+"/observations", tokenAcme, map[string]any{"observations": []map[string]any{
			{"entityName": "Bob", "observations": []string{"likes tea"}},
		}})
		s.must(204, "DELETE", gbase+"/relations", tokenAcme, map[string]any{"relations": []map[string]any{
			{"from": "Carol", "to": "Globex", "relationType": "works_at"},
		}})
		s.must(204, "DELETE", gbase+"/entities", tokenAcme, map[string]any{"entityNames": []string{"Carol"}})
		s.must(200, "POST", gbase+"/graph/open", tokenAcme, map[string]any{"names": []string{"Bob", "Globex", "Carol"}}).decode(t, &g)
		if len(g.Entities) != 2 || len(g.Relations) != 1 || !slices.Equal(g.Entities[0].Observations, []string{"speaks Dutch"}) {
			t.Fatalf("after deletes = %s", mustJSON(g))
		}
	})

	t.Run("recall", func(t *testing.T) {
		var rec recallResponse
		s.must(200, "POST", "/v1/recall", tokenAcme, map[string]any{
			"user": "alice", "session": "follow-up", "text": "Where should invoices go, and who owns the Acme Corp renewal?",
			"max_tokens": 1000, "top_k": 5, "hops": 1, "half_life": "720h", "sources": []string{"memories", "graph", "episodes"}, "mmr": 0.7,
			"trace": true,
		}).decode(t, &rec)
		if len(rec.Messages) == 0 || rec.Messages[0].Role != memory.RoleSystem {
			t.Fatalf("recall messages = %s", mustJSON(rec.Messages))
		}
		if !strings.Contains(rec.Preamble, "ap@alice.example") || !strings.Contains(rec.Messages[0].Content, "ap@alice.example") {
			t.Errorf("the preamble lacks the memory: %q", rec.Preamble)
		}
		if !slices.ContainsFunc(rec.Items, func(it wire.Item) bool {
			return it.Source == memory.SourceGraph && it.Fact != nil && it.Fact.Object == "Eve"
		}) {
			t.Errorf("recall lacks the fact: %s", mustJSON(rec.Items))
		}
		if len(rec.Trace.Candidates) == 0 || rec.Trace.Budget != 1000 || rec.Trace.TokensUsed > 1000 || rec.Trace.TookMS <= 0 {
			t.Errorf("trace = %s", mustJSON(rec.Trace))
		}
		// Without "trace": true the answer has no trace (none is built).
		plain := s.must(200, "POST", "/v1/recall", tokenAcme, map[string]any{
			"user": "alice", "session": "follow-up", "text": "Where should invoices go, and who owns the Acme Corp renewal?",
		})
		var fields map[string]json.RawMessage
		plain.decode(t, &fields)
		if _, ok := fields["trace"]; ok || len(fields["items"]) < 3 {
			t.Errorf("a recall without trace answered %s", plain.body)
		}
		if !slices.Contains(rec.Trace.Entities, "Acme Corp") {
			t.Errorf("trace entities = %v", rec.Trace.Entities)
		}
		for _, tc := range []struct{ body, code string }{
			{`{"user":"alice","text":"x","half_life":"a month"}`, "invalid_options"},
			{`{"user":"alice","text":"x","sources":["gossip"]}`, "invalid_options"},
			{`{"user":"alice","text":"x","retrieval":"psychic"}`, "invalid_options"},
			{`{"user":"alice","text":"x","top_k":-1}`, "invalid_options"},
			{`{"text":"x"}`, "invalid_scope"},
			{`{"user":"alice","text":"x","tenant":"globex"}`, "invalid_json"},
		} {
			if r := s.must(400, "POST", "/v1/recall", tokenAcme, tc.body); r.errorCode() != tc.code {
				t.Errorf("recall %s: %s, want code %s", tc.body, r.body, tc.code)
			}
		}
	})

	t.Run("forget", func(t *testing.T) {
		s.must(204, "DELETE", base+"/sessions/renewal", tokenAcme, nil)
		var page messagesResponse
		s.must(200, "GET", base+"/sessions/renewal/messages", tokenAcme, nil).decode(t, &page)
		if len(page.Messages) != 0 {
			t.Fatalf("a forgotten session has %d messages", len(page.Messages))
		}
		// The user's memories stay when only a session goes.
		s.must(200, "GET", base+"/memories/"+memID, tokenAcme, nil)

		s.must(204, "DELETE", base, tokenAcme, nil)
		s.must(404, "GET", base+"/memories/"+memID, tokenAcme, nil)
		var ss sessionsResponse
		s.must(200, "GET", base+"/sessions", tokenAcme, nil).decode(t, &ss)
		if len(ss.Sessions) != 0 {
			t.Fatalf("a forgotten user has sessions %+v", ss)
		}
		var facts factsResponse
		s.must(200, "GET", base+"/facts?history=true", tokenAcme, nil).decode(t, &facts)
		if len(facts.Facts) != 0 {
			t.Fatalf("a forgotten user has facts %+v", facts)
		}
		// Forgetting is idempotent.
		s.must(204, "DELETE", base, tokenAcme, nil)
		// Bob, another user of the tenant, is untouched.
		var g graphResponse
		s.must(200, "GET", "/v1/users/bob/graph", tokenAcme, nil).decode(t, &g)
		if len(g.Entities) != 2 {
			t.Fatalf("bob's graph after forgetting alice = %s", mustJSON(g))
		}
	})
}

func esc(s string) string {
	return strings.NewReplacer("%", "%25", "+", "%2B", " ", "%20", "&", "%26", "=", "%3D", "#", "%23", "?", "%3F").Replace(s)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRequestErrors checks the HTTP-level errors: bodies, parameters,
// unknown routes and methods.
func TestRequestErrors(t *testing.T) {
	s := newTestServer(t, &memory.Options{MaxMessageBytes: 1024}, nil)
	msgs := "/v1/users/alice/sessions/s/messages"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown field", "POST", msgs, `{"messages":[{"role":"user","content":"hi","mood":"happy"}]}`, 400, "invalid_json"},
		{"unknown top-level field", "POST", "/v1/users/alice/memories", `{"text":"x","id":"mine"}`, 400, "invalid_json"},
		{"not JSON", "POST", msgs, `{"messages":`, 400, "invalid_json"},
		{"syntax error", "POST", msgs, `{"messages":[}`, 400, "invalid_json"},
		{"wrong type", "POST", msgs, `{"messages":"hi"}`, 400, "invalid_json"},
		{"two values", "POST", msgs, `{"messages":[{"role":"user","content":"a"}]} {}`, 400, "invalid_json"},
		{"empty body", "POST", msgs, ``, 400, "invalid_json"},
		{"no messages", "POST", msgs, `{"messages":[]}`, 400, "invalid_message"},
		{"bad role", "POST", msgs, `{"messages":[{"role":"robot","content":"a"}]}`, 400, "invalid_message"},
		{"bad time", "POST", msgs, `{"messages":[{"role":"user","content":"a","time":"yesterday"}]}`, 400, "invalid_json"},
		{"message too large", "POST", msgs, `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`, 413, "too_large"},
		{"bad fact", "POST", "/v1/users/alice/facts", `{"subject":"","predicate":"p","object":"o"}`, 400, "invalid_fact"},
		{"bad confidence", "POST", "/v1/users/alice/facts", `{"subject":"s","predicate":"p","object":"o","confidence":2}`, 400, "invalid_fact"},
		{"user id too long", "GET", "/v1/users/" + strings.Repeat("u", 300) + "/sessions", ``, 400, "invalid_scope"},
		{"limit not a number", "GET", msgs + "?limit=ten", ``, 400, "invalid_parameter"},
		{"limit negative", "GET", msgs + "?limit=-1", ``, 400, "invalid_parameter"},
		{"limit too large", "GET", msgs + "?limit=1001", ``, 400, "invalid_parameter"},
		{"limit twice", "GET", msgs + "?limit=1&limit=2", ``, 400, "invalid_parameter"},
		{"bad time parameter", "GET", msgs + "?since=yesterday", ``, 400, "invalid_parameter"},
		{"bad bool", "GET", msgs + "?reverse=maybe", ``, 400, "invalid_parameter"},
		{"bad cursor", "GET", "/v1/users/alice/graph?cursor=garbage", ``, 400, "invalid_cursor"},
		{"traverse limit", "POST", "/v1/users/alice/traverse", `{"from":["a"],"limit":100000}`, 400, "invalid_query"},
		{"unknown route", "GET", "/v1/nothing", ``, 404, "not_found"},
		{"unknown user route", "GET", "/v1/users/alice/nothing", ``, 404, "not_found"},
		{"missing memory", "DELETE", "/v1/users/alice/memories/01JNOSUCHMEMORY0000000000", ``, 404, "not_found"},
		{"update missing memory", "PUT", "/v1/users/alice/memories/01JNOSUCHMEMORY0000000000", `{"text":"x"}`, 404, "not_found"},
		{"wrong method", "PATCH", "/v1/users/alice/memories", `{}`, 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" || tc.method == "POST" {
				body = tc.body
			}
			r := s.call(tc.method, tc.path, tokenAcme, body)
			if r.status != tc.status || r.errorCode() != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.code)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var e errorBody
			r.decode(t, &e)
			if e.Error.Message == "" {
				t.Errorf("no message: %s", r.body)
			}
		})
	}

	t.Run("405 says what is allowed", func(t *testing.T) {
		r := s.call("PATCH", "/v1/users/alice/memories", tokenAcme, "{}")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
			t.Errorf("Allow = %q", allow)
		}
	})

	t.Run("content type", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.url+msgs, strings.NewReader(`{"messages":[{"role":"user","content":"a"}]}`))
		req.Header.Set("Authorization", "Bearer "+tokenAcme)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("text/plain body = %d", resp.StatusCode)
		}
		// application/json with a charset is JSON.
		req, _ = http.NewRequest("POST", s.url+msgs, strings.NewReader(`{"messages":[{"role":"user","content":"a"}]}`))
		req.Header.Set("Authorization", "Bearer "+tokenAcme)
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		resp, err = s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("application/json; charset=utf-8 = %d", resp.StatusCode)
		}
	})
}

// TestForgetNeedsIDs makes sure no request forgets more than it names: an
// empty session or user never widens a forget to the user or tenant.
func TestForgetNeedsIDs(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(201, "POST", "/v1/users/alice/sessions/s1/messages", tokenAcme, `{"messages":[{"role":"user","content":"keep me"}]}`)
	for _, path := range []string{"/v1/users/alice/sessions/", "/v1/users/alice/sessions//", "/v1/users/", "/v1/users//sessions/s1", "/v1/users"} {
		r := s.call("DELETE", path, tokenAcme, nil)
		if r.status == http.StatusNoContent {
			t.Errorf("DELETE %s = 204", path)
		}
	}
	var page messagesResponse
	s.must(200, "GET", "/v1/users/alice/sessions/s1/messages", tokenAcme, nil).decode(t, &page)
	if len(page.Messages) != 1 {
		t.Fatalf("messages after the deletes = %d", len(page.Messages))
	}

}
