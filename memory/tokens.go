package memory

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/memory/internal/bpe"
)

// DefaultEncoding is the tiktoken encoding used when Options.Encoding is
// empty: o200k_base, the encoding of OpenAI's GPT-4o, GPT-4.1 and o-series
// models.
const DefaultEncoding = "o200k_base"

// Encodings lists the tiktoken encodings that ship inside the binary (from
// github.com/pkoukk/tiktoken-go-loader) and so load without a network.
var encodings = []string{"o200k_base", "cl100k_base", "p50k_base", "r50k_base"}

// Chat-format overheads from OpenAI's cookbook ("How to count tokens with
// tiktoken"): every message costs 3 tokens of framing, a name 1 more.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensPerCall    = 3 // framing of one tool call (id, type, function)
)

// tokenizers caches one encoder per encoding for the process: loading one
// costs 100-250 ms, and an encoder is immutable and safe for concurrent use.
var tokenizers struct {
	mu  sync.Mutex
	enc map[string]*bpe.Encoder
}

func knownEncoding(name string) bool { return slices.Contains(encodings, name) }

// tokenizer returns the encoder for name, loading it from the embedded rank
// files on first use. The encoder is internal/bpe's: tiktoken-go's tokens
// (its tests compare them) without tiktoken-go's regexp2 pre-tokenizer,
// which took 70% of the time of counting (bench/results/load.md).
func tokenizer(name string) (*bpe.Encoder, error) {
	tokenizers.mu.Lock()
	defer tokenizers.mu.Unlock()
	if enc, ok := tokenizers.enc[name]; ok {
		return enc, nil
	}
	if !knownEncoding(name) {
		return nil, fmt.Errorf("%w: unknown tiktoken encoding %q (have %v)", ErrInvalidOptions, name, encodings)
	}
	enc, err := bpe.Load(name)
	if err != nil {
		return nil, fmt.Errorf("memory: load tiktoken encoding %s: %w", name, err)
	}
	if tokenizers.enc == nil {
		tokenizers.enc = map[string]*bpe.Encoder{}
	}
	tokenizers.enc[name] = enc
	return enc, nil
}

// countTokens counts a message as the chat format sends it: framing, role,
// content, name, tool calls (id, name, arguments) and the tool-call id of a
// result. Special-token text in content is counted as ordinary text.
func countTokens(enc ordinaryEncoder, m *Message) int {
	return countTokensWith(enc, m, tokenLen(enc, m.Content))
}

// countTokensWith is countTokens for a message whose content counts
// content tokens.
func countTokensWith(enc ordinaryEncoder, m *Message, content int) int {
	n := tokensPerMessage + tokenLen(enc, string(m.Role)) + content
	if m.Name != "" {
		n += tokensPerName + tokenLen(enc, m.Name)
	}
	for _, c := range m.ToolCalls {
		n += tokensPerCall + tokenLen(enc, c.ID) + tokenLen(enc, c.Name) + tokenLen(enc, string(c.Arguments))
	}
	if m.ToolCallID != "" {
		n += tokenLen(enc, m.ToolCallID)
	}
	return n
}

// tokenizedBytes counts the bytes tokenLen was given in this process: a
// test seam that shows which calls tokenize (an oversized message must be
// refused before).
var tokenizedBytes atomic.Int64

// ordinaryEncoder is the part of *bpe.Encoder that counting needs.
type ordinaryEncoder interface {
	EncodeOrdinary(text string) []int
}

// counter is an encoder that counts without building the tokens, as
// *bpe.Encoder does.
type counter interface {
	Count(text string) int
}

// encodedLen returns len(enc.EncodeOrdinary(s)), without the tokens when
// enc can count.
func encodedLen(enc ordinaryEncoder, s string) int {
	if c, ok := enc.(counter); ok {
		return c.Count(s)
	}
	return len(enc.EncodeOrdinary(s))
}

// maxRun is the longest stretch of text, in bytes, that tokenLen hands to
// the encoder without a cut the encoder's pre-tokenizer would make itself.
//
// Why: tiktoken's pre-tokenizer splits text at white space and at changes
// between letters, digits and punctuation, then runs BPE on each piece; the
// BPE merge loop (tiktoken's, which internal/bpe keeps) is quadratic in the
// piece's length, so one piece of N letters (no spaces) costs O(N²): 3 s
// for 64 KiB, 57 s for 250 KiB (issue 12, tiktoken-go). Cut every maxRun
// bytes, such a run costs O(N·maxRun). Measured with tiktoken-go on
// o200k_base (2-core VM): a 256-byte run costs about as much per byte as
// English prose (~1-1.5 µs/byte then), 512 bytes 2-3×, 8 KiB 20×.
// 512 bytes keeps ordinary runs (a CJK clause, a German compound, a URL's
// path segment) whole, so they count exactly.
const maxRun = 512

