package memory

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestMemoryLineTokens checks that a memory line's prefix count plus the
// count stored with the memory's record (memoryTextTokens) is the line's
// own count, for random texts: words, punctuation, every kind of white
// space, and stretches longer than maxRun that tokenLen cuts into chunks.
func TestMemoryLineTokens(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", " ", "  ", "\t", "\n", "\r\n",
		"\u00a0", "\u2003", "'", "'s", "/", ".", ",", "!", "-", "_", "\"", "(", "🙂", "\u200b", "\u0085", "renewal", " Dana"}
	runs := []string{"a", "ab", "9", "!", "中", "a'"}
	r := rand.New(rand.NewPCG(5, 6))
	n := 300
	if testing.Short() {
		n = 80
	}
	kinds := []Kind{KindFact, KindPreference, KindObservation}
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var b strings.Builder
			for range 1 + r.IntN(30) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			if i%5 == 0 { // a stretch past maxRun
				b.WriteString(strings.Repeat(runs[r.IntN(len(runs))], 200+r.IntN(600)))
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			text := strings.TrimSpace(b.String())
			if text == "" {
				continue
			}
			it := Item{Source: SourceMemories, Text: text, Memory: &Memory{Kind: kinds[r.IntN(len(kinds))]}}
			if r.IntN(3) > 0 {
				it.Time = time.Date(2026, 1, 1+r.IntN(300), 0, 0, 0, 0, time.UTC)
			}
			want := tokenLen(enc, itemLine(&it))
			if got := countPrefix(enc, memoryLinePrefix(&it)) + memoryTextTokens(enc, text); got != want {
				t.Fatalf("%s: %q (prefix %q): stored %d, line %d", name, text, memoryLinePrefix(&it), got, want)
			}
		}
	}
}

// TestRecallUsesStoredTokens checks that Recall takes a memory's token
// count from its record, not by counting its line again, and that it
// counts (the same figure) for a record written without one, as records
// were before the count was stored, and for a store opened with another
// encoding than the one that counted.
func TestRecallUsesStoredTokens(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, &Options{Durability: Async, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{Tenant: "acme", User: "alice"}
	// A text nobody else counts: the line cache cannot have it.
	long := "Lisbon offsite budget notes: " + strings.Repeat("venue catering transport rooms, Überweisungsbestätigung für München, 東京都の会議室 ", 20) + time.Now().String()
	id, err := st.Remember(bg, scope, Memory{Text: long, Kind: KindPreference})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Memory(bg, scope, id)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := st.encoder()
	want := textTokens.count(enc, itemLine(&Item{Source: SourceMemories, Text: m.Text, Time: m.CreatedAt, Memory: &m})) + 1
	textTokens.mu.Lock()
	textTokens.m = nil // forget the line counted just above
	textTokens.mu.Unlock()

	q := Query{Trace: true, Scope: scope, Text: "Lisbon offsite budget", Sources: []Source{SourceMemories}}
	before := tokenizedBytes.Load()
	rec, err := st.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, rec, m.ID); got != want {
		t.Errorf("stored: Tokens %d, want %d", got, want)
	}
	if n := tokenizedBytes.Load() - before; n >= int64(len(long)) {
		t.Errorf("Recall tokenized %d bytes, the memory's %d: its stored count was not used", n, len(long))
	}

	// The same memory written as before the count was stored.
	old := m
	old.ID, old.Text = "", long+" (old)"
	if err := st.db.Update(bg, func(tx *engine.Tx) error {
		orig, err := tx.GetRecord(scope, spaceMemories, m.ID, nil)
		if err != nil {
			return err
		}
		rec := memoryRecord(&old, orig.Vector)
		id, err := tx.PutRecord(scope, spaceMemories, rec)
		old.ID = id
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantOld := textTokens.count(enc, itemLine(&Item{Source: SourceMemories, Text: old.Text, Time: old.CreatedAt, Memory: &old})) + 1
	rec, err = st.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, rec, old.ID); got != wantOld {
		t.Errorf("old record: Tokens %d, want %d", got, wantOld)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Another encoding: the stored o200k_base count does not apply.
	st, err = Open(dir, &Options{Durability: Async, SweepInterval: -1, Encoding: "cl100k_base"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cl, _ := st.encoder()
	wantCl := tokenLen(cl, itemLine(&Item{Source: SourceMemories, Text: m.Text, Time: m.CreatedAt, Memory: &m})) + 1
	if wantCl == want {
		t.Fatalf("the two encodings count the line alike (%d): the test shows nothing", want)
	}
	rec, err = st.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, rec, m.ID); got != wantCl {
		t.Errorf("cl100k_base: Tokens %d, want %d", got, wantCl)
	}
}

// tokensOf returns the Tokens of the kept candidate id of rec.
func tokensOf(t *testing.T, rec *Recollection, id string) int {
	t.Helper()
	for _, c := range rec.Trace.Candidates {
		if c.ID == id {
			if !c.Kept {
				t.Fatalf("candidate %s not kept: %s", id, c.Reason)
			}
			return c.Tokens
		}
	}
	t.Fatalf("no candidate %s", id)
	return 0
}
