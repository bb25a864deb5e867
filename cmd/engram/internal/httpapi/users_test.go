package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
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

// TestListUsersRoundTrips: on PostgreSQL a page of GET /v1/users costs a
// few round trips whatever the users hold and however many are on the
// page (issue 26: each user's usage read every value over 512 bytes, one
// round trip each, and each user cost a listing seek and a scan of its
// own: 2.6 to 4.7 s for 24 users). The usage is what Store.Usage counts.
func TestListUsersRoundTrips(t *testing.T) {
	dsn, schema := kvtest.PostgresSchema(t, "h_")
	s := newTestServer(t, &memory.Options{Extraction: memory.ExtractOff, Postgres: &memory.PostgresOptions{DSN: dsn, Schema: schema}}, nil)
	ctx := context.Background()
	const users = 12
	long := strings.Repeat("the renewal is due in March. ", 40)
	for u := range users {
		msgs := make([]memory.Message, 10)
		for i := range msgs {
			msgs[i] = memory.Message{Role: memory.RoleUser, Content: fmt.Sprintf("%d: %s", i, long)}
		}
		if err := s.store.Session(memory.Scope{Tenant: "acme", User: fmt.Sprintf("u%02d", u), Session: "s1"}).Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	before := s.store.Cluster().Traffic().RoundTrips
	var page usersResponse
	s.must(http.StatusOK, "GET", fmt.Sprintf("/v1/users?limit=%d", users), tokenAcme, nil).decode(t, &page)
	// Lease renewals in the background may add one or two.
	if n := s.store.Cluster().Traffic().RoundTrips - before; n > 8 {
		t.Errorf("a page of %d users took %d round trips", users, n)
	}
	if len(page.Users) != users {
		t.Fatalf("%d users listed, want %d", len(page.Users), users)
	}
	for _, e := range page.Users {
		want, err := s.store.Usage(ctx, memory.Scope{Tenant: "acme", User: e.User})
		if err != nil {
			t.Fatal(err)
		}
		if e.Usage != want || want.Messages != 10 {
			t.Errorf("%s: usage %+v, want %+v", e.User, e.Usage, want)
		}
	}
}
