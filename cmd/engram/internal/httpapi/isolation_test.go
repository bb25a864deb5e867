package httpapi

import (
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestTenantIsolation: the same user and session names in two tenants are
// two users. Globex's token cannot read, change or erase anything acme wrote
// for "alice", by listing, by id, by search or by recall, and what globex
// writes for its own "alice" never reaches acme.
func TestTenantIsolation(t *testing.T) {
	s := newTestServer(t, nil, nil)
	const secret = "Zanzibar7731" // in every kind of acme record
	const u = "/v1/users/alice"

	var app appendResponse
	s.must(201, "POST", u+"/sessions/s1/messages", tokenAcme, map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "My vault code is " + secret}},
		"facts":    []map[string]any{{"subject": "Alice", "predicate": "vault_code", "object": secret}},
	}).decode(t, &app)
	var mem memory.Memory
	s.must(201, "POST", u+"/memories", tokenAcme, map[string]any{"text": "Alice's vault code is " + secret}).decode(t, &mem)
	s.must(201, "POST", u+"/entities", tokenAcme, map[string]any{"entities": []map[string]any{
		{"name": secret, "entityType": "code", "observations": []string{"opens the vault " + secret}},
	}})
	factID := app.Facts[0].ID

	// What globex sees of "alice": nothing of acme's.
	reads := []struct{ method, path, body string }{
		{"GET", u + "/sessions", ""},
		{"GET", u + "/sessions/s1/messages", ""},
		{"GET", u + "/sessions/s1/messages?reverse=true", ""},
		{"GET", u + "/sessions/s1/window", ""},
		{"GET", u + "/memories", ""},
		{"GET", u + "/memories?kind=fact", ""},
		{"GET", u + "/memories/" + mem.ID, ""},
		{"GET", u + "/memories/" + mem.ID + "/history", ""},
		{"PUT", u + "/memories/" + mem.ID, `{"text":"overwritten"}`},
		{"GET", u + "/facts?history=true", ""},
		{"GET", u + "/facts?subject=Alice", ""},
		{"POST", u + "/traverse", `{"from":["Alice","` + secret + `"],"max_hops":3}`},
		{"GET", u + "/graph", ""},
		{"GET", u + "/graph/search?q=" + secret, ""},
		{"GET", u + "/graph/search?q=vault", ""},
		{"POST", u + "/graph/open", `{"names":["Alice","` + secret + `"]}`},
		{"POST", u + "/observations", `{"observations":[{"entityName":"` + secret + `","observations":["x"]}]}`},
		{"POST", "/v1/recall", `{"user":"alice","session":"s1","text":"What is the vault code? ` + secret + `","sources":["memories","episodes","graph"]}`},
	}
	for _, rd := range reads {
		var body any
		if rd.body != "" {
			body = rd.body
		}
		r := s.call(rd.method, rd.path, tokenGlobex, body)
		if r.status >= 500 || r.status == 401 {
			t.Errorf("globex %s %s = %d %s", rd.method, rd.path, r.status, r.body)
		}
		// A response may echo the request (an error naming the entity
		// asked for); otherwise the secret, which only acme's records
		// hold, must not appear. Requests that name it are checked by
		// their decoded answers below.
		if !strings.Contains(rd.path+rd.body, secret) && strings.Contains(string(r.body), secret) {
			t.Errorf("globex %s %s shows acme's data: %s", rd.method, rd.path, r.body)
		}
	}
	var walk traversalResponse
	s.must(200, "POST", u+"/traverse", tokenGlobex, `{"from":["Alice","`+secret+`"],"max_hops":3}`).decode(t, &walk)
	var found, opened graphResponse
	s.must(200, "GET", u+"/graph/search?q="+secret, tokenGlobex, nil).decode(t, &found)
	s.must(200, "POST", u+"/graph/open", tokenGlobex, `{"names":["Alice","`+secret+`"]}`).decode(t, &opened)
	if len(walk.Steps)+len(found.Entities)+len(opened.Entities) != 0 {
		t.Fatalf("globex reaches acme's graph: traverse %v, search %v, open %v", walk, found, opened)
	}
	if r := s.must(404, "POST", u+"/observations", tokenGlobex, `{"observations":[{"entityName":"`+secret+`","observations":["x"]}]}`); r.errorCode() != "entity_not_found" {
		t.Errorf("globex adds observations to acme's entity: %s", r.body)
	}
	// By id, acme's records do not exist for globex.
	for _, rd := range []struct {
		method, path string
		body         any
	}{
		{"GET", u + "/memories/" + mem.ID, nil},
		{"GET", u + "/memories/" + mem.ID + "/history", nil},
		{"PUT", u + "/memories/" + mem.ID, `{"text":"overwritten by globex"}`},
		{"DELETE", u + "/memories/" + mem.ID, nil},
		{"DELETE", u + "/facts/" + factID, nil},
	} {
		if r := s.call(rd.method, rd.path, tokenGlobex, rd.body); r.status != 404 {
			t.Errorf("globex %s %s = %d, want 404: %s", rd.method, rd.path, r.status, r.body)
		}
	}
	// Listings are empty.
	var ss sessionsResponse
	s.must(200, "GET", u+"/sessions", tokenGlobex, nil).decode(t, &ss)
	var ms memoriesResponse
	s.must(200, "GET", u+"/memories", tokenGlobex, nil).decode(t, &ms)
	var g graphResponse
	s.must(200, "GET", u+"/graph", tokenGlobex, nil).decode(t, &g)
	var rec recallResponse
	s.must(200, "POST", "/v1/recall", tokenGlobex, map[string]any{"user": "alice", "session": "s1", "text": "vault code " + secret,
		"sources": []string{"memories", "episodes", "graph"}}).decode(t, &rec)
	if len(ss.Sessions)+len(ms.Memories)+len(g.Entities)+len(g.Relations)+len(rec.Items)+len(rec.Trace.Candidates) != 0 {
		t.Fatalf("globex sees sessions %v, memories %v, graph %v, recall %v", ss, ms, g, rec)
	}

	// Globex's writes and erasures stay in globex.
	s.must(201, "POST", u+"/sessions/s1/messages", tokenGlobex, `{"messages":[{"role":"user","content":"globex alice"}]}`)
	s.must(201, "POST", u+"/memories", tokenGlobex, `{"text":"globex alice memory"}`)
	s.must(201, "POST", u+"/facts", tokenGlobex, `{"subject":"Alice","predicate":"vault_code","object":"0000"}`)
	s.must(204, "DELETE", u+"/sessions/s1", tokenGlobex, nil)
	s.must(204, "DELETE", u, tokenGlobex, nil)

	// Acme's alice is whole, through either of acme's tokens.
	for _, tok := range []string{tokenAcme, tokenAcme2} {
		var page messagesResponse
		s.must(200, "GET", u+"/sessions/s1/messages", tok, nil).decode(t, &page)
		if len(page.Messages) != 1 || !strings.Contains(page.Messages[0].Content, secret) {
			t.Fatalf("acme's messages = %+v", page)
		}
		var got memory.Memory
		s.must(200, "GET", u+"/memories/"+mem.ID, tok, nil).decode(t, &got)
		if got.Text != mem.Text {
			t.Fatalf("acme's memory = %+v", got)
		}
		var facts factsResponse
		s.must(200, "GET", u+"/facts?subject=Alice", tok, nil).decode(t, &facts)
		if len(facts.Facts) != 1 || facts.Facts[0].Object != secret {
			t.Fatalf("acme's facts = %+v", facts)
		}
		var g graphResponse
		s.must(200, "GET", u+"/graph/search?q=vault", tok, nil).decode(t, &g)
		if len(g.Entities) != 1 {
			t.Fatalf("acme's graph = %+v", g)
		}
		var ms memoriesResponse
		s.must(200, "GET", u+"/memories", tok, nil).decode(t, &ms)
		if len(ms.Memories) != 1 {
			t.Fatalf("acme sees %d memories, want its 1", len(ms.Memories))
		}
	}
}
