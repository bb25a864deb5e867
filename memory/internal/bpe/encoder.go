package bpe

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoder is one encoding's ranks and pre-tokenizer. It is immutable and
// safe for concurrent use.
type Encoder struct {
	name  string
	ranks map[string]int // a token's bytes → its id
	bytes []string       // an id → its bytes; "" for an id no token has
	next  func(s string, i int) int
}

// rankFiles maps each encoding to its rank file (the name the loader
// looks up) and pre-tokenizer.
var rankFiles = map[string]struct {
	file string
	next func(string, int) int
}{
	"o200k_base":  {"o200k_base.tiktoken", nextO200k},
	"cl100k_base": {"cl100k_base.tiktoken", nextCl100k},
	"p50k_base":   {"p50k_base.tiktoken", nextGPT2},
	"r50k_base":   {"r50k_base.tiktoken", nextGPT2},
}

// Load reads the named encoding's ranks from the embedded rank files. It
// costs 100-250 ms and about as much memory as the ranks' text; callers
// keep one Encoder per encoding.
func Load(name string) (*Encoder, error) {
	f, ok := rankFiles[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEncoding, name)
	}
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(f.file)
	if err != nil {
		return nil, fmt.Errorf("bpe: load %s: %w", name, err)
	}
	return newEncoder(name, ranks, f.next), nil
}

func newEncoder(name string, ranks map[string]int, next func(string, int) int) *Encoder {
	maxID := -1
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	e := &Encoder{name: name, ranks: ranks, bytes: make([]string, maxID+1), next: next}
	for b, id := range ranks {
		e.bytes[id] = b
	}
	return e
}

// Name returns the encoding's name, such as "o200k_base".
func (e *Encoder) Name() string { return e.name }

// Count returns how many tokens s encodes to, without special tokens: the
// length of [Encoder.EncodeOrdinary], without building it.
func (e *Encoder) Count(s string) int {
	n := 0
	e.pieces(s, func(piece string) {
		if _, ok := e.ranks[piece]; ok {
			n++
			return
		}
		n += e.merge(piece, nil)
	})
	return n
}

// EncodeOrdinary returns the tokens of s, special tokens read as text: the
// same as tiktoken-go's EncodeOrdinary.
func (e *Encoder) EncodeOrdinary(s string) []int {
	toks := []int{}
	e.pieces(s, func(piece string) {
		if id, ok := e.ranks[piece]; ok {
			toks = append(toks, id)
			return
		}
		e.merge(piece, func(id int) { toks = append(toks, id) })
	})
	return toks
}

// Decode returns the text of tokens; ids no token has are skipped, as
// tiktoken-go skips them. The text may end inside a UTF-8 sequence when
// the tokens do.
func (e *Encoder) Decode(tokens []int) string {
	var b strings.Builder
	for _, id := range tokens {
		if id >= 0 && id < len(e.bytes) {
			b.WriteString(e.bytes[id])
		}
	}
	return b.String()
}

// pieces calls yield with the pre-tokenizer's pieces of s, in order.
func (e *Encoder) pieces(s string, yield func(string)) {
	if !utf8.ValidString(s) {
		s = replaceInvalid(s)
	}
	for i := 0; i < len(s); {
		j := e.next(s, i)
		yield(s[i:j])
		i = j
	}
}

// replaceInvalid replaces each byte of s that is not part of a valid UTF-8
// sequence by U+FFFD, as converting s to []rune does (strings.ToValidUTF8
// would replace a run of them by one).
func replaceInvalid(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// part is one boundary of a piece being merged: where it starts, and the
// rank of the pair from it to the boundary after next (math.MaxInt when the
// pair is no token).
type part struct {
	start, rank int
}

// merge runs tiktoken's byte-pair merge on piece, a piece that is no token
// itself: repeatedly join the adjacent pair with the lowest rank (the
// leftmost of equals) until no pair is a token. It calls emit, when not
// nil, with each resulting token in order, and returns how many there are.
func (e *Encoder) merge(piece string, emit func(int)) int {
	var stack [64]part
	parts := stack[:0]
	if len(piece)+1 > len(stack) {
		parts = make([]part, 0, len(piece)+1)
	}
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{i, math.MaxInt})
	}
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := e.ranks[piece[parts[i].start:parts[i+skip+2].start]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		lowest, at := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < lowest {
				lowest, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].rank = rank(at, 1)
		if at > 0 {
			parts[at-1].rank = rank(at-1, 1)
		}
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	if emit != nil {
		for i := 0; i < len(parts)-1; i++ {
			emit(e.ranks[piece[parts[i].start:parts[i+1].start]])
		}
	}
	return len(parts) - 1
}