// tokenLen returns the number of tokens enc gives s, in time linear in
// len(s).
//
// Text is cut only where enc's pre-tokenizer cuts anyway (see exactCut),
// except inside a stretch of more than [maxRun] bytes with no such cut (a
// run of letters, digits, punctuation or white space): that stretch is
// encoded in maxRun-byte chunks. So the count is exact for any text whose
// stretches are at most maxRun bytes, which ordinary text is, and off by at
// most a few tokens per chunk for a pathological run, usually over: BPE is
// greedy, so a cut can also save a token (a review found 2 under, at 646
// and 1,164 bytes: "." then "..'" repeated is 340 chunked, 341 whole). Measured
// on 64 KiB runs in o200k_base (exact count / chunked): one letter 8192 /
// 8192, random letters 33959 / 33978 (+0.06%), "!" 4096 / 4096, spaces
// 512 / 512, CJK 10922 / 10922, digits 21846 / 21888 (+0.19%), "a'"
// repeated 32769 / 32896 (+0.39%); TestTokenLenPathologicalError keeps it
// within 1%.
func tokenLen(enc ordinaryEncoder, s string) int {
	tokenizedBytes.Add(int64(len(s)))
	if len(s) <= maxRun {
		return encodedLen(enc, s)
	}
	n := 0
	segments(s, func(seg string) { n += encodedLen(enc, seg) })
	return n
}

// encodeLinear returns the tokens enc gives s, encoded as [tokenLen]
// counts them: exact for ordinary text, in linear time for any.
func encodeLinear(enc ordinaryEncoder, s string) []int {
	tokenizedBytes.Add(int64(len(s)))
	if len(s) <= maxRun {
		return enc.EncodeOrdinary(s)
	}
	var toks []int
	segments(s, func(seg string) { toks = append(toks, enc.EncodeOrdinary(seg)...) })
	return toks
}

// segments calls yield with consecutive pieces of s that together make s:
// as few as possible, each either free of stretches longer than maxRun or
// one chunk of at most maxRun bytes of such a stretch.
func segments(s string, yield func(string)) {
	start, stretch := 0, 0 // the segment not yet yielded; the last exact cut
	var prev rune
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if i > 0 && exactCut(prev, r) {
			stretch = i
		}
		if i+w-stretch > maxRun && i > stretch {
			// The stretch outgrew maxRun: yield what precedes it, then
			// its first bytes up to this rune.
			if stretch > start {
				yield(s[start:stretch])
			}
			yield(s[stretch:i])
			start, stretch = i, i
		}
		prev = r
		i += w
	}
	if start < len(s) {
		yield(s[start:])
	}
}

// exactCut reports whether every tiktoken encoding shipped
// (o200k_base, cl100k_base, p50k_base, r50k_base) starts a new pre-token
// between a and b, whatever comes before a or after b. Their patterns
// (tiktoken-go encoding.go) have no look-behind, and their only look-ahead,
// \s+(?!\S), decides nothing at such a cut, so encoding the text on each
// side separately gives the same tokens as encoding the whole. The rules
// are conservative: a cut they miss only makes a stretch longer.
// TestExactCut checks them against the encoders on random text.
func exactCut(a, b rune) bool {
	switch {
	case b == ' ' || b == '\t':
		// White space never joins a piece that holds a non-space before it.
		return !isSpaceLike(a)
	case b == '\r' || b == '\n':
		// Punctuation takes trailing newlines ("[\r\n/]*"); letters and
		// digits do not.
		return isAlnum(a)
	case isSpaceLike(b) || b == '\'':
		// Other white space, and an apostrophe (contractions), may join.
		return false
	case unicode.IsNumber(b):
		// Digits start their own piece after anything but a digit.
		return !isSpaceLike(a) && !unicode.IsNumber(a)
	case unicode.IsLetter(b) || unicode.Is(unicode.M, b):
		// A letter (or mark) piece may start with one punctuation mark or
		// space; after a digit it starts afresh.
		return unicode.IsNumber(a)
	default:
		// Punctuation: after a letter or digit a new piece starts.
		return isAlnum(a)
	}
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// isSpaceLike reports whether r may be white space to the pre-tokenizer's
// \s (regexp2, .NET classes): a superset of it, to stay conservative.
func isSpaceLike(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.Z, unicode.Cc, unicode.Cf)
}

// frameTokens caches preambleFrameTokens per encoder.
var frameTokens sync.Map // *bpe.Encoder → int

