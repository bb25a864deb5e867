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
