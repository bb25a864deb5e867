package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestListUsers: GET /v1/users lists the token's tenant's users with
// their counts, a page at a time, and never another tenant's.
func TestListUsers(t *testing.T) {
	s := newTestServer(t, nil, nil)
	ctx := context.Background()
	for _, u := range []string{"carol", "alice", "bob"} {
		if err := s.store.Session(memory.Scope{Tenant: "acme", User: u, Session: "s1"}).Append(ctx,
			memory.Message{Role: memory.RoleUser, Content: "hello from " + u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.store.Remember(ctx, memory.Scope{Tenant: "acme", User: "alice"}, memory.Memory{Kind: memory.KindFact, Text: "likes tea"}); err != nil {
		t.Fatal(err)
	}
	if err := s.store.Session(memory.Scope{Tenant: "globex", User: "mallory", Session: "s1"}).Append(ctx,
		memory.Message{Role: memory.RoleUser, Content: "globex"}); err != nil {
		t.Fatal(err)
	}

	var page usersResponse
	s.must(http.StatusOK, "GET", "/v1/users?limit=2", tokenAcme, nil).decode(t, &page)
	if len(page.Users) != 2 || page.Users[0].User != "alice" || page.Users[1].User != "bob" || page.Next != "bob" {
		t.Fatalf("first page %+v, want alice and bob, next bob", page)
	}
	if u := page.Users[0].Usage; u.Sessions != 1 || u.Messages != 1 || u.Memories != 1 || u.Bytes == 0 {
		t.Errorf("alice's usage %+v, want 1 session, 1 message, 1 memory and some bytes", u)
	}
	s.must(http.StatusOK, "GET", "/v1/users?limit=2&after=bob", tokenAcme, nil).decode(t, &page)
	if len(page.Users) != 1 || page.Users[0].User != "carol" || page.Next != "" {
		t.Fatalf("second page %+v, want carol alone", page)
	}
	s.must(http.StatusOK, "GET", "/v1/users", tokenGlobex, nil).decode(t, &page)
	if len(page.Users) != 1 || page.Users[0].User != "mallory" {
		t.Fatalf("globex sees %+v, want mallory alone", page)
	}
	if code := s.must(http.StatusBadRequest, "GET", "/v1/users?limit=51", tokenAcme, nil).errorCode(); code == "" {
		t.Error("a page over the bound has no error code")
	}
	s.must(http.StatusUnauthorized, "GET", "/v1/users", "", nil)
}
