package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv/kvtest"
)

// isolationGroups are ids that look alike or fold together: case pairs,
// composed and decomposed accents, homoglyphs from other scripts, case-fold
// expansions (ß, the Kelvin sign) and ids that are prefixes of each other.
// A key layout that folds, normalises or truncates an id would merge two
// members of a group.
var isolationGroups = [][]string{
	{"a", "A", "\u0430", "aa"}, // Latin a, capital A, Cyrillic а
	{"ab", "aB", "a b", "Ab"},
	{"\u00e9", "e\u0301", "e", "E\u0301"}, // é composed and decomposed
	{"\u00df", "ss", "SS", "\u1e9e"},      // ß, its folds, capital ẞ
	{"k", "K", "\u212a"},                  // Kelvin sign folds to k
	{"\u65e5\u672c", "\u65e5", "\u65e5\u672c\u8a9e"},
	{"\u0130", "i", "I", "\u0131"}, // dotted and dotless i
}

// isolationScopes draws scopes for the isolation property test: now and
// then a fresh random scope, otherwise one already used, as it is or with
// one id replaced by a lookalike from its group, so that near-collisions
// are both written and read.
type isolationScopes struct {
	rng  *rand.Rand
	used []Scope
}

func (g *isolationScopes) id() string {
	grp := isolationGroups[g.rng.IntN(len(isolationGroups))]
	return grp[g.rng.IntN(len(grp))]
}

func (g *isolationScopes) lookalike(id string) string {
	for _, grp := range isolationGroups {
		if slices.Contains(grp, id) {
			return grp[g.rng.IntN(len(grp))]
		}
	}
	return id
}

func (g *isolationScopes) next() Scope {
	if len(g.used) == 0 || g.rng.IntN(5) == 0 {
		sc := Scope{Tenant: g.id(), User: g.id(), Session: g.id()}
		g.used = append(g.used, sc)
		return sc
	}
	sc := g.used[g.rng.IntN(len(g.used))]
	switch g.rng.IntN(4) {
	case 0:
		sc.Tenant = g.lookalike(sc.Tenant)
	case 1:
		sc.User = g.lookalike(sc.User)
	case 2:
		sc.Session = g.lookalike(sc.Session)
	}
	g.used = append(g.used, sc)
	return sc
}

// read draws a scope to read: one already used (so likely written) half
// the time, else as next does.
func (g *isolationScopes) read() Scope {
	if len(g.used) > 0 && g.rng.IntN(2) == 0 {
		return g.used[g.rng.IntN(len(g.used))]
	}
	return g.next()
}

