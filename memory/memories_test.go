package memory

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

var alice = Scope{Tenant: "acme", User: "alice"}

func mustRemember(t testing.TB, s *Store, scope Scope, m Memory) string {
	t.Helper()
	id, err := s.Remember(bg, scope, m)
	if err != nil {
		t.Fatalf("Remember(%q): %v", m.Text, err)
	}
	return id
}

func TestRememberDedup(t *testing.T) {
	s := openMem(t, nil)
	id := mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice prefers email.", Tags: []string{"contact"}, Metadata: map[string]string{"a": "1"}, Source: []string{"m1"}})

	// The same text up to case and white space: one memory, merged.
	dup := mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "  alice   PREFERS email. ", Tags: []string{"channel", "contact"}, Metadata: map[string]string{"a": "2", "b": "x"}, Source: []string{"m2"}, Importance: 0.8})
	if dup != id {
		t.Fatalf("exact duplicate got a new id %s, want %s", dup, id)
	}
	// A near-duplicate by cosine (punctuation differs): the same memory.
	if near := mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice prefers email!"}); near != id {
		t.Fatalf("near duplicate got a new id %s, want %s", near, id)
	}
	m, err := s.Memory(bg, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "Alice prefers email." || !slices.Equal(m.Tags, []string{"contact", "channel"}) ||
		m.Metadata["a"] != "2" || m.Metadata["b"] != "x" || !slices.Equal(m.Source, []string{"m1", "m2"}) || m.Importance != 0.8 {
		t.Fatalf("merged memory: %+v", m)
	}
	// Another kind, or a different text, is another memory.
	if other := mustRemember(t, s, alice, Memory{Kind: KindFact, Text: "Alice prefers email."}); other == id {
		t.Fatal("a fact deduplicated against a preference")
	}
	if other := mustRemember(t, s, alice, Memory{Text: "Alice's account number is 3942"}); other == id {
		t.Fatal("an unrelated memory deduplicated")
	}
	if other := mustRemember(t, s, alice, Memory{Text: "Alice's account number is 3943"}); other == id {
		t.Fatal("a memory that differs by one digit deduplicated")
	}
	list, err := s.Memories(bg, alice, MemoriesOptions{})
	if err != nil || len(list) != 4 {
		t.Fatalf("Memories: %d, %v", len(list), err)
	}
	// Another user's memory of the same text is theirs.
	bob := Scope{Tenant: "acme", User: "bob"}
	if bid := mustRemember(t, s, bob, Memory{Kind: KindPreference, Text: "Alice prefers email."}); bid == id {
		t.Fatal("deduplicated across users")
	}
}

func TestRememberNearDedupOff(t *testing.T) {
	s := openMem(t, &Options{DedupThreshold: -1})
	a := mustRemember(t, s, alice, Memory{Text: "Alice prefers email."})
	if b := mustRemember(t, s, alice, Memory{Text: "Alice prefers email!"}); a == b {
		t.Fatal("near-duplicate detection is off, yet deduplicated")
	}
	if c := mustRemember(t, s, alice, Memory{Text: "alice prefers EMAIL."}); c != a {
		t.Fatal("exact duplicates must always be caught")
	}
}

func TestRememberBadInput(t *testing.T) {
	s := openMem(t, nil)
	long := strings.Repeat("x", MaxMemoryBytes+1)
	for name, m := range map[string]Memory{
		"empty":      {Text: "  "},
		"kind":       {Kind: "rumour", Text: "x"},
		"long":       {Text: long},
		"utf8":       {Text: "\xff\xfe"},
		"tag":        {Text: "x", Tags: []string{"a\x00b"}},
		"importance": {Text: "x", Importance: 1.5},
		"expired":    {Text: "x", ExpiresAt: time.Now().Add(-time.Hour)},
		"metadata":   {Text: "x", Metadata: map[string]string{"": "v"}},
	} {
		if _, err := s.Remember(bg, alice, m); !errors.Is(err, ErrInvalidMemory) {
			t.Errorf("%s: err %v, want ErrInvalidMemory", name, err)
		}
	}
	if _, err := s.Remember(bg, Scope{User: "alice"}, Memory{Text: "x"}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("no tenant: %v", err)
	}
	list, err := s.Memories(bg, alice, MemoriesOptions{})
	if err != nil || len(list) != 0 {
		t.Fatalf("bad input wrote %d memories (%v)", len(list), err)
	}
}

