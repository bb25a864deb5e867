package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// sharedSecret is in every kind of record acme writes to its shared
// partition in these tests.
const sharedSecret = "Quokka4419"

// writeShared stores a shared memory, fact and entity with sharedSecret
// through acme's token, and returns the memory and the fact's id.
func writeShared(t *testing.T, s *testServer) (memory.Memory, string) {
	t.Helper()
	var mem memory.Memory
	s.must(201, "POST", "/v1/shared/memories", tokenAcme, map[string]any{"text": "The office wifi password is " + sharedSecret}).decode(t, &mem)
	var f memory.Fact
	s.must(201, "POST", "/v1/shared/facts", tokenAcme, map[string]any{"subject": "Office", "predicate": "wifi_password", "object": sharedSecret}).decode(t, &f)
	s.must(201, "POST", "/v1/shared/entities", tokenAcme, map[string]any{"entities": []map[string]any{
		{"name": sharedSecret, "entityType": "password", "observations": []string{"opens the office wifi " + sharedSecret}},
	}})
	return mem, f.ID
}

// TestSharedTenantIsolation: a tenant's shared memories and graph are the
// tenant's alone. Globex's token reads nothing of acme's shared partition
// by listing, by id, by search, by traversal or by recall (shared: true),
// changes and erases nothing of it, and what globex writes to its own
// shared partition never reaches acme's.
func TestSharedTenantIsolation(t *testing.T) {
	s := newTestServer(t, nil, nil)
	mem, factID := writeShared(t, s)
	const p = "/v1/shared"

	reads := []struct{ method, path, body string }{
		{"GET", p + "/memories", ""},
		{"GET", p + "/memories?kind=fact", ""},
		{"GET", p + "/memories/" + mem.ID, ""},
		{"GET", p + "/memories/" + mem.ID + "/history", ""},
		{"PUT", p + "/memories/" + mem.ID, `{"text":"overwritten"}`},
		{"GET", p + "/facts?history=true", ""},
		{"GET", p + "/facts?subject=Office", ""},
		{"POST", p + "/traverse", `{"from":["Office","` + sharedSecret + `"],"max_hops":3}`},
		{"GET", p + "/graph", ""},
		{"GET", p + "/graph/search?q=wifi", ""},
		{"POST", p + "/graph/open", `{"names":["Office","` + sharedSecret + `"]}`},
		{"POST", p + "/observations", `{"observations":[{"entityName":"` + sharedSecret + `","contents":["x"]}]}`},
		{"POST", "/v1/recall", `{"user":"alice","text":"What is the wifi password?","shared":true}`},
		{"POST", "/v1/recall", `{"user":"alice","text":"wifi password","sources":["shared"]}`},
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
		if !strings.Contains(rd.path+rd.body, sharedSecret) && strings.Contains(string(r.body), sharedSecret) {
			t.Errorf("globex %s %s shows acme's shared data: %s", rd.method, rd.path, r.body)
		}
	}
	var walk traversalResponse
	s.must(200, "POST", p+"/traverse", tokenGlobex, `{"from":["Office","`+sharedSecret+`"],"max_hops":3}`).decode(t, &walk)
	var opened graphResponse
	s.must(200, "POST", p+"/graph/open", tokenGlobex, `{"names":["Office","`+sharedSecret+`"]}`).decode(t, &opened)
	if len(walk.Steps)+len(opened.Entities) != 0 {
		t.Fatalf("globex reaches acme's shared graph: traverse %v, open %v", walk, opened)
	}
	for _, rd := range []struct {
		method, path string
		body         any
	}{
		{"GET", p + "/memories/" + mem.ID, nil},
		{"GET", p + "/memories/" + mem.ID + "/history", nil},
		{"PUT", p + "/memories/" + mem.ID, `{"text":"overwritten by globex"}`},
		{"DELETE", p + "/memories/" + mem.ID, nil},
		{"DELETE", p + "/facts/" + factID, nil},
	} {
		if r := s.call(rd.method, rd.path, tokenGlobex, rd.body); r.status != 404 {
			t.Errorf("globex %s %s = %d, want 404: %s", rd.method, rd.path, r.status, r.body)
		}
	}
	// Globex's own shared writes and deletes stay in globex.
	s.must(201, "POST", p+"/memories", tokenGlobex, `{"text":"globex shared memory"}`)
	s.must(201, "POST", p+"/facts", tokenGlobex, `{"subject":"Office","predicate":"wifi_password","object":"0000"}`)
	s.must(204, "DELETE", p+"/entities", tokenGlobex, `{"entityNames":["`+sharedSecret+`","Office"]}`)
	s.must(204, "DELETE", p+"/relations", tokenGlobex, `{"relations":[{"from":"Office","to":"`+sharedSecret+`","relationType":"wifi_password"}]}`)

	for _, tok := range []string{tokenAcme, tokenAcme2} {
		var ms memoriesResponse
		s.must(200, "GET", p+"/memories", tok, nil).decode(t, &ms)
		if len(ms.Memories) != 1 || ms.Memories[0].ID != mem.ID {
			t.Fatalf("acme's shared memories = %+v", ms)
		}
		var facts factsResponse
		s.must(200, "GET", p+"/facts?subject=Office", tok, nil).decode(t, &facts)
		if len(facts.Facts) != 1 || facts.Facts[0].Object != sharedSecret {
			t.Fatalf("acme's shared facts = %+v", facts)
		}
		var g graphResponse
		s.must(200, "GET", p+"/graph/search?q=wifi", tok, nil).decode(t, &g)
		if len(g.Entities) != 1 {
			t.Fatalf("acme's shared graph = %+v", g)
		}
	}
}

