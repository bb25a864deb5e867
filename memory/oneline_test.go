package memory

import (
	"strings"
	"testing"
)

// FuzzOneLine: oneLine is strings.Join(strings.Fields(s), " ") for any
// input, invalid UTF-8 and non-ASCII white space included.
func FuzzOneLine(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", " a", "a ", "a  b", "a\tb", "a\nb", "Alice —renewal owner→ Eve",
		"a\u00a0b", "a\u2003b", "a\u0085", "\xff \xfe", "- [2026-01-02] (preference) tea", "x\u200by"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := oneLine(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("oneLine(%q) = %q, want %q", s, got, want)
		}
	})
}

// FuzzFactText: writeFactText writes factText's text, factTextLen bytes
// long, with underscores of the predicate anywhere.
func FuzzFactText(f *testing.F) {
	f.Add("Alice", "renewal_owner", "Eve")
	f.Add("", "_", "")
	f.Add("a_b", "__x__", "é_")
	f.Fuzz(func(t *testing.T, subject, predicate, object string) {
		fact := Fact{Subject: subject, Predicate: predicate, Object: object}
		var b strings.Builder
		writeFactText(&b, &fact)
		if want := factText(&fact); b.String() != want || factTextLen(&fact) != len(want) {
			t.Fatalf("writeFactText %q (length %d), factText %q", b.String(), factTextLen(&fact), want)
		}
	})
}