func TestUpdateMemoryVersions(t *testing.T) {
	s := openMem(t, nil)
	v1 := mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice prefers email."})
	v2, err := s.UpdateMemory(bg, alice, v1, Memory{Text: "Alice prefers phone calls."})
	if err != nil {
		t.Fatal(err)
	}
	v3, err := s.UpdateMemory(bg, alice, v2, Memory{Text: "Alice prefers text messages."})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := s.MemoryHistory(bg, alice, v3)
	if err != nil || len(hist) != 3 {
		t.Fatalf("history: %+v, %v", hist, err)
	}
	if hist[0].ID != v3 || hist[1].ID != v2 || hist[2].ID != v1 || hist[1].SupersededBy != v3 || hist[0].Supersedes != v2 || hist[0].Kind != KindPreference {
		t.Fatalf("history: %+v", hist)
	}
	list, _ := s.Memories(bg, alice, MemoriesOptions{})
	if len(list) != 1 || list[0].ID != v3 {
		t.Fatalf("current memories: %+v", list)
	}
	rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: "how does Alice prefer to be contacted? email phone text messages"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rec.Items {
		if it.ID == v1 || it.ID == v2 {
			t.Fatalf("a superseded version was recalled: %+v", it)
		}
	}
	if _, err := s.UpdateMemory(bg, alice, v1, Memory{Text: "again"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("updating a superseded version: %v", err)
	}
	// The old text can be remembered again: its hash key went with it.
	if again := mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice prefers email."}); again == v1 || again == v3 {
		t.Fatalf("re-remembering old text returned %s", again)
	}
	if err := s.DeleteMemory(bg, alice, v3); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{v1, v2, v3} {
		if _, err := s.Memory(bg, alice, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("version %s after delete: %v", id, err)
		}
	}
	if err := s.DeleteMemory(bg, alice, v3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestMemoriesPaging(t *testing.T) {
	s := openMem(t, nil)
	var ids []string
	for i := range 7 {
		kind := KindFact
		if i%2 == 1 {
			kind = KindEpisode
		}
		ids = append(ids, mustRemember(t, s, alice, Memory{Kind: kind, Text: "memory number " + strings.Repeat("x", i+1), Tags: []string{"t" + string(rune('0'+i%3))}}))
	}
	var got []string
	after := ""
	for {
		page, err := s.Memories(bg, alice, MemoriesOptions{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			got = append(got, m.ID)
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("paged %v, want %v", got, ids)
	}
	eps, _ := s.Memories(bg, alice, MemoriesOptions{Kind: KindEpisode})
	t0, _ := s.Memories(bg, alice, MemoriesOptions{Tag: "t0"})
	if len(eps) != 3 || len(t0) != 3 {
		t.Fatalf("filters: %d episodes, %d tagged t0", len(eps), len(t0))
	}
	if _, err := s.Memories(bg, alice, MemoriesOptions{After: "nope"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestMemoryExpiry(t *testing.T) {
	t.Parallel() // it sleeps for seconds; let the other sleepers overlap
	if testing.Short() {
		t.Skip("waits for a memory to expire (2 s)")
	}
	s := openMem(t, &Options{SweepInterval: -1})
	keep := mustRemember(t, s, alice, Memory{Text: "Alice's gate code is 4411"})
	gone := mustRemember(t, s, alice, Memory{Text: "Alice's temporary gate code is 9876", ExpiresAt: time.Now().Add(1500 * time.Millisecond)})
	q := Query{Trace: true, Scope: alice, Text: "gate code"}
	rec, err := s.Recall(bg, q)
	if err != nil || !recalled(rec, gone) || !recalled(rec, keep) {
		t.Fatalf("before expiry: %+v, %v", rec.Items, err)
	}
	// Asked as of after the expiry, the memory is dropped as expired.
	q.Now = time.Now().Add(time.Hour)
	rec, _ = s.Recall(bg, q)
	if recalled(rec, gone) || reason(rec, gone) != "expired" {
		t.Fatalf("as of later: recalled or reason %q", reason(rec, gone))
	}
	time.Sleep(2500 * time.Millisecond)
	q.Now = time.Time{}
	rec, _ = s.Recall(bg, q)
	if recalled(rec, gone) || !recalled(rec, keep) {
		t.Fatalf("after expiry: %+v", rec.Items)
	}
	n, err := s.Sweep(bg, alice)
	if err != nil || n != 1 {
		t.Fatalf("Sweep: %d, %v", n, err)
	}
	if n, _ := s.Sweep(bg, alice); n != 0 {
		t.Fatalf("second Sweep removed %d", n)
	}
	if _, err := s.Memory(bg, alice, gone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired memory read back: %v", err)
	}
}

// TestSweeperFindsExpiringAfterRestart: the partitions with expiring
// memories are listed in the store, so the background sweeper of a
// reopened store sweeps them; a sweep that leaves nothing scheduled takes
// the partition off the list, a Recall puts nothing on it, and Forget
// erases the entry.
func TestSweeperFindsExpiringAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a memory to expire (3 s)")
	}
	dir := t.TempDir()
	s, err := Open(dir, &Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	bob := Scope{Tenant: "acme", User: "bob"}
	// Bob's write comes first: the store's first write loads the token
	// counter's tables (seconds under -race on a loaded machine), which
	// must not eat into alice's short lifetime.
	mustRemember(t, s, bob, Memory{Text: "Bob's locker code is 1234", ExpiresAt: time.Now().Add(time.Hour)})
	aliceExpires := time.Now().Add(2 * time.Second)
	mustRemember(t, s, alice, Memory{Text: "Alice's temporary gate code is 9876", ExpiresAt: aliceExpires})
	if _, err := s.Recall(bg, Query{Trace: true, Scope: Scope{Tenant: "acme", User: "carol"}, Text: "code"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir, &Options{SweepInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Before alice's memory expires both partitions are listed; on a slow
	// machine the reopen may come later, and the sweep below still checks
	// that alice was found.
	if n := s.sweep.listed(); n != 2 && time.Now().Before(aliceExpires) {
		t.Fatalf("%d partitions listed after reopening, want alice and bob", n)
	}
	alicePrefix, _ := alice.PartitionPrefix()
	deadline := aliceExpires.Add(30 * time.Second)
	for countKeys(t, s, engine.Key(alicePrefix, engine.NSExpiry)) != 0 || s.sweep.listed() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper did not sweep alice: %d expiry keys, %d listed",
				countKeys(t, s, engine.Key(alicePrefix, engine.NSExpiry)), s.sweep.listed())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := countKeys(t, s, engine.SystemKey(engine.NSExpiring)); n != 1 {
		t.Fatalf("%d list entries, want bob's", n)
	}
	if err := s.Forget(bg, bob); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, s, engine.SystemKey(engine.NSExpiring)); n != 0 || s.sweep.listed() != 0 {
		t.Fatalf("after Forget: %d list entries, %d listed", n, s.sweep.listed())
	}
}

func recalled(rec *Recollection, id string) bool {
	for _, it := range rec.Items {
		if it.ID == id {
			return true
		}
	}
	return false
}

func reason(rec *Recollection, id string) string {
	for _, c := range rec.Trace.Candidates {
		if c.ID == id {
			return c.Reason
		}
	}
	return "(not a candidate)"
}

// TestMemoriesSharedPartition checks that tenant-shared memories (no User)
// and a user's memories do not see each other.
func TestMemoriesSharedPartition(t *testing.T) {
	s := openMem(t, nil)
	shared := Scope{Tenant: "acme"}
	mustRemember(t, s, shared, Memory{Text: "The office closes at 6pm"})
	mustRemember(t, s, alice, Memory{Text: "Alice leaves at 5pm"})
	a, _ := s.Memories(bg, alice, MemoriesOptions{})
	sh, _ := s.Memories(bg, shared, MemoriesOptions{})
	if len(a) != 1 || len(sh) != 1 || a[0].Text == sh[0].Text {
		t.Fatalf("alice %+v, shared %+v", a, sh)
	}
}

// TestUpdateToAnotherMemorysText: an update that gives a memory the text
// of another leaves the other's hash key alone, so deleting the updated
// one does not make the other's text look new.
func TestUpdateToAnotherMemorysText(t *testing.T) {
	s := openMem(t, &Options{DedupThreshold: -1}) // exact dedup only
	a := mustRemember(t, s, alice, Memory{Text: "Alice drinks tea"})
	b := mustRemember(t, s, alice, Memory{Text: "Alice drinks coffee"})
	b2, err := s.UpdateMemory(bg, alice, b, Memory{Text: "Alice drinks tea"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemory(bg, alice, b2); err != nil {
		t.Fatal(err)
	}
	if got := mustRemember(t, s, alice, Memory{Text: "alice drinks TEA"}); got != a {
		t.Fatalf("Remember of a's text = %s, want a's id %s", got, a)
	}
	if all, err := s.Memories(bg, alice, MemoriesOptions{}); err != nil || len(all) != 1 {
		t.Fatalf("%d memories, %v; want 1", len(all), err)
	}
}

// TestSweeperKeepsPartitionNotedDuringSweep: a sweep that finds nothing
// scheduled while a write schedules an expiry does not drop the partition
// from the sweeper's list over that write (the store lists it, so the
// sweeper must too).
func TestSweeperKeepsPartitionNotedDuringSweep(t *testing.T) {
	rounds := 100
	if testing.Short() || raceEnabled {
		rounds = 20
	}
	lost := 0
	for round := range rounds {
		st := openMem(t, &Options{SweepInterval: time.Hour, DedupThreshold: -1})
		sc := Scope{Tenant: "t", User: fmt.Sprintf("u%d", round)}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := st.Sweep(bg, sc); err != nil {
					t.Error(err)
					return
				}
			}
		})
		time.Sleep(200 * time.Microsecond)
		mustRemember(t, st, sc, Memory{Text: "expires later", ExpiresAt: time.Now().Add(time.Hour)})
		close(stop)
		wg.Wait()
		p, _ := sc.PartitionPrefix()
		if countKeys(t, st, engine.SystemKey(engine.NSExpiring, p)) == 1 && st.sweep.listed() == 0 {
			lost++
		}
		st.Close()
	}
	if lost > 0 {
		t.Errorf("the store lists the partition but the sweeper dropped it: %d of %d rounds", lost, rounds)
	}
}

// TestSweeperListsOldStores: a store written before partitions were listed
// (its expiry keys, no list entries, no mark) has them listed at its next
// open, tenant-shared partitions included, once.
func TestSweeperListsOldStores(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	mustRemember(t, s, alice, Memory{Text: "Alice's code is 1234 for now", ExpiresAt: later})
	mustRemember(t, s, Scope{Tenant: "acme"}, Memory{Text: "The office wifi password rotates daily", ExpiresAt: later})
	mustRemember(t, s, Scope{Tenant: "acme", User: "bob"}, Memory{Text: "Bob keeps this forever"})
	// Make it an old store: no list, no mark.
	err = s.db.Update(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: engine.SystemKey(engine.NSExpiring), KeysOnly: true})
		var keys [][]byte
		for it.Seek(nil); it.Valid(); it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
		}
		it.Close()
		keys = append(keys, expiringListed)
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir, &Options{SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.sweep.listed(); n != 2 {
		t.Fatalf("%d partitions listed after opening an old store, want alice's and the tenant's", n)
	}
	if n := countKeys(t, s, engine.SystemKey(engine.NSExpiring)); n != 2 {
		t.Fatalf("%d list entries stored, want 2", n)
	}
	if n := countKeys(t, s, expiringListed); n != 1 {
		t.Fatal("the store is not marked as listed")
	}
}

// TestOpenLeavesEmptyStoreEmpty: opening a new store writes nothing, so
// the engine's Restore (which wants an empty store) still takes it.
func TestOpenLeavesEmptyStoreEmpty(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countKeys(t, s, nil); n != 0 {
		t.Fatalf("a new store holds %d keys after Open", n)
	}
}