// preambleFrameTokens returns the tokens of the preamble as a system
// message without its summary and items: the chat framing, the role and
// preambleFrame.
func preambleFrameTokens(enc *bpe.Encoder) int {
	if n, ok := frameTokens.Load(enc); ok {
		return n.(int)
	}
	n := tokensPerMessage + enc.Count(string(RoleSystem)) + enc.Count(preambleFrame)
	frameTokens.Store(enc, n)
	return n
}

// memoryTextTokens counts a memory's text as its preamble line holds it:
// white space collapsed (itemLine makes the line one line) and after the
// space that follows the line's prefix ("- [2026-01-02] (preference)").
// The cut before that space is one every encoding makes itself (see
// exactCut: after punctuation, a space starts a new piece), and tokenLen
// cuts a long stretch relative to the stretch's start, so the prefix's
// count plus this one is exactly the line's count (TestMemoryLineTokens).
func memoryTextTokens(enc ordinaryEncoder, text string) int {
	return tokenLen(enc, " "+strings.Join(strings.Fields(text), " "))
}

// episodeTextTokens counts an episode's preamble line after its time (see
// episodeTimeTokens): ", session s-1] " or "] ", then the text, white
// space collapsed as itemLine collapses the whole line (the piece starts
// and the time ends with other than white space, so collapsing the piece
// alone gives the same text). The session is written with the count, so
// a Recall counts only the time's two pieces, which its cache holds
// (TestEpisodeLineTokens).
func episodeTextTokens(enc ordinaryEncoder, session, text string) int {
	rest := "] " + text
	if session != "" {
		rest = ", session " + session + rest
	}
	return tokenLen(enc, strings.Join(strings.Fields(rest), " "))
}

// maxHead bounds the start of a message's content that episodeTokens
// counts twice: the content's first stretch, up to its first exact cut.
const maxHead = 64

// episodeTokens returns the count episodeTextTokens gives an episode m of
// session, and its content's count (tokenLen), tokenizing the content
// once: the content is counted from its first exact cut (see exactCut) on
// once, and only the stretch before, with and without the space the line
// puts before it, twice; the line's part before that space is a cached
// prefix (", session s-1]"). This holds for a content without a name that
// is one line already (see oneLine) and whose first stretch is short; for
// another, content is -1 and the episode is counted whole.
func episodeTokens(enc *bpe.Encoder, session string, m *Message) (episode, content int) {
	text, _ := episodeText(m)
	k := firstCut(m.Content)
	if m.Name != "" || k < 0 || oneLine(m.Content) != m.Content {
		return episodeTextTokens(enc, session, text), -1
	}
	head, tail := m.Content[:k], m.Content[k:]
	t := tokenLen(enc, tail)
	piece := "]"
	if session != "" {
		piece = strings.Join(strings.Fields(", session "+session+"]"), " ")
	}
	return countPrefix(enc, piece) + tokenLen(enc, " "+head) + t, tokenLen(enc, head) + t
}

// firstCut returns the end of s's first stretch: the first index where
// every encoding cuts (exactCut), or len(s) when there is none; -1 when
// that is past maxHead.
func firstCut(s string) int {
	var prev rune
	for i, r := range s {
		if i > maxHead {
			return -1
		}
		if i > 0 && exactCut(prev, r) {
			return i
		}
		prev = r
	}
	if len(s) > maxHead {
		return -1
	}
	return len(s)
}

// formatTextTokens renders a memory record's memoryTokensKey value.
func formatTextTokens(encoding string, tokens int, text string) string {
	return encoding + ":" + strconv.Itoa(tokens) + ":" + strconv.Itoa(len(text))
}

// parseTextTokens returns the count a memoryTokensKey value v holds, if it
// was counted in encoding for a text of textLen bytes.
func parseTextTokens(v, encoding string, textLen int) (int, bool) {
	rest, ok := strings.CutPrefix(v, encoding)
	if !ok || !strings.HasPrefix(rest, ":") {
		return 0, false
	}
	count, size, ok := strings.Cut(rest[1:], ":")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(count)
	if err != nil || n <= 0 {
		return 0, false
	}
	if l, err := strconv.Atoi(size); err != nil || l != textLen {
		return 0, false
	}
	return n, true
}

// prefixTokens caches the counts of preamble line prefixes ("- [date]
// (kind)"), which hold no text of a store: a date and a kind.
var prefixTokens struct {
	mu sync.Mutex
	m  map[prefixKey]int
}

type prefixKey struct {
	enc    *bpe.Encoder
	prefix string
}

// maxCachedPrefixes bounds prefixTokens; past it the cache starts afresh.
const maxCachedPrefixes = 1 << 12

// countPrefix returns the tokens of a line prefix, cached.
func countPrefix(enc *bpe.Encoder, prefix string) int {
	k := prefixKey{enc, prefix}
	prefixTokens.mu.Lock()
	n, ok := prefixTokens.m[k]
	prefixTokens.mu.Unlock()
	if ok {
		return n
	}
	return countPrefixMiss(enc, prefix)
}

