package memory

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"github.com/engramdb/engram/engine"
)

// TestTenantIsolation is a property test: random appends across tenants,
// users and sessions (with ids chosen to be prefixes of each other), then
// random reads through every call. Every message read must carry the
// reader's own scope, and every scope must read back exactly what it wrote.
func TestTenantIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ids := []string{"a", "ab", "a b", "b", "aa", "é"}
	pick := func() string { return ids[rng.IntN(len(ids))] }
	st := openMem(t, &Options{Durability: Async})
	written := map[Scope][]string{}
	steps := 600
	if testing.Short() {
		steps = 150
	}
	for step := range steps {
		sc := Scope{Tenant: pick(), User: pick(), Session: pick()}
		if rng.IntN(3) > 0 {
			content := fmt.Sprintf("%s|%s|%s|%d", sc.Tenant, sc.User, sc.Session, step)
			mustAppend(t, st.Session(sc), user(content))
			written[sc] = append(written[sc], content)
			continue
		}
		check := func(msgs []Message) {
			for _, m := range msgs {
				if !strings.HasPrefix(m.Content, sc.Tenant+"|"+sc.User+"|"+sc.Session+"|") {
					t.Fatalf("step %d: scope %+v read %q", step, sc, m.Content)
				}
			}
		}
		msgs, err := st.Session(sc).Messages(bg, MessagesOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		check(msgs)
		if got, want := len(msgs), len(written[sc]); got != want {
			t.Fatalf("step %d: scope %+v read %d messages, wrote %d", step, sc, got, want)
		}
		w, err := st.Session(sc).Window(bg, WindowOptions{MaxMessages: 5})
		if err != nil {
			t.Fatal(err)
		}
		check(w)
		infos, err := st.Sessions(bg, Scope{Tenant: sc.Tenant, User: sc.User}, SessionsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if len(written[Scope{Tenant: sc.Tenant, User: sc.User, Session: in.ID}]) != in.Messages {
				t.Fatalf("step %d: Sessions of %s/%s lists %+v", step, sc.Tenant, sc.User, in)
			}
		}
	}
}

