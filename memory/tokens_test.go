package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// pathological are texts the pre-tokenizer makes one long piece of, the
// inputs that made counting quadratic (issue 12, defect 4).
var pathological = []struct {
	name string
	make func(n int) string
}{
	{"letter", func(n int) string { return strings.Repeat("a", n) }},
	{"letters", func(n int) string {
		r := rand.New(rand.NewPCG(1, 2))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}},
	{"punct", func(n int) string { return strings.Repeat("!", n) }},
	{"space", func(n int) string { return strings.Repeat(" ", n) }},
	{"newline", func(n int) string { return strings.Repeat("\n", n) }},
	{"digits", func(n int) string { return strings.Repeat("7", n) }},
	{"cjk", func(n int) string { return strings.Repeat("中", n/3) }},
	{"apostrophes", func(n int) string { return strings.Repeat("a'", n/2) }},
}

// recordingEncoder stands in for the tokenizer and records what it is
// given: the work the BPE does on a text is bounded by the squares of the
// stretches (runs between exact cuts) in it, since every pre-token lies in
// one stretch.
type recordingEncoder struct {
	calls int
	bytes int
	cost  int // sum over stretches of len²
}

func (e *recordingEncoder) EncodeOrdinary(s string) []int {
	e.calls++
	e.bytes += len(s)
	run, prev := 0, rune(-1)
	for _, r := range s {
		if prev >= 0 && exactCut(prev, r) {
			e.cost += run * run
			run = 0
		}
		run += len(string(r))
		prev = r
	}
	e.cost += run * run
	return nil
}

// TestTokenLenLinear proves that counting is linear in the text's size
// without timing anything: the quadratic cost measure of what reaches the
// encoder grows 4× when the text does, and is at most maxRun per byte.
// Before the fix the whole run reached the encoder: cost N², 16× for 4×.
func TestTokenLenLinear(t *testing.T) {
	for _, p := range pathological {
		t.Run(p.name, func(t *testing.T) {
			var small, large recordingEncoder
			n := 64 << 10
			tokenLen(&small, p.make(n))
			encodeLinear(&small, p.make(n))
			tokenLen(&large, p.make(4*n))
			encodeLinear(&large, p.make(4*n))
			if small.bytes != 2*len(p.make(n)) || large.bytes != 2*len(p.make(4*n)) {
				t.Fatalf("encoder saw %d and %d bytes, want every byte once", small.bytes, large.bytes)
			}
			if small.cost > small.bytes*maxRun || large.cost > large.bytes*maxRun {
				t.Errorf("cost %d for %d bytes, %d for %d: over maxRun (%d) per byte", small.cost, small.bytes, large.cost, large.bytes, maxRun)
			}
			if ratio := float64(large.cost) / float64(small.cost); ratio > 4.1 {
				t.Errorf("4× the text costs %.1f× as much; want linear (4×)", ratio)
			}
		})
	}
}

// TestTokenLenExactOrdinary checks that ordinary text counts exactly what
// the encoder counts, also past maxRun, where tokenLen cuts it.
func TestTokenLenExactOrdinary(t *testing.T) {
	texts := []string{
		"",
		"My renewal owner is Dana; please check account 3942 before Friday.",
		strings.Repeat("The quick brown fox jumps over the lazy dog, doesn't it? ", 200),
		strings.Repeat("func (s *Store) Close() error {\n\ts.sweep.stop()\n\treturn s.db.Close()\n}\n", 50),
		strings.Repeat(`{"id":"call_1","name":"lookup","arguments":{"q":"x","n":12345,"ok":true}},`, 60),
		strings.Repeat("https://example.com/path/to/page?id=42&q=hello%20world#frag\n", 40),
		strings.Repeat("我们明天去北京，然后去上海。你觉得怎么样？", 60),
		strings.Repeat("Grüße aus Köln — naïve café, façade; 東京タワー 🙂🙂 ", 60),
		strings.Repeat("line1\nline2\r\n\n\tindented  two  spaces\u00a0nbsp ", 80),
		strings.Repeat("aGVsbG8gd29ybGQ=/+QUJD1234ZGVm==", 40),
		strings.Repeat("\xff\xfe invalid bytes \x80 ", 60),
	}
	for _, name := range encodings {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range texts {
			want := enc.EncodeOrdinary(s)
			if got := tokenLen(enc, s); got != len(want) {
				t.Errorf("%s: text %d (%d bytes): tokenLen %d, encoder %d", name, i, len(s), got, len(want))
			}
			if got := encodeLinear(enc, s); !slices.Equal(got, want) {
				t.Errorf("%s: text %d (%d bytes): encodeLinear differs from the encoder", name, i, len(s))
			}
		}
	}
}

