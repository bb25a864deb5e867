package bpe

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// The reference is tiktoken-go, whose pre-tokenizer is the encodings'
// published regular expressions run by regexp2.
var encodings = []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base"}

var loaded struct {
	once sync.Once
	ours map[string]*Encoder
	ref  map[string]*tiktoken.Tiktoken
	err  error
}

func load(t testing.TB) (map[string]*Encoder, map[string]*tiktoken.Tiktoken) {
	t.Helper()
	loaded.once.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		loaded.ours = map[string]*Encoder{}
		loaded.ref = map[string]*tiktoken.Tiktoken{}
		for _, name := range encodings {
			e, err := Load(name)
			if err != nil {
				loaded.err = err
				return
			}
			r, err := tiktoken.GetEncoding(name)
			if err != nil {
				loaded.err = err
				return
			}
			loaded.ours[name], loaded.ref[name] = e, r
		}
	})
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.ours, loaded.ref
}

// invalidUTF8 holds texts that are not valid UTF-8, which tiktoken-go
// reads with each bad byte as U+FFFD (testdata's texts are all valid:
// JavaScript strings cannot hold such bytes).
var invalidUTF8 = []string{
	"\xff\xfe invalid \xc3 utf8 \xe2\x82 here \xed\xa0\x80 surrogate",
	"\x80", "a\xc3", "\xe2\x82\xac\xe2\x82",
}

// corpus returns testdata/tiktoken's texts (hand-written to exercise
// every alternative of the patterns: contractions in both cases, prefixes
// before letters, marks, title case, digits in threes, punctuation with
// newlines and slashes, white space before letters, digits and the end,
// scripts without case; and 500 generated) and invalidUTF8.
func corpus(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tiktoken", "texts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	if err := json.Unmarshal(b, &texts); err != nil {
		t.Fatal(err)
	}
	return append(texts, invalidUTF8...)
}

func TestMatchesTiktoken(t *testing.T) {
	ours, ref := load(t)
	for _, name := range encodings {
		for _, s := range corpus(t) {
			check(t, ours[name], ref[name], s)
		}
	}
}

// TestMatchesTiktokenRandom compares the two on random strings drawn from
// runes of every class the patterns tell apart.
func TestMatchesTiktokenRandom(t *testing.T) {
	ours, ref := load(t)
	alphabet := []rune("aZ'sStTrReEvVmMlLdD 0159 \t\n\r\v\f.,!?/-_@#é\u0301\u0308Àßǅʰあ漢字Ωω١½Ⅻ\u00a0\u2003\u3000\u200b👋🏽\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 500
	}
	for range n {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		for _, name := range encodings {
			check(t, ours[name], ref[name], s)
		}
	}
}

func FuzzMatchesTiktoken(f *testing.F) {
	for _, s := range corpus(f) {
		f.Add(s)
	}
	ours, ref := load(f)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2048 {
			return // the merge is quadratic in a piece's length, in both
		}
		for _, name := range encodings {
			check(t, ours[name], ref[name], s)
		}
	})
}

// patterns are the encodings' published pre-tokenizer expressions, as
// tiktoken-go compiles them with regexp2.
var patterns = map[string]string{
	"o200k_base": strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
	"cl100k_base": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"p50k_base":   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
	"r50k_base":   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
}

var compiled sync.Map // name → *regexp2.Regexp

// refPieces splits valid UTF-8 s with the published expression.
func refPieces(t *testing.T, name, s string) []string {
	t.Helper()
	re, ok := compiled.Load(name)
	if !ok {
		re, _ = compiled.LoadOrStore(name, regexp2.MustCompile(patterns[name], regexp2.None))
	}
	runes := []rune(s)
	var out []string
	m, err := re.(*regexp2.Regexp).FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.(*regexp2.Regexp).FindNextMatch(m) {
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func check(t *testing.T, e *Encoder, ref *tiktoken.Tiktoken, s string) {
	t.Helper()
	if utf8.ValidString(s) {
		if got, want := pieceList(e, s), refPieces(t, e.Name(), s); !slices.Equal(got, want) {
			t.Fatalf("%s: pieces of %q\n got %q\nwant %q", e.Name(), s, got, want)
		}
	}
	want := ref.EncodeOrdinary(s)
	got := e.EncodeOrdinary(s)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: EncodeOrdinary(%q)\n got %v\nwant %v\n got pieces %q", e.Name(), s, got, want, pieceList(e, s))
	}
	if n := e.Count(s); n != len(want) {
		t.Fatalf("%s: Count(%q) = %d, want %d", e.Name(), s, n, len(want))
	}
	if d, w := e.Decode(got), ref.Decode(want); d != w {
		t.Fatalf("%s: Decode of %q = %q, want %q", e.Name(), s, d, w)
	}
	if utf8.ValidString(s) && e.Decode(got) != s {
		t.Fatalf("%s: Decode(EncodeOrdinary(%q)) = %q", e.Name(), s, e.Decode(got))
	}
}

func pieceList(e *Encoder, s string) []string {
	var out []string
	e.pieces(s, func(p string) { out = append(out, p) })
	return out
}

func TestLoadUnknown(t *testing.T) {
	if _, err := Load("gpt9_base"); !errors.Is(err, ErrUnknownEncoding) {
		t.Fatalf("Load(gpt9_base) = %v, want ErrUnknownEncoding", err)
	}
}

func TestDecodeSkipsUnknownIDs(t *testing.T) {
	ours, _ := load(t)
	e := ours["o200k_base"]
	toks := e.EncodeOrdinary("hello")
	if got := e.Decode(append([]int{-1, 1 << 30}, toks...)); got != "hello" {
		t.Fatalf("Decode with unknown ids = %q, want hello", got)
	}
}

func TestCountAllocatesNothing(t *testing.T) {
	ours, _ := load(t)
	e := ours["o200k_base"]
	s := "The quick brown fox's jumps over 123 lazy dogs, naïvely.\nThen: Zürich!"
	if a := testing.AllocsPerRun(100, func() { e.Count(s) }); a > 0 {
		t.Fatalf("Count allocates %v times per call, want 0", a)
	}
}

func BenchmarkCount(b *testing.B) {
	ours, ref := load(b)
	s := "c3-n17: the weather of Berlin preference coffee 4711 meeting alpha project budget deadline review travel plan for the team in spring"
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		b.Run(name+"/bpe", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				ours[name].Count(s)
			}
		})
		b.Run(name+"/tiktoken-go", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				_ = len(ref[name].EncodeOrdinary(s))
			}
		})
	}
}
