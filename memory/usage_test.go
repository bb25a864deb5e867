package memory

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv/kvtest"
)

// pgTestSchemaIf is pgTestSchema when ENGRAM_TEST_POSTGRES is set, and
// empty otherwise (the test goes on with Badger alone).
func pgTestSchemaIf(t testing.TB) (dsn, schema string) {
	t.Helper()
	if os.Getenv("ENGRAM_TEST_POSTGRES") == "" {
		return "", ""
	}
	return kvtest.PostgresSchema(t, "m_")
}

// usageBytes is what Usage.Bytes counts for scope, the slow way: every key
// and value of the scope read in full.
func usageBytes(t *testing.T, s *Store, scope Scope) int64 {
	t.Helper()
	var n int64
	err := s.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: scope.Prefix(scope.Level())})
		defer it.Close()
		var v []byte
		for it.Seek(nil); it.Valid(); it.Next() {
			var err error
			if v, err = it.Value(v[:0]); err != nil {
				return err
			}
			n += int64(len(it.Key()) + len(v))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// seedLargeUser gives scope's user messages and memories whose records are
// larger than what a keys-only scan on PostgreSQL brings with the key.
func seedLargeUser(t testing.TB, s *Store, scope Scope, messages int) {
	t.Helper()
	sess := s.Session(Scope{Tenant: scope.Tenant, User: scope.User, Session: "s1"})
	for i := range messages {
		mustAppend(t, sess, user(fmt.Sprintf("message %d: %s", i, strings.Repeat("the renewal is due in March; ", 80))))
	}
	for i := range messages / 4 {
		var text strings.Builder
		for j := range 60 { // words of their own, so that no two are near duplicates
			fmt.Fprintf(&text, "w%dx%d ", i, j)
		}
		mustRemember(t, s, scope, Memory{Text: text.String()})
	}
}

// TestUsageReadsNoValues: Usage sizes a scope from its keys and its
// values' lengths, without reading the values: on PostgreSQL a user's
// usage costs a few round trips however many large records the user has
// (issue 26: GET /v1/users read every value of every user on the page,
// one round trip per value over 512 bytes, 2.6 to 4.7 s for 24 users). The
// size is the one reading every value gives, on both backends.
func TestUsageReadsNoValues(t *testing.T) {
	stores := map[string]*Store{"default": openMem(t, &Options{Extraction: ExtractOff})}
	if dsn, schema := pgTestSchemaIf(t); dsn != "" {
		st, err := Open("", &Options{Extraction: ExtractOff, Postgres: &PostgresOptions{DSN: dsn, Schema: schema}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores["postgres"] = st
	}
	scope := Scope{Tenant: "acme", User: "alice"}
	const messages = 60
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			seedLargeUser(t, s, scope, messages)
			c := s.Cluster()
			var before uint64
			if c != nil {
				before = c.Traffic().RoundTrips
			}
			u, err := s.Usage(bg, scope)
			if err != nil {
				t.Fatal(err)
			}
			if c != nil {
				// Background renewals may add one or two.
				if n := c.Traffic().RoundTrips - before; n > 6 {
					t.Errorf("Usage of a user with %d large messages took %d round trips; want a few, not one per value", messages, n)
				}
			}
			if u.Messages != messages || u.Memories != messages/4 {
				t.Errorf("Usage = %+v", u)
			}
			if want := usageBytes(t, s, scope); u.Bytes != want {
				t.Errorf("Usage.Bytes = %d; reading every value gives %d", u.Bytes, want)
			}
		})
	}
}

// TestUserUsages: a page of users with their usage, in one scan, is what
// Users and Usage give one user at a time, on every page.
func TestUserUsages(t *testing.T) {
	s := openMem(t, nil)
	seedInspect(t, s)
	for _, u := range []string{"dave", "erin"} {
		mustAppend(t, s.Session(Scope{Tenant: "acme", User: u, Session: "s1"}), user("hello from "+u))
	}
	acme := Scope{Tenant: "acme"}
	for _, opts := range []ListOptions{{}, {Limit: 1}, {Limit: 2}, {After: "alice", Limit: 2}, {After: "b"}, {After: "erin"}, {After: "zz"}} {
		ids, err := s.Users(bg, acme, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.UserUsages(bg, Scope{Tenant: "acme", User: "ignored"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ids) {
			t.Fatalf("UserUsages(%+v) = %+v; Users = %q", opts, got, ids)
		}
		for i, id := range ids {
			want, err := s.Usage(bg, Scope{Tenant: "acme", User: id})
			if err != nil {
				t.Fatal(err)
			}
			if got[i].User != id || got[i].Usage != want {
				t.Errorf("UserUsages(%+v)[%d] = %+v, want %s %+v", opts, i, got[i], id, want)
			}
		}
	}
	if got, err := s.UserUsages(bg, Scope{Tenant: "nobody"}, ListOptions{}); err != nil || len(got) != 0 {
		t.Errorf("an unknown tenant: %+v, %v", got, err)
	}
	if _, err := s.UserUsages(bg, Scope{}, ListOptions{}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("no tenant: %v, want ErrInvalidScope", err)
	}
	if _, err := s.UserUsages(bg, acme, ListOptions{Limit: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative limit: %v, want ErrInvalidOptions", err)
	}
	if _, err := s.UserUsages(bg, acme, ListOptions{After: "a\x00b"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad After: %v, want ErrInvalidOptions", err)
	}
}
