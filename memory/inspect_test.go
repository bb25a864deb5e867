package memory

import (
	"errors"
	"slices"
	"testing"
)

// seedInspect writes two tenants: acme with alice (two sessions, memories,
// a graph) and bob (one session), plus a shared memory; globex with carol.
func seedInspect(t *testing.T, s *Store) {
	t.Helper()
	acmeAlice := Scope{Tenant: "acme", User: "alice"}
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "s1"}), sys("be brief"), user("hi"), asst("hello"))
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "s2"}), user("again"))
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "bob", Session: "b1"}), user("bob here"))
	mustAppend(t, s.Session(Scope{Tenant: "globex", User: "carol", Session: "c1"}), user("carol here"))
	id := mustRemember(t, s, acmeAlice, Memory{Text: "Alice's account is 3942"})
	if _, err := s.UpdateMemory(bg, acmeAlice, id, Memory{Text: "Alice's account is 3943"}); err != nil {
		t.Fatal(err)
	}
	mustRemember(t, s, acmeAlice, Memory{Kind: KindPreference, Text: "Alice prefers email"})
	mustRemember(t, s, Scope{Tenant: "acme"}, Memory{Text: "Acme's office closes at six"})
	for _, f := range []Fact{
		{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"},
		{Subject: "Dana", Predicate: "works_at", Object: "Acme"},
	} {
		if _, err := s.Relate(bg, acmeAlice, f); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTenantsAndUsers(t *testing.T) {
	s := openMem(t, nil)
	if got, err := s.Tenants(bg, ListOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("Tenants of an empty store = %v, %v", got, err)
	}
	seedInspect(t, s)
	tenants, err := s.Tenants(bg, ListOptions{})
	if err != nil || !slices.Equal(tenants, []string{"acme", "globex"}) {
		t.Fatalf("Tenants = %v, %v", tenants, err)
	}
	page, err := s.Tenants(bg, ListOptions{After: "acme", Limit: 1})
	if err != nil || !slices.Equal(page, []string{"globex"}) {
		t.Fatalf("Tenants after acme = %v, %v", page, err)
	}
	users, err := s.Users(bg, Scope{Tenant: "acme", User: "ignored"}, ListOptions{})
	if err != nil || !slices.Equal(users, []string{"alice", "bob"}) {
		t.Fatalf("Users(acme) = %v, %v", users, err)
	}
	if users, err := s.Users(bg, Scope{Tenant: "acme"}, ListOptions{Limit: 1}); err != nil || !slices.Equal(users, []string{"alice"}) {
		t.Fatalf("Users(acme, limit 1) = %v, %v", users, err)
	}
	if users, err := s.Users(bg, Scope{Tenant: "nobody"}, ListOptions{}); err != nil || len(users) != 0 {
		t.Fatalf("Users of an unknown tenant = %v, %v", users, err)
	}
	if _, err := s.Users(bg, Scope{}, ListOptions{}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("Users without a tenant: %v, want ErrInvalidScope", err)
	}
	if _, err := s.Tenants(bg, ListOptions{Limit: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative limit: %v, want ErrInvalidOptions", err)
	}
	// A forgotten user leaves the list.
	if err := s.Forget(bg, Scope{Tenant: "acme", User: "bob"}); err != nil {
		t.Fatal(err)
	}
	if users, _ := s.Users(bg, Scope{Tenant: "acme"}, ListOptions{}); !slices.Equal(users, []string{"alice"}) {
		t.Errorf("Users after forgetting bob = %v", users)
	}
}

func TestUsage(t *testing.T) {
	s := openMem(t, nil)
	seedInspect(t, s)
	tests := []struct {
		scope Scope
		want  Usage
	}{
		{Scope{Tenant: "acme"}, Usage{Users: 2, Sessions: 3, Messages: 5, Memories: 3, Versions: 1, Entities: 3, Facts: 2}},
		{Scope{Tenant: "acme", User: "alice"}, Usage{Sessions: 2, Messages: 4, Memories: 2, Versions: 1, Entities: 3, Facts: 2}},
		{Scope{Tenant: "acme", User: "alice", Session: "s1"}, Usage{Sessions: 1, Messages: 3}},
		{Scope{Tenant: "globex"}, Usage{Users: 1, Sessions: 1, Messages: 1}},
		{Scope{Tenant: "none"}, Usage{}},
	}
	for _, tt := range tests {
		got, err := s.Usage(bg, tt.scope)
		if err != nil {
			t.Fatalf("Usage(%+v): %v", tt.scope, err)
		}
		if (tt.want.Messages > 0) != (got.Bytes > 0) {
			t.Errorf("Usage(%+v).Bytes = %d", tt.scope, got.Bytes)
		}
		got.Bytes = 0
		if got != tt.want {
			t.Errorf("Usage(%+v) = %+v, want %+v", tt.scope, got, tt.want)
		}
	}
	var sum Usage
	for _, tenant := range []string{"acme", "globex"} {
		u, _ := s.Usage(bg, Scope{Tenant: tenant})
		sum.Add(u)
	}
	if sum.Messages != 6 || sum.Users != 3 {
		t.Errorf("summed usage %+v", sum)
	}
	if _, err := s.Usage(bg, Scope{User: "alice"}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("Usage without a tenant: %v, want ErrInvalidScope", err)
	}
}
