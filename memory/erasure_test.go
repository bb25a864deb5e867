package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/kv/kvtest"
)

// erasureSecret is written everywhere a user's data can go. It has no
// repeated four-byte run, so Badger's Snappy blocks hold it as a literal
// wherever it occurs, and no suffix the stemmer would strip, so the text
// index holds it whole.
const erasureSecret = "zqxwvkjqpfh"

// scanFiles returns the files under dir (every file, recursively) that
// hold any of the needles, naming the needle found.
func scanFiles(t *testing.T, dir string, needles ...[]byte) []string {
	t.Helper()
	var hits []string
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
		if err != nil {
			return err
		}
		files++
		for i, n := range needles {
			if bytes.Contains(b, n) {
				hits = append(hits, fmt.Sprintf("%s holds needle %d", filepath.Base(p), i))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	if files == 0 {
		t.Fatalf("scan %s: no files", dir)
	}
	return hits
}

// fillEverywhere writes the secret into every kind of data a user has:
// messages (enough for the episode partition to become an HNSW graph
// with a snapshot file), a rolling summary, memories and a superseded
// version, facts, entities with observations and aliases, and cached
// embeddings. It returns the needles to scan for: the secret and the
// content hashes that key its cached embeddings.
func fillEverywhere(t *testing.T, st *Store, scope Scope) [][]byte {
	t.Helper()
	ctx := context.Background()
	var texts []string
	sess := st.Session(scope)
	const n = 2100 // above engine.DefaultExactThreshold: an HNSW graph and a snapshot
	for i := 0; i < n; i += 100 {
		var batch []Message
		for j := i; j < i+100; j++ {
			text := fmt.Sprintf("note %d: the code word is %s today", j, erasureSecret)
			texts = append(texts, text)
			batch = append(batch, user(text))
		}
		mustAppend(t, sess, batch...)
	}
	if _, err := st.Recall(ctx, Query{Scope: scope, Text: "what is the code word " + erasureSecret}); err != nil {
		t.Fatalf("Recall: %v", err)
	}
	if sum, err := sess.Summary(ctx); err != nil || !bytes.Contains([]byte(sum), []byte(erasureSecret)) {
		t.Fatalf("summary %q, %v: want one holding the secret", sum, err)
	}
	memText := "prefers the password " + erasureSecret
	id, err := st.Remember(ctx, scope, Memory{Kind: KindPreference, Text: memText})
	if err != nil {
		t.Fatalf("Remember: %v", err)
	}
	newText := "now prefers the password " + erasureSecret + " reversed"
	if _, err := st.UpdateMemory(ctx, scope, id, Memory{Kind: KindPreference, Text: newText}); err != nil {
		t.Fatalf("UpdateMemory: %v", err)
	}
	texts = append(texts, memText, newText)
	if _, err := st.Relate(ctx, scope, Fact{Subject: "Alice", Predicate: "knows_code", Object: erasureSecret + " vault"}); err != nil {
		t.Fatalf("Relate: %v", err)
	}
	if _, err := updated(ctx, st, scope, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Vault " + erasureSecret, Type: "thing", Observations: []string{"opened with " + erasureSecret}}}); err != nil {
		t.Fatalf("CreateEntities: %v", err)
	}
	if _, err := updated(ctx, st, scope, (*graph.Tx).AddObservations, []graph.ObservationSet{{EntityName: "Alice", Observations: []string{"whispered " + erasureSecret}}}); err != nil {
		t.Fatalf("AddObservations: %v", err)
	}
	if err := st.UpdateGraph(ctx, scope, func(g *graph.Tx) error { _, err := g.AddAliases("Alice", "alias-"+erasureSecret); return err }); err != nil {
		t.Fatalf("AddAliases: %v", err)
	}
	needles := [][]byte{[]byte(erasureSecret)}
	for _, text := range texts[len(texts)-4:] {
		h := embed.ContentHash(text)
		needles = append(needles, h[:])
	}
	return needles
}

func openErasureStore(t *testing.T, dir string, opts *Options) *Store {
	t.Helper()
	o := Options{Durability: Async, Embedder: embedtest.NewFake(nil), SweepInterval: -1}
	if opts != nil {
		o = *opts
	}
	st, err := Open(dir, &o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

// waitErased waits for the store's background erasure to finish the
// compaction that follows the erasures made so far.
func waitErased(t *testing.T, st *Store, after uint64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a speed limit
	for {
		s := st.Stats()
		if s.Compactions > after && !s.CompactPending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no background compaction after Forget: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaultErasure writes a secret into every kind of a user's data,
// forgets the user, and scans every file of the store for it: after the
// store's own background erasure, after a forced compaction (what
// engram compact runs), and again after a reopen.
func TestFaultErasure(t *testing.T) {
	kvtest.SkipOnPostgres(t, "scans Badger's files for erased bytes")
	if testing.Short() {
		t.Skip("writes 2,100 messages; skipped with -short")
	}
	scope := Scope{Tenant: "acme", User: "erased-user", Session: "s1"}
	keep := Scope{Tenant: "acme", User: "kept-user", Session: "s1"}
	for _, tc := range []struct {
		name  string
		erase func(t *testing.T, st *Store)
	}{
		{"automatic", func(t *testing.T, st *Store) {
			before := st.Stats().Compactions
			if err := st.Forget(bg, Scope{Tenant: scope.Tenant, User: scope.User}); err != nil {
				t.Fatalf("Forget: %v", err)
			}
			waitErased(t, st, before)
		}},
		{"compact", func(t *testing.T, st *Store) {
			if err := st.Forget(bg, Scope{Tenant: scope.Tenant, User: scope.User}); err != nil {
				t.Fatalf("Forget: %v", err)
			}
			if err := st.Compact(bg); err != nil {
				t.Fatalf("Compact: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own store: they overlap on two cores
			dir := t.TempDir()
			st := openErasureStore(t, dir, nil)
			needles := fillEverywhere(t, st, scope)
			mustAppend(t, st.Session(keep), user("a message that must survive"))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			// The scan must be able to fail: the secret is on disk now.
			if hits := scanFiles(t, dir, needles...); len(hits) == 0 {
				t.Fatal("the secret is in no file before Forget: the scan proves nothing")
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "vectors", "*.snap")); len(m) == 0 {
				t.Fatal("no snapshot file before Forget")
			}

			opts := Options{Durability: Async, Embedder: embedtest.NewFake(nil), SweepInterval: -1}
			if tc.name == "automatic" {
				opts.SweepInterval = 50 * time.Millisecond
			}
			st = openErasureStore(t, dir, &opts)
			tc.erase(t, st)
			if hits := scanFiles(t, dir, needles...); len(hits) > 0 {
				t.Errorf("after erasure, with the store open: %v", hits)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if hits := scanFiles(t, dir, needles...); len(hits) > 0 {
				t.Errorf("after erasure and Close: %v", hits)
			}
			st = openErasureStore(t, dir, nil)
			msgs, err := st.Session(keep).Messages(bg, MessagesOptions{})
			if err != nil || len(msgs) != 1 {
				t.Errorf("the other user's session: %d messages, %v", len(msgs), err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if hits := scanFiles(t, dir, needles...); len(hits) > 0 {
				t.Errorf("after reopen: %v", hits)
			}
		})
	}
}
