package httpapi

import (
	"net/http"
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
		"sources": []string{"memories", "episodes", "graph"}, "trace": true}).decode(t, &rec)
	if rec.Trace == nil {
		t.Fatal("a recall with trace true answered no trace")
	}
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

// TestTenantFromTokenOnly: a tenant named in the request, in a header, the
// query or the body, never moves a call to that tenant. Headers are ignored
// (globex's token writes and reads globex's alice whatever it sends); a
// tenant in the query or the body is refused as an unknown parameter or
// field. The acme user whose id the requests carry has nothing written.
func TestTenantFromTokenOnly(t *testing.T) {
	s := newTestServer(t, nil, nil)
	const u = "/v1/users/alice"
	headers := []string{"X-Engram-Tenant", "Tenant", "X-Tenant", "X-Tenant-Id"}
	send := func(method, path, body string) response {
		req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokenGlobex)
		req.Header.Set("Content-Type", "application/json")
		for _, h := range headers {
			req.Header.Set(h, "acme")
		}
		return s.do(req)
	}
	writes := []struct{ method, path, body string }{
		{"POST", u + "/sessions/s/messages", `{"messages":[{"role":"user","content":"from globex"}]}`},
		{"POST", u + "/memories", `{"text":"globex memory"}`},
		{"POST", u + "/facts", `{"subject":"Globex","predicate":"p","object":"o"}`},
	}
	for _, w := range writes {
		if r := send(w.method, w.path, w.body); r.status != http.StatusCreated {
			t.Fatalf("%s %s with tenant headers = %d %s", w.method, w.path, r.status, r.body)
		}
	}
	var page memoriesResponse
	if r := send("GET", u+"/memories", ""); r.status != 200 {
		t.Fatalf("list = %d %s", r.status, r.body)
	} else {
		r.decode(t, &page)
	}
	if len(page.Memories) != 1 || page.Memories[0].Text != "globex memory" {
		t.Errorf("globex's list with tenant headers = %v", page.Memories)
	}
	refused := []struct{ method, path, body string }{
		{"GET", u + "/memories?tenant=acme", ""},
		{"GET", u + "/sessions/s/messages?tenant=acme", ""},
		{"DELETE", u + "?tenant=acme", ""},
		{"POST", u + "/memories", `{"text":"planted","tenant":"acme"}`},
		{"POST", u + "/sessions/s/messages", `{"tenant":"acme","messages":[{"role":"user","content":"planted"}]}`},
		{"POST", "/v1/recall", `{"tenant":"acme","user":"alice","text":"x"}`},
	}
	for _, rq := range refused {
		if r := send(rq.method, rq.path, rq.body); r.status != http.StatusBadRequest {
			t.Errorf("%s %s %s = %d %s, want 400", rq.method, rq.path, rq.body, r.status, r.body)
		}
	}
	for _, sc := range []memory.Scope{{Tenant: "acme", User: "alice"}, {Tenant: "acme"}} {
		users, err := s.store.Users(t.Context(), sc, memory.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 0 {
			t.Errorf("acme has users %q after globex's requests naming acme", users)
		}
	}
	users, err := s.store.Users(t.Context(), memory.Scope{Tenant: "globex"}, memory.ListOptions{})
	if err != nil || len(users) != 1 {
		t.Errorf("globex users = %q, %v", users, err)
	}
}

// TestUnknownQueryParameters: a query parameter a route does not take is
// 400 invalid_parameter, as an unknown JSON field is, not ignored: a
// misspelt limit= or as_of= would otherwise answer as if left out.
func TestUnknownQueryParameters(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(201, "POST", "/v1/users/alice/memories", tokenAcme, `{"text":"x"}`)
	for _, p := range []string{
		"/v1/users?limt=5",
		"/v1/users/alice/memories?limit=5&kinds=fact",
		"/v1/users/alice/facts?asof=2026-01-01T00:00:00Z",
		"/v1/users/alice/sessions/s/messages?revers=true",
		"/v1/users/alice/sessions/s/window?max_token=10",
		"/v1/users/alice/graph/search?query=x",
		"/v1/users/alice/memories/01ARZ3NDEKTSV4RRFFQ69G5FAV?x=1",
	} {
		r := s.call("GET", p, tokenAcme, nil)
		if r.status != http.StatusBadRequest || r.errorCode() != "invalid_parameter" {
			t.Errorf("GET %s = %d %s, want 400 invalid_parameter", p, r.status, r.body)
		}
	}
	s.must(400, "POST", "/v1/users/alice/memories?agent=x", tokenAcme, `{"text":"y"}`)
	s.must(400, "POST", "/v1/recall?user=alice", tokenAcme, `{"user":"alice","text":"y"}`)
	// The parameters a route takes still work, and public routes are
	// left alone.
	s.must(200, "GET", "/v1/users/alice/memories?limit=5&kind=fact&tag=&after=", tokenAcme, nil)
	s.must(200, "GET", "/v1/users/alice/graph/search?q=x&limit=3", tokenAcme, nil)
	s.must(200, "GET", "/healthz?verbose=1", "", nil)
}