func TestSessionsListing(t *testing.T) {
	st := openMem(t, nil)
	u := Scope{Tenant: "t", User: "u"}
	for _, s := range []string{"b", "a", "c", "a b", "ab"} {
		sc := u
		sc.Session = s
		mustAppend(t, st.Session(sc), user("hi "+s), asst("hello"))
	}
	// Another user's and tenant's sessions must not appear.
	mustAppend(t, st.Session(Scope{Tenant: "t", User: "u2", Session: "z"}), user("x"))
	mustAppend(t, st.Session(Scope{Tenant: "t2", User: "u", Session: "y"}), user("x"))
	var got []string
	after := ""
	for {
		page, err := st.Sessions(bg, u, SessionsOptions{After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, p := range page {
			if p.Messages != 2 || p.Created.IsZero() || p.Updated.Before(p.Created) {
				t.Errorf("session %+v", p)
			}
			got = append(got, p.ID)
		}
		after = page[len(page)-1].ID
	}
	if fmt.Sprint(got) != "[a a b ab b c]" {
		t.Fatalf("sessions = %q", got)
	}
	if _, err := st.Sessions(bg, Scope{Tenant: "t"}, SessionsOptions{}); !errors.Is(err, ErrInvalidScope) {
		t.Fatalf("Sessions without user = %v, want ErrInvalidScope", err)
	}
}

func TestForget(t *testing.T) {
	st := openMem(t, nil)
	scopes := []Scope{
		{Tenant: "acme", User: "alice", Session: "s1"},
		{Tenant: "acme", User: "alice", Session: "s2"},
		{Tenant: "acme", User: "alice2", Session: "s1"},
		{Tenant: "acme", User: "bob", Session: "s1"},
		{Tenant: "acme2", User: "alice", Session: "s1"},
	}
	for _, sc := range scopes {
		mustAppend(t, st.Session(sc), sys("rules"), user("hi"), call("c1"), result("c1"), asst("done"))
	}
	count := func(sc Scope) int {
		msgs, err := st.Session(sc).Messages(bg, MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	// A session.
	if err := st.Forget(bg, scopes[0]); err != nil {
		t.Fatal(err)
	}
	assertNoKeys(t, st, scopes[0].Prefix(engine.LevelSession))
	if count(scopes[0]) != 0 || count(scopes[1]) != 5 {
		t.Fatal("Forget(session) erased the wrong session")
	}
	infos, _ := st.Sessions(bg, scopes[0], SessionsOptions{})
	if len(infos) != 1 || infos[0].ID != "s2" {
		t.Fatalf("sessions after Forget(session) = %+v", infos)
	}
	// The tool-call index went with it: the same call id is free again.
	mustAppend(t, st.Session(scopes[0]), call("c1"), result("c1"))
	// A user, whose id is a prefix of another user's.
	if err := st.Forget(bg, Scope{Tenant: "acme", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	assertNoKeys(t, st, Scope{Tenant: "acme", User: "alice"}.Prefix(engine.LevelUser))
	for _, sc := range scopes[2:] {
		if count(sc) != 5 {
			t.Fatalf("Forget(alice) touched %+v", sc)
		}
	}
	// A tenant.
	if err := st.Forget(bg, Scope{Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	assertNoKeys(t, st, Scope{Tenant: "acme"}.Prefix(engine.LevelTenant))
	if count(scopes[4]) != 5 {
		t.Fatal("Forget(acme) touched acme2")
	}
	if err := st.Forget(bg, Scope{User: "x"}); !errors.Is(err, ErrInvalidScope) {
		t.Fatalf("Forget without tenant = %v, want ErrInvalidScope", err)
	}
}

func assertNoKeys(t *testing.T, st *Store, prefix []byte) {
	t.Helper()
	err := st.Engine().KV().View(bg, func(tx *kvTxn) error {
		it := tx.NewIterator(kvIterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			return fmt.Errorf("key %q left under erased prefix %q", it.Key(), prefix)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte("k"), 32)
	secret := "Dana-owns-renewal-of-account-3942"
	st, err := Open(dir, &Options{EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		mustAppend(t, st.Session(testScope), user(fmt.Sprintf("%s #%d", secret, i)))
	}
	st.Close()
	var scanned int
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		for _, needle := range []string{secret, testScope.Tenant + "\x00" + testScope.User} {
			if bytes.Contains(b, []byte(needle)) {
				t.Errorf("%s holds plaintext %q", p, needle)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan of the store's files: %v", err)
	}
	if scanned == 0 {
		t.Fatal("no files")
	}
	if _, err := Open(dir, &Options{EncryptionKey: bytes.Repeat([]byte("x"), 32)}); !errors.Is(err, ErrEncryptionKey) {
		t.Fatalf("wrong key = %v, want ErrEncryptionKey", err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrEncryptionKey) {
		t.Fatalf("no key = %v, want ErrEncryptionKey", err)
	}
	st, err = Open(dir, &Options{EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{})
	if err != nil || len(msgs) != 50 {
		t.Fatalf("read back %d, %v", len(msgs), err)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestClosed(t *testing.T) {
	st, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := st.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := st.Session(testScope).Append(bg, user("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := st.Session(testScope).Window(bg, WindowOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Window after Close = %v, want ErrClosed", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	_, err := Open("", &Options{Durability: 9, Encoding: "nope", MaxMessageBytes: -1, SessionTTL: -time.Second})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open = %v, want ErrInvalidOptions", err)
	}
	for _, f := range []string{"Durability", "Encoding", "MaxMessageBytes", "SessionTTL"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

func TestSessionTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a one-second TTL to pass")
	}
	st := openMem(t, &Options{SessionTTL: time.Second})
	mustAppend(t, st.Session(testScope), sys("rules"), user("hi"), call("c"), result("c"))
	if infos, err := st.Sessions(bg, testScope, SessionsOptions{}); err != nil || len(infos) != 1 {
		t.Fatalf("sessions before expiry = %+v, %v", infos, err)
	}
	time.Sleep(2100 * time.Millisecond)
	msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{})
	if err != nil || len(msgs) != 0 {
		t.Fatalf("after TTL: %d messages, %v", len(msgs), err)
	}
	if infos, err := st.Sessions(bg, testScope, SessionsOptions{}); err != nil || len(infos) != 0 {
		t.Fatalf("sessions after expiry = %+v, %v; want none and no error", infos, err)
	}
	// The expired call's id no longer blocks a new one, and a result to it
	// is now an orphan.
	if err := st.Session(testScope).Append(bg, result("c")); !errors.Is(err, ErrOrphanToolResult) {
		t.Fatalf("result to expired call = %v, want ErrOrphanToolResult", err)
	}
}

// TestForgetErasesCachedEmbeddings caches the embedding of a message's text
// and checks Forget of its session removes it.
func TestForgetErasesCachedEmbeddings(t *testing.T) {
	st := openMem(t, nil)
	secret := "Dana owns the renewal of account 3942"
	mustAppend(t, st.Session(testScope), user(secret))
	fake := embedtest.NewFake(nil)
	cache, err := embed.NewCache(fake, st.Engine().EmbeddingCache(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Embed(bg, []string{secret, "unrelated"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	vals, err := st.Engine().EmbeddingCache().LoadEmbeddings(bg, [][]byte{
		embed.CacheKey(fake.Identity(), secret),
		embed.CacheKey(fake.Identity(), "unrelated"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if vals[0] != nil {
		t.Error("the forgotten message's cached embedding survived Forget")
	}
	if vals[1] == nil {
		t.Error("Forget erased an unrelated cached embedding")
	}
}

// TestCachedEmbeddingsDoNotOutliveTheirText: texts that were embedded but
// are not (or no longer) stored leave no cached embedding: a duplicate
// merged into an earlier memory, a batch that failed after it was
// embedded, a memory that expired and was swept.
func TestCachedEmbeddingsDoNotOutliveTheirText(t *testing.T) {
	fake := embedtest.NewFake(nil)
	st := openMem(t, &Options{Embedder: fake, SweepInterval: -1})
	cached := func(text string) bool {
		t.Helper()
		vals, err := st.Engine().EmbeddingCache().LoadEmbeddings(bg, [][]byte{embed.CacheKey(fake.Identity(), text)})
		if err != nil {
			t.Fatal(err)
		}
		return vals[0] != nil
	}
	alice := Scope{Tenant: "acme", User: "alice"}

	kept := "Dana owns the renewal of account 3942"
	mustRemember(t, st, alice, Memory{Text: kept})
	dup := "DANA owns the renewal of   account 3942"
	mustRemember(t, st, alice, Memory{Text: dup})
	if !cached(kept) || cached(dup) {
		t.Errorf("after a merged duplicate: stored text cached %v (want true), duplicate cached %v (want false)", cached(kept), cached(dup))
	}

	failed := "The vault code is 5521"
	err := st.Session(testScope).Append(bg, user(failed), result("no-such-call"))
	if !errors.Is(err, ErrOrphanToolResult) {
		t.Fatalf("append with an orphan result = %v", err)
	}
	if cached(failed) {
		t.Error("a message of a failed append left its embedding cached")
	}

	var b Batch
	batched := "The safe is behind the painting"
	b.Append(testScope, user(batched))
	b.Relate(alice, Fact{Subject: "safe"}) // no predicate: the batch fails
	if _, err := st.Write(bg, &b); err == nil {
		t.Fatal("a batch with a bad fact was written")
	}
	if cached(batched) {
		t.Error("a message of a failed batch left its embedding cached")
	}

	bob := Scope{Tenant: "acme", User: "bob"}
	brief, bobs := "The door code is 1234 until tomorrow", "Bob's locker code is 4321 for today"
	mustRemember(t, st, alice, Memory{Text: brief, ExpiresAt: time.Now().Add(1500 * time.Millisecond)})
	mustRemember(t, st, bob, Memory{Text: bobs, ExpiresAt: time.Now().Add(1500 * time.Millisecond)})
	if !cached(brief) || !cached(bobs) {
		t.Fatal("a stored memory's embedding is not cached")
	}
	time.Sleep(2600 * time.Millisecond) // expiry is kept in whole seconds
	if n, err := st.Sweep(bg, alice); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	if cached(brief) {
		t.Error("an expired, swept memory left its embedding cached")
	}
	if err := st.Forget(bg, bob); err != nil {
		t.Fatal(err)
	}
	if cached(bobs) {
		t.Error("an expired memory not yet swept kept its embedding cached through Forget")
	}
	if !cached(kept) {
		t.Error("Sweep erased a live memory's cached embedding")
	}
}