// countPrefixBytes is countPrefix for a prefix in a buffer: a cached
// prefix costs no string.
func countPrefixBytes(enc *bpe.Encoder, prefix []byte) int {
	prefixTokens.mu.Lock()
	n, ok := prefixTokens.m[prefixKey{enc, string(prefix)}] // no allocation for the lookup
	prefixTokens.mu.Unlock()
	if ok {
		return n
	}
	return countPrefixMiss(enc, string(prefix))
}

// countPrefixMiss counts a prefix that was not in the cache and caches it.
func countPrefixMiss(enc *bpe.Encoder, prefix string) int {
	k := prefixKey{enc, prefix}
	n := tokenLen(enc, prefix)
	prefixTokens.mu.Lock()
	if prefixTokens.m == nil || len(prefixTokens.m) >= maxCachedPrefixes {
		prefixTokens.m = map[prefixKey]int{}
	}
	prefixTokens.m[k] = n
	prefixTokens.mu.Unlock()
	return n
}

// tokenCache remembers the token counts of texts: the same memories, facts
// and summary lines come back turn after turn, in the preamble and in the
// rolling summary, and counting is the costliest step of both. Texts are
// keyed by a hash, so the cache holds no text of a store (which Forget
// could not reach).
type tokenCache struct {
	mu sync.Mutex
	m  map[tokenKey]int
}

type tokenKey struct {
	enc  *bpe.Encoder
	hash [16]byte // of the line, from SHA-256
}

// textTokens is the process's count cache, shared by every store and
// summarizer (entries are keyed by encoding too).
var textTokens tokenCache

// maxCachedLines bounds the cache; past it an entry is evicted at random.
const maxCachedLines = 1 << 15

func (c *tokenCache) count(enc *bpe.Encoder, text string) int {
	k, n, ok := c.lookup(enc, text)
	if ok {
		return n
	}
	n = tokenLen(enc, text)
	c.add(k, n)
	return n
}

// add caches n as the count of the text whose key (see lookup) is k.
func (c *tokenCache) add(k tokenKey, n int) {
	c.mu.Lock()
	c.m = putBounded(c.m, k, n, maxCachedLines)
	c.mu.Unlock()
}

// putBounded sets m[k] = v, making m when nil, and first evicts an entry
// at random (the first a range over m gives) when m holds limit already.
// It returns m. The process's caches (count, parse) share it.
func putBounded[K comparable, V any](m map[K]V, k K, v V, limit int) map[K]V {
	if m == nil {
		m = map[K]V{}
	}
	if len(m) >= limit {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
	return m
}

// lookup returns text's count if the cache holds it, and its key.
func (c *tokenCache) lookup(enc *bpe.Encoder, text string) (k tokenKey, n int, ok bool) {
	sum := sha256.Sum256([]byte(text))
	k.enc = enc
	copy(k.hash[:], sum[:])
	c.mu.Lock()
	n, ok = c.m[k]
	c.mu.Unlock()
	return k, n, ok
}

// factTextTokens is memoryTextTokens of factText(f), counted in three
// pieces that every encoding cuts apart (see exactCut: a space after other
// than white space, and after the arrow): " " and the subject, " —", the
// predicate and "→", then " " and the object. Each piece goes through the
// count cache, so an entity's name, which comes back in each of its facts
// (and a predicate in many), is tokenized once: counting every fact a
// graph write stores (create_relations in batches of 50) cost about 1.7×
// the write's time when each fact's text was tokenized whole. A name with
// white space at an edge is counted with the whole text (TestFactTextTokens).
func factTextTokens(enc *bpe.Encoder, f *Fact) int {
	pred := strings.ReplaceAll(f.Predicate, "_", " ")
	if !trimmedName(f.Subject) || !trimmedName(pred) || !trimmedName(f.Object) {
		return memoryTextTokens(enc, factText(f))
	}
	if r, _ := utf8.DecodeLastRuneInString(f.Subject); isSpaceLike(r) {
		return memoryTextTokens(enc, factText(f))
	}
	return textTokens.count(enc, " "+collapseSpace(f.Subject)) +
		textTokens.count(enc, " —"+collapseSpace(pred)+"→") +
		textTokens.count(enc, " "+collapseSpace(f.Object))
}

// trimmedName reports whether s is not empty and neither starts nor ends
// with white space (as strings.Fields sees it).
func trimmedName(s string) bool {
	if s == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// collapseSpace returns s with each run of white space made one space, as
// itemLine makes a line.
func collapseSpace(s string) string {
	if !strings.ContainsFunc(s, unicode.IsSpace) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