// TestTenantIsolation is a property test: random writes of every kind
// (messages, memories of a user and shared by a tenant, facts, entities)
// across tenants, users and sessions whose ids look alike or fold
// together (see isolationGroups), then random reads through every call:
// Messages, Window, Sessions, Memories, Facts, ReadGraph and Recall (its
// memories, shared memories, episodes and graph). Every item carries a
// unique marker; every item read must belong to the reader's scope, and
// every listing must hold exactly what that scope wrote.
func TestTenantIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	scopes := &isolationScopes{rng: rng}
	st := openMem(t, &Options{Durability: Async, DedupThreshold: -1, SweepInterval: -1})
	userOf := func(sc Scope) Scope { return Scope{Tenant: sc.Tenant, User: sc.User} }
	tenantOf := func(sc Scope) Scope { return Scope{Tenant: sc.Tenant} }
	var (
		owner    = map[string]Scope{}   // marker → the scope that wrote it
		messages = map[Scope][]string{} // session scope → markers, in order
		memories = map[Scope][]string{} // user or tenant scope → markers
		facts    = map[Scope][]string{} // user scope → markers (objects)
		entities = map[Scope][]string{} // user scope → markers (names)
		checked  int                    // items read and checked
	)
	// markerOf returns the marker in a text: the word that starts with
	// "w" followed by digits.
	markerOf := func(text string) string {
		for _, w := range strings.Fields(text) {
			w = strings.TrimRight(w, ".,;:")
			if len(w) > 1 && w[0] == 'w' && strings.Trim(w[1:], "0123456789") == "" {
				return w
			}
		}
		return ""
	}
	// same checks that got holds exactly the markers want, each owned by
	// the reader.
	same := func(step int, what string, reader Scope, got, want []string) {
		t.Helper()
		for _, m := range got {
			if o, ok := owner[m]; !ok || o != reader {
				t.Fatalf("step %d: %s of %s holds %q, written by %s", step, what, quoteScope(reader), m, quoteScope(o))
			}
		}
		checked += len(got)
		g, w := slices.Clone(got), slices.Clone(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Fatalf("step %d: %s of %s = %q, want %q", step, what, quoteScope(reader), g, w)
		}
	}
	steps := 1000
	if testing.Short() {
		steps = 300
	}
	for step := range steps {
		marker := fmt.Sprintf("w%d", step)
		if op := rng.IntN(10); op < 6 {
			sc := scopes.next()
			switch op {
			case 0, 1:
				owner[marker] = sc
				mustAppend(t, st.Session(sc), Message{Role: RoleUser, Content: "zebra " + marker})
				messages[sc] = append(messages[sc], marker)
			case 2:
				owner[marker] = userOf(sc)
				mustRemember(t, st, userOf(sc), Memory{Text: "zebra memory " + marker})
				memories[userOf(sc)] = append(memories[userOf(sc)], marker)
			case 3:
				owner[marker] = tenantOf(sc)
				mustRemember(t, st, tenantOf(sc), Memory{Text: "zebra shared " + marker})
				memories[tenantOf(sc)] = append(memories[tenantOf(sc)], marker)
			case 4:
				owner[marker] = userOf(sc)
				if _, err := st.Relate(bg, userOf(sc), Fact{Subject: "zebra", Predicate: "saw", Object: marker}); err != nil {
					t.Fatalf("step %d: Relate: %v", step, err)
				}
				facts[userOf(sc)] = append(facts[userOf(sc)], marker)
				entities[userOf(sc)] = append(entities[userOf(sc)], marker)
			case 5:
				owner[marker] = userOf(sc)
				if _, err := updated(bg, st, userOf(sc), (*graph.Tx).CreateEntities, []graph.Entity{{Name: marker, Type: "thing", Observations: []string{"zebra " + marker}}}); err != nil {
					t.Fatalf("step %d: CreateEntities: %v", step, err)
				}
				entities[userOf(sc)] = append(entities[userOf(sc)], marker)
			}
			continue
		}

		// Messages, the window and the session listing.
		sc := scopes.read()
		msgs, err := st.Session(sc).Messages(bg, MessagesOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, markerOf(m.Content))
		}
		same(step, "Messages", sc, got, messages[sc])
		w, err := st.Session(sc).Window(bg, WindowOptions{MaxMessages: 5})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, m := range w {
			got = append(got, markerOf(m.Content))
		}
		if want := messages[sc]; len(want) > 5 {
			same(step, "Window", sc, got, want[len(want)-5:])
		} else {
			same(step, "Window", sc, got, want)
		}
		infos, err := st.Sessions(bg, userOf(sc), SessionsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			s := Scope{Tenant: sc.Tenant, User: sc.User, Session: in.ID}
			if len(messages[s]) != in.Messages {
				t.Fatalf("step %d: Sessions of %s lists %+v; %s wrote %d", step, quoteScope(sc), in, quoteScope(s), len(messages[s]))
			}
		}

		// Memories of the user and of the tenant.
		for _, reader := range []Scope{userOf(sc), tenantOf(sc)} {
			mems, err := st.Memories(bg, reader, MemoriesOptions{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, m := range mems {
				got = append(got, markerOf(m.Text))
			}
			same(step, "Memories", reader, got, memories[reader])
		}

		// Facts and entities.
		fs, err := viewed(bg, st, userOf(sc), (*graph.Tx).Facts, graph.FactQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, f := range fs {
			got = append(got, f.Object)
		}
		same(step, "Facts", userOf(sc), got, facts[userOf(sc)])
		page, err := viewed(bg, st, userOf(sc), (*graph.Tx).ReadGraph, graph.ReadOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range page.Entities {
			if e.Name != "zebra" {
				got = append(got, e.Name)
			}
		}
		same(step, "ReadGraph", userOf(sc), got, entities[userOf(sc)])

		// Recall from every source: each item belongs to the user (or,
		// shared, to the tenant), and each memory and fact is found.
		rec, err := st.Recall(bg, Query{Scope: userOf(sc), Text: "zebra", TopK: MaxTopK, MaxTokens: 1 << 20, Sources: Sources()})
		if err != nil {
			t.Fatalf("step %d: Recall: %v", step, err)
		}
		bySource := map[Source][]string{}
		for _, it := range rec.Items {
			m := markerOf(it.Text)
			if it.Fact != nil {
				m = it.Fact.Object
			}
			bySource[it.Source] = append(bySource[it.Source], m)
		}
		same(step, "Recall memories", userOf(sc), bySource[SourceMemories], memories[userOf(sc)])
		same(step, "Recall shared", tenantOf(sc), bySource[SourceShared], memories[tenantOf(sc)])
		same(step, "Recall graph", userOf(sc), bySource[SourceGraph], facts[userOf(sc)])
		var eps []string
		for s, ms := range messages {
			if userOf(s) == userOf(sc) {
				eps = append(eps, ms...)
			}
		}
		for _, m := range bySource[SourceEpisodes] {
			if o := owner[m]; userOf(o) != userOf(sc) {
				t.Fatalf("step %d: Recall episodes of %s holds %q, written by %s", step, quoteScope(userOf(sc)), m, quoteScope(o))
			}
		}
		if len(bySource[SourceEpisodes]) != len(eps) {
			t.Fatalf("step %d: Recall of %s found %d episodes, the user wrote %d", step, quoteScope(userOf(sc)), len(bySource[SourceEpisodes]), len(eps))
		}
	}
	t.Logf("%d scopes drawn, %d items read and checked", len(scopes.used), checked)
}

// quoteScope shows a scope's ids with every non-ASCII rune escaped, so
// that lookalikes differ on the page.
func quoteScope(sc Scope) string {
	return fmt.Sprintf("%+q/%+q/%+q", sc.Tenant, sc.User, sc.Session)
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
	err := st.db.KV().View(bg, func(tx *kvTxn) error {
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
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
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
	kvtest.SkipOnPostgres(t, "Badger's directory lock (PostgreSQL stores are shared by design)")
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
	t.Parallel() // it sleeps for seconds; let the other sleepers overlap
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
	cache, err := embed.NewCache(fake, st.db.EmbeddingCache(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Embed(bg, []string{secret, "unrelated"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	vals, err := st.db.EmbeddingCache().LoadEmbeddings(bg, [][]byte{
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
	t.Parallel() // it sleeps for seconds; let the other sleepers overlap
	fake := embedtest.NewFake(nil)
	st := openMem(t, &Options{Embedder: fake, SweepInterval: -1})
	cached := func(text string) bool {
		t.Helper()
		vals, err := st.db.EmbeddingCache().LoadEmbeddings(bg, [][]byte{embed.CacheKey(fake.Identity(), text)})
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