// TestSharedApartFromUsers: the shared partition and a user's are apart.
// Shared data is in no user's listing, graph or default recall, and a
// user's in no shared listing or graph; an id of one is not found in the
// other; the shared partition is no user of GET /v1/users; a user's recall
// draws on the shared memories when asked (shared: true, or the source
// shared); and forgetting the user leaves the shared data whole.
func TestSharedApartFromUsers(t *testing.T) {
	s := newTestServer(t, nil, nil)
	shared, _ := writeShared(t, s)
	const u = "/v1/users/alice"
	var own memory.Memory
	s.must(201, "POST", u+"/memories", tokenAcme, `{"text":"Alice's locker code is 5512"}`).decode(t, &own)
	s.must(201, "POST", u+"/facts", tokenAcme, `{"subject":"Alice","predicate":"locker","object":"5512"}`)
	s.must(201, "POST", u+"/entities", tokenAcme, `{"entities":[{"name":"Locker","entityType":"thing","observations":["code 5512"]}]}`)

	listed := func(path string) string {
		var ms memoriesResponse
		s.must(200, "GET", path+"/memories", tokenAcme, nil).decode(t, &ms)
		var facts factsResponse
		s.must(200, "GET", path+"/facts?history=true", tokenAcme, nil).decode(t, &facts)
		r := s.must(200, "GET", path+"/graph", tokenAcme, nil)
		return mustJSON(ms) + mustJSON(facts) + string(r.body)
	}
	if got := listed(u); strings.Contains(got, sharedSecret) || !strings.Contains(got, "5512") {
		t.Errorf("alice's listings: %s", got)
	}
	if got := listed("/v1/shared"); strings.Contains(got, "5512") || !strings.Contains(got, sharedSecret) {
		t.Errorf("shared listings: %s", got)
	}
	s.must(404, "GET", u+"/memories/"+shared.ID, tokenAcme, nil)
	s.must(404, "GET", "/v1/shared/memories/"+own.ID, tokenAcme, nil)
	s.must(404, "DELETE", "/v1/shared/memories/"+own.ID, tokenAcme, nil)

	var users usersResponse
	s.must(200, "GET", "/v1/users", tokenAcme, nil).decode(t, &users)
	if len(users.Users) != 1 || users.Users[0].User != "alice" {
		t.Errorf("users = %+v, want alice alone", users.Users)
	}

	recall := func(body string) string {
		var rec recallResponse
		s.must(200, "POST", "/v1/recall", tokenAcme, body).decode(t, &rec)
		var b strings.Builder
		for _, it := range rec.Items {
			b.WriteString(string(it.Source) + ":" + it.Text + "\n")
		}
		return b.String()
	}
	if got := recall(`{"user":"alice","text":"wifi password"}`); strings.Contains(got, sharedSecret) {
		t.Errorf("a default recall draws on shared memories: %s", got)
	}
	for _, body := range []string{
		`{"user":"alice","text":"wifi password","shared":true}`,
		`{"user":"alice","text":"wifi password","sources":["shared"]}`,
		`{"user":"alice","text":"wifi password","sources":["memories"],"shared":true}`,
	} {
		if got := recall(body); !strings.Contains(got, "shared:The office wifi password is "+sharedSecret) {
			t.Errorf("recall %s: %s", body, got)
		}
	}

	s.must(204, "DELETE", u, tokenAcme, nil)
	if got := listed("/v1/shared"); !strings.Contains(got, "The office wifi password") || !strings.Contains(got, `"object":"`+sharedSecret) ||
		!strings.Contains(got, "opens the office wifi") {
		t.Errorf("shared listings after forgetting alice: %s", got)
	}
	if got := listed(u); strings.Contains(got, "5512") {
		t.Errorf("alice after forgetting: %s", got)
	}
}

