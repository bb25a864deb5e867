package embed

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// randomText draws n characters from alphabet.
func randomText(rng *rand.Rand, alphabet []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// TestSequenceReplaceMerge checks that a Sequence of one-character
// Replace normalizers, which parseNormalizer runs as one strings.Replacer
// where that is equivalent, gives what replacing one rule after another
// gives, on random rules and texts.
func TestSequenceReplaceMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	alphabet := []string{"a", "b", "c", "é", " ", "!", "東"}
	for range 3000 {
		type rule struct{ old, content string }
		var rules []rule
		var parts []any
		for range 1 + rng.IntN(6) {
			r := rule{alphabet[rng.IntN(len(alphabet))], randomText(rng, alphabet, rng.IntN(4))}
			rules = append(rules, r)
			parts = append(parts, map[string]any{"type": "Replace", "pattern": map[string]any{"String": r.old}, "content": r.content})
		}
		if rng.IntN(4) == 0 {
			parts = append(parts, map[string]any{"type": "Lowercase"})
		}
		raw, _ := json.Marshal(map[string]any{"type": "Sequence", "normalizers": parts})
		n, err := parseNormalizer(raw)
		if err != nil {
			t.Fatal(err)
		}
		text := randomText(rng, alphabet, rng.IntN(12))
		want := text
		for _, r := range rules {
			want = strings.ReplaceAll(want, r.old, r.content)
		}
		if got := n(text); got != want {
			t.Fatalf("rules %v on %q: %q, want %q", rules, text, got, want)
		}
	}
}

// TestSqueezeSpaces checks the Replace of `\s+` that runs without the
// regexp engine against the translated regular expression.
func TestSqueezeSpaces(t *testing.T) {
	re := regexp.MustCompile("[" + onigSpace + "]+")
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "b", " ", "\t", "\n", "\u00a0", "\u3000", "\u2028", "\u200b", "\x85", "é", "\xff"}
	for range 5000 {
		text := randomText(rng, alphabet, rng.IntN(10))
		for _, content := range []string{" ", "", "_", "\t"} {
			if got, want := squeezeSpaces(text, content), re.ReplaceAllLiteralString(text, content); got != want {
				t.Fatalf("%q with %q: %q, want %q", text, content, got, want)
			}
		}
	}
}

// TestTranslateOnig checks the rewriting of Oniguruma's Unicode classes
// for Go's regexp.
func TestTranslateOnig(t *testing.T) {
	cases := []struct {
		expr      string
		match, no []string
	}{
		{`\s+`, []string{" ", "\u3000", "\u00a0\t"}, []string{"a", "\u200b"}},
		{`^\S+$`, []string{"ab", "東"}, []string{"a b", "\u2028"}},
		{`^\d+$`, []string{"12", "٣"}, []string{"²", "a"}},
		{`^\w+$`, []string{"aé_", "Ⅳ", "a\u200db"}, []string{"a-b", "²"}},
		{`^[\s,]+$`, []string{" ,\u3000"}, []string{"a"}},
		{`^\\s$`, []string{`\s`}, []string{" "}},
		{`^\.$`, []string{"."}, []string{"a"}},
	}
	for _, c := range cases {
		expr, err := translateOnig(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		re := regexp.MustCompile(expr)
		for _, m := range c.match {
			if !re.MatchString(m) {
				t.Errorf("%s (%s) does not match %q", c.expr, expr, m)
			}
		}
		for _, m := range c.no {
			if re.MatchString(m) {
				t.Errorf("%s (%s) matches %q", c.expr, expr, m)
			}
		}
	}
	if _, err := translateOnig(`[\S]`); err == nil {
		t.Error(`[\S] translated`)
	}
}

// FuzzPrecompiled checks that a Precompiled normalizer built from any
// bytes either is refused with ErrInvalidModel or normalises any text
// without panicking, to valid UTF-8 when the text is.
func FuzzPrecompiled(f *testing.F) {
	real, err := os.ReadFile(filepath.Join("testdata", "tokenizers", "spm-unigram-nmt-nfkc.json"))
	if err != nil {
		f.Fatal(err)
	}
	var doc struct {
		Normalizer struct {
			Normalizers []struct {
				Charsmap string `json:"precompiled_charsmap"`
			} `json:"normalizers"`
		} `json:"normalizer"`
	}
	if err := json.Unmarshal(real, &doc); err != nil {
		f.Fatal(err)
	}
	cm, _ := base64.StdEncoding.DecodeString(doc.Normalizer.Normalizers[0].Charsmap)
	size := binary.LittleEndian.Uint32(cm)
	// The real map's first units and replacements: a trie whose offsets
	// point past its end, to replacements that are cut short.
	small := binary.LittleEndian.AppendUint32(nil, 4096)
	small = append(small, cm[4:4+4096]...)
	small = append(small, cm[4+size:4+size+2048]...)
	f.Add(small, "ﬁ\u0301 Å ｈｅｌｌｏ ㍿")
	f.Add([]byte{8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 'a', 0}, "abc")
	f.Add([]byte{0, 0, 0, 0}, "x")
	f.Fuzz(func(t *testing.T, charsmap []byte, text string) {
		raw, _ := json.Marshal(map[string]any{"type": "Precompiled", "precompiled_charsmap": base64.StdEncoding.EncodeToString(charsmap)})
		n, err := parseNormalizer(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidModel) {
				t.Fatalf("error %v is not ErrInvalidModel", err)
			}
			return
		}
		if out := n(text); utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("%q became %q", text, out)
		}
	})
}
