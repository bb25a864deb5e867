package engine

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestScopeValidate(t *testing.T) {
	long := strings.Repeat("x", MaxIDLength+1)
	tests := []struct {
		name  string
		scope Scope
		level Level
		ok    bool
	}{
		{"tenant only", Scope{Tenant: "acme"}, LevelTenant, true},
		{"session", Scope{Tenant: "acme", User: "alice", Session: "s1"}, LevelSession, true},
		{"unicode ids", Scope{Tenant: "Ācme", User: "アリス", Session: "séance 1"}, LevelSession, true},
		{"max length", Scope{Tenant: strings.Repeat("t", MaxIDLength)}, LevelTenant, true},
		{"empty tenant", Scope{User: "alice"}, LevelTenant, false},
		{"user needed", Scope{Tenant: "acme"}, LevelUser, false},
		{"session needed", Scope{Tenant: "acme", User: "alice"}, LevelSession, false},
		{"session without user", Scope{Tenant: "acme", Session: "s1"}, LevelTenant, false},
		{"too long", Scope{Tenant: long}, LevelTenant, false},
		{"NUL", Scope{Tenant: "ac\x00me"}, LevelTenant, false},
		{"newline", Scope{Tenant: "acme", User: "al\nice"}, LevelUser, false},
		{"DEL", Scope{Tenant: "acme\x7f"}, LevelTenant, false},
		{"C1 control", Scope{Tenant: "acme\u0085"}, LevelTenant, false},
		{"bad UTF-8", Scope{Tenant: "acme\xff"}, LevelTenant, false},
		{"bad agent", Scope{Tenant: "acme", Agent: "a\tb"}, LevelTenant, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.scope.Validate(tc.level)
			if tc.ok && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidScope) {
				t.Fatalf("Validate = %v, want ErrInvalidScope", err)
			}
		})
	}
}

// TestPrefixIsolation checks the property the whole layout rests on: for
// random valid scopes, one scope's prefix never starts another scope's key
// unless the first scope really contains the second.
func TestPrefixIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"a", "ab", "a b", "b", "ba", "é", " ", "a\u00a0"}
	pick := func() string { return ids[rng.IntN(len(ids))] }
	for range 5000 {
		a := Scope{Tenant: pick(), User: pick(), Session: pick()}
		b := Scope{Tenant: pick(), User: pick(), Session: pick()}
		for _, l := range []Level{LevelTenant, LevelUser, LevelSession} {
			pa := a.Prefix(l)
			kb := Key(b.Prefix(LevelSession), NSMessage, []byte("id"))
			contains := a.Tenant == b.Tenant &&
				(l < LevelUser || a.User == b.User) &&
				(l < LevelSession || a.Session == b.Session)
			if got := bytes.HasPrefix(kb, pa); got != contains {
				t.Fatalf("prefix %q of %+v at %s vs key %q of %+v: HasPrefix=%v, want %v", pa, a, l, kb, b, got, contains)
			}
		}
		// A user-level namespace key never parses as a session.
		up := a.Prefix(LevelUser)
		if _, ok := ChildAt(up, Key(up, NSSessionInfo)); ok {
			t.Fatal("namespace key parsed as a session")
		}
		if s, ok := ChildAt(up, Key(a.Prefix(LevelSession), NSMessage)); !ok || s != a.Session {
			t.Fatalf("ChildAt = %q, %v; want %q", s, ok, a.Session)
		}
	}
}

func TestUpdateRollback(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	key := Key(Scope{Tenant: "t"}.Prefix(LevelTenant), NSSystemMessage, []byte("k"))
	errBoom := errors.New("boom")
	if err := db.Update(ctx, func(tx *Tx) error {
		if err := tx.Set(key, []byte("v")); err != nil {
			return err
		}
		return errBoom
	}); err != errBoom {
		t.Fatalf("Update = %v, want the function's error unchanged", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = db.Update(ctx, func(tx *Tx) error {
			_ = tx.Set(key, []byte("v"))
			panic("boom")
		})
	}()
	err = db.View(ctx, func(tx *Tx) error {
		_, err := tx.Get(key)
		return err
	})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after rollbacks = %v, want ErrNotFound", err)
	}
	st := db.Stats()
	if st.Updates != 2 || st.Failures != 3 || st.Dir != "" {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestNewIDMonotonic(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	prev := db.NewID(now)
	for range 10000 {
		id := db.NewID(now)
		if id.Compare(prev) <= 0 {
			t.Fatalf("id %s not after %s", id, prev)
		}
		prev = id
	}
}

func TestCloseTwiceAndClosedErrors(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := db.View(context.Background(), func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{EncryptionKey: bytes.Repeat([]byte{1}, 16)})
	if err != nil {
		t.Fatal(err)
	}
	// Badger locks its directory; PostgreSQL stores are shared by design.
	if _, err := Open(dir, nil); !kvtest.Postgres() && !errors.Is(err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", err)
	}
	db.Close()
	if _, err := Open(dir, &Options{EncryptionKey: bytes.Repeat([]byte{2}, 16)}); !errors.Is(err, ErrEncryptionKey) {
		t.Errorf("wrong key = %v, want ErrEncryptionKey", err)
	}
	if _, err := Open(dir, &Options{EncryptionKey: []byte("short")}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad key length = %v, want ErrInvalidOptions", err)
	}
}

// TestOnCommit: a commit hook runs once after its transaction commits, and
// never for an attempt that failed.
func TestOnCommit(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := Key(Scope{Tenant: "t"}.Prefix(LevelTenant), NSSystemMessage, []byte("k"))
	var ran []string
	err = db.Update(context.Background(), func(tx *Tx) error {
		tx.OnCommit(func() { ran = append(ran, "committed") })
		return tx.Set(key, []byte("v"))
	})
	if err != nil || len(ran) != 1 {
		t.Fatalf("after a commit: ran %v, %v", ran, err)
	}
	boom := errors.New("boom")
	err = db.Update(context.Background(), func(tx *Tx) error {
		tx.OnCommit(func() { ran = append(ran, "failed") })
		return boom
	})
	if !errors.Is(err, boom) || len(ran) != 1 {
		t.Fatalf("after a failure: ran %v, %v", ran, err)
	}
}