// TestSharedTenantFromTokenOnly: a tenant named in a request to
// /v1/shared/ never moves it: headers are ignored, and a tenant in the
// query or the body is refused as an unknown parameter or field.
func TestSharedTenantFromTokenOnly(t *testing.T) {
	s := newTestServer(t, nil, nil)
	send := func(method, path, body string) response {
		req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokenGlobex)
		req.Header.Set("Content-Type", "application/json")
		for _, h := range []string{"X-Engram-Tenant", "Tenant", "X-Tenant"} {
			req.Header.Set(h, "acme")
		}
		return s.do(req)
	}
	if r := send("POST", "/v1/shared/memories", `{"text":"from globex"}`); r.status != 201 {
		t.Fatalf("shared remember with tenant headers = %d %s", r.status, r.body)
	}
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/v1/shared/memories?tenant=acme", ""},
		{"GET", "/v1/shared/graph?tenant=acme", ""},
		{"POST", "/v1/shared/memories", `{"text":"planted","tenant":"acme"}`},
		{"POST", "/v1/shared/facts", `{"subject":"a","predicate":"b","object":"c","tenant":"acme"}`},
		{"POST", "/v1/recall", `{"tenant":"acme","user":"alice","text":"x","shared":true}`},
	} {
		if r := send(rq.method, rq.path, rq.body); r.status != http.StatusBadRequest {
			t.Errorf("%s %s %s = %d %s, want 400", rq.method, rq.path, rq.body, r.status, r.body)
		}
	}
	for tenant, want := range map[string]int{"acme": 0, "globex": 1} {
		ms, err := s.store.Memories(t.Context(), memory.Scope{Tenant: tenant}, memory.MemoriesOptions{})
		if err != nil || len(ms) != want {
			t.Errorf("%s's shared memories = %v, %v; want %d", tenant, ms, err, want)
		}
	}
}

// TestSharedPartition: with a router, every route under /v1/shared/ is
// routed by the token's tenant's shared partition, never a user's.
func TestSharedPartition(t *testing.T) {
	h := allRoutes(t)
	want := memory.Partition(memory.Scope{Tenant: "acme"})
	n := 0
	for _, rt := range h.routes {
		if !strings.HasPrefix(rt.path, sharedPrefix) {
			continue
		}
		n++
		part := h.partitionOf(rt)
		if part == nil {
			t.Errorf("%s %s: no partition", rt.method, rt.path)
			continue
		}
		r := httptest.NewRequest(rt.method, strings.ReplaceAll(rt.path, "{id}", "x"), nil)
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, "acme"))
		if got, ok := part(r); !ok || !bytes.Equal(got, want) {
			t.Errorf("%s %s: partition %q, %v; want %q", rt.method, rt.path, got, ok, want)
		}
	}
	if n != 19 {
		t.Errorf("%d shared routes, want 19", n)
	}
}

// TestEmptyUserNeverShared: a user route reached with an empty {user}
// (the mux matches none; this is the handler's own lock) is refused, and
// never works on the shared partition, whose scope is the tenant's alone:
// DELETE /v1/users/{user}/memories/{id} with the id of a shared memory
// leaves it, and so does every other user route.
func TestEmptyUserNeverShared(t *testing.T) {
	s := newTestServer(t, nil, nil)
	mem, _ := writeShared(t, s)
	n := 0
	for _, rt := range s.h.routes {
		if !strings.Contains(rt.path, "{user}") {
			continue
		}
		n++
		r := httptest.NewRequest(rt.method, "/v1/users/x", strings.NewReader(`{"text":"overwritten"}`))
		r.Header.Set("Authorization", "Bearer "+tokenAcme)
		r.Header.Set("Content-Type", "application/json")
		r.SetPathValue("user", "")
		r.SetPathValue("session", "s")
		r.SetPathValue("id", mem.ID)
		w := httptest.NewRecorder()
		s.h.wrap(rt).ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s %s with an empty user = %d %s", rt.method, rt.path, w.Code, w.Body)
		}
	}
	if n < 20 {
		t.Errorf("%d user routes", n)
	}
	got, err := s.store.Memory(t.Context(), memory.Scope{Tenant: "acme"}, mem.ID)
	if err != nil || got.Text != mem.Text {
		t.Fatalf("acme's shared memory after the refused calls = %+v, %v", got, err)
	}
}
