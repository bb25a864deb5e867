package memory

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// TestFactLineTokens checks that a fact line's pieces, "-", the count
// of the fact's text (memoryTextTokens of factText) and the validity
// suffix, add up to the line's own count, for random names and dates.
func TestFactLineTokens(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", " ", "  ", "\t", "'", "'s", "/", ".", ",", "!", "-", "(", ")", "🙂", "Dana", " Lisbon", "42", "_"}
	r := rand.New(rand.NewPCG(11, 12))
	word := func() string {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		if r.IntN(10) == 0 { // a stretch past maxRun
			b.WriteString(strings.Repeat("xy", 300))
		}
		return b.String()
	}
	day := func() time.Time {
		return time.Date(1990+r.IntN(80), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), 0, 0, 0, time.UTC)
	}
	n := 300
	if testing.Short() {
		n = 80
	}
	for _, name := range []string{"o200k_base", "cl100k_base", "p50k_base"} {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			f := Fact{Subject: word(), Predicate: strings.ReplaceAll(word(), " ", "_"), Object: word()}
			switch r.IntN(3) {
			case 1:
				f.ValidFrom = day()
			case 2:
				f.ValidFrom = day()
				f.ValidTo = f.ValidFrom.Add(time.Duration(1+r.IntN(900)) * 24 * time.Hour)
			}
			it := Item{Source: SourceGraph, Text: factText(&f), Fact: &f}
			got := factLineTokens(enc, &f, memoryTextTokens(enc, it.Text))
			if want := tokenLen(enc, itemLine(&it)); got != want {
				t.Fatalf("%s: %q: pieces %d, line %d", name, itemLine(&it), got, want)
			}
		}
	}
}

// TestFactTextTokens checks that a fact's count made of its three cached
// pieces (factTextTokens) is its whole text's (memoryTextTokens of
// factText), for random names: white space, marks, digits, punctuation,
// long stretches and names with white space at an edge among them.
func TestFactTextTokens(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", " ", "  ", "\t", "\u00a0", "\u200b", "'", "'s", "/", ".", ",", "!", "-", "—", "→", "(", ")", "🙂", "Dana", " Lisbon", "42", "_"}
	r := rand.New(rand.NewPCG(13, 14))
	word := func() string {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		if r.IntN(20) == 0 { // a stretch past maxRun
			b.WriteString(strings.Repeat("xy", 300))
		}
		return b.String()
	}
	n := 2000
	if testing.Short() {
		n = 300
	}
	for _, name := range []string{"o200k_base", "cl100k_base", "p50k_base"} {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			f := Fact{Subject: word(), Predicate: word(), Object: word()}
			if got, want := factTextTokens(enc, &f), memoryTextTokens(enc, factText(&f)); got != want {
				t.Fatalf("%s: %q: pieces %d, whole %d", name, factText(&f), got, want)
			}
		}
	}
}

// TestRecallCountsFactTokens checks that Recall counts a fact's line to
// the figure of the whole line tokenized (from its text's pieces, see
// factTextTokens), that a second turn takes the line from the count cache, and that a
// count an older store left as the fact's annotation, even a wrong one,
// is not read.
func TestRecallCountsFactTokens(t *testing.T) {
	st := openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice"}
	// A text nobody else counts: the line cache cannot have it.
	object := "the Lisbon offsite of " + strings.Repeat("Überweisungsbestätigung München 東京都 ", 4) + time.Now().Format(time.RFC3339Nano)
	f, err := st.Relate(bg, scope, Fact{Subject: "Alice", Predicate: "plans", Object: object, ValidFrom: time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := st.encoder()
	want := tokenLen(enc, itemLine(&Item{Source: SourceGraph, Text: factText(&f), Fact: &f})) + 1
	q := Query{Trace: true, Scope: scope, Text: "What does Alice plan?", Sources: []Source{SourceGraph}, MaxTokens: 4000}
	recall := func(what string, reset, tokenized bool) {
		t.Helper()
		if reset {
			resetTokenCaches()
		}
		before := tokenizedBytes.Load()
		rec, err := st.Recall(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := tokensOf(t, rec, f.ID); got != want {
			t.Errorf("%s: Tokens %d, want %d", what, got, want)
		}
		if n := tokenizedBytes.Load() - before; (n >= int64(len(object))) != tokenized {
			t.Errorf("%s: Recall tokenized %d bytes, the fact's object %d", what, n, len(object))
		}
	}
	recall("cold", true, true)
	recall("cached", false, false)

	// An older store's annotation: a count of 3 for this text.
	root, err := graphRoot(scope)
	if err != nil {
		t.Fatal(err)
	}
	key := graph.AppendAnnotationKey(nil, root, ulid.MustParse(f.ID))
	old := binary.AppendUvarint(binary.AppendUvarint(nil, 3), uint64(len(factText(&f))))
	if err := st.db.Update(bg, func(tx *engine.Tx) error { return tx.Set(key, append(old, DefaultEncoding...)) }); err != nil {
		t.Fatal(err)
	}
	recall("old annotation", true, true)
}