// TestExactCut checks exactCut's claim against every encoding: random text
// cut at every exact cut encodes, piece by piece, to the same tokens as the
// whole.
func TestExactCut(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", "²", " ", "  ", "\t", "\n", "\r\n",
		"\u00a0", "\u2003", "'", "'s", "'T", "/", ".", ",", "!", "-", "_", "\"", "{", "🙂", "\x00", "\x7f", "\xff", "\u200b", "\ufeff", "\u0085"}
	r := rand.New(rand.NewPCG(3, 4))
	n := 400
	if testing.Short() {
		n = 100
	}
	for _, name := range encodings {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			var b strings.Builder
			for range 1 + r.IntN(40) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			s := b.String()
			want := enc.EncodeOrdinary(s)
			var got []int
			var pieces []string
			start, prev := 0, rune(-1)
			for i, c := range s {
				if prev >= 0 && exactCut(prev, c) {
					pieces = append(pieces, s[start:i])
					got = append(got, enc.EncodeOrdinary(s[start:i])...)
					start = i
				}
				prev = c
			}
			pieces = append(pieces, s[start:])
			got = append(got, enc.EncodeOrdinary(s[start:])...)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %q cut as %q encodes to %v, whole %v", name, s, pieces, got, want)
			}
		}
	}
}

// TestTokenLenPathologicalError measures how far chunked counting is from
// the exact count on runs long enough to be chunked (small enough that the
// exact count stays fast): on these runs never below it, and within 1%.
func TestTokenLenPathologicalError(t *testing.T) {
	enc, err := tokenizer(DefaultEncoding)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pathological {
		s := p.make(4 << 10)
		got, want := tokenLen(enc, s), len(enc.EncodeOrdinary(s))
		if got < want || float64(got-want) > 0.01*float64(want)+1 {
			t.Errorf("%s: chunked count %d, exact %d", p.name, got, want)
		}
	}
}

// BenchmarkCountTokensPathological counts runs with no white space, the
// inputs that were quadratic: ns/byte must stay flat across sizes.
func BenchmarkCountTokensPathological(b *testing.B) {
	enc, err := tokenizer(DefaultEncoding)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range pathological[:3] {
		for _, n := range []int{16 << 10, 64 << 10, 256 << 10} {
			s := p.make(n)
			b.Run(fmt.Sprintf("%s/%dKiB", p.name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					tokenLen(enc, s)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/byte")
			})
		}
	}
}

// TestSummarizePathological: the extractive summarizer cuts a message
// that is one long run (which went through the quadratic encoder whole)
// to the budget.
func TestSummarizePathological(t *testing.T) {
	for _, p := range pathological[:3] {
		out, err := Extractive{}.Summarize(bg, "", []Message{user(p.make(64 << 10))}, 50)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := tokenizer(DefaultEncoding)
		if n := tokenLen(enc, out); n > 50 {
			t.Errorf("%s: summary of %d tokens, budget 50", p.name, n)
		}
	}
}

// TestJoinedTokens checks joinedTokens against the encoders: lines of
// random text (letters, digits, punctuation that takes a line break,
// apostrophes, slashes, marks, CJK, emoji, inner white space) joined by
// '\n' count the same from their parts as whole, in every encoding.
func TestJoinedTokens(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", "²", " ", "  ", "\t",
		"\u00a0", "'", "'s", "'T", "/", ".", ",", "!", "?", "...", "-", "_", "\"", "{", ")", "🙂", "\u200b", ": "}
	r := rand.New(rand.NewPCG(5, 6))
	n := 300
	if testing.Short() {
		n = 60
	}
	for _, name := range encodings {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			var units []summaryUnit
			var kept []int
			for i := range 1 + r.IntN(6) {
				var b strings.Builder
				for range 1 + r.IntN(12) {
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				u := summaryUnit{text: strings.TrimSpace(b.String())}
				if u.text == "" {
					u.text = "x"
				}
				if r.IntN(2) == 0 {
					u.speaker = "user"
				}
				units = append(units, u)
				kept = append(kept, i)
			}
			r.Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
			kept = kept[:1+r.IntN(len(kept))]
			joined := joinUnits(units, kept)
			if got, want := joinedTokens(enc, units, kept), tokenLen(enc, joined); got != want {
				t.Fatalf("%s: %q counts %d from its lines, %d whole", name, joined, got, want)
			}
		}
	}
}
