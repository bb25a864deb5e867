package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// Summarizer condenses messages that leave a session's window into a rolling
// summary.
//
// Implementations must be safe for concurrent use: a [Store] calls one
// Summarizer from many sessions at once.
type Summarizer interface {
	// Summarize returns a new summary that covers prev (the summary so far,
	// possibly empty) and msgs (the messages leaving the window, oldest
	// first), in at most maxTokens tokens (counted with the store's
	// encoding).
	Summarize(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error)
}

// Extractive is the offline default [Summarizer]: it keeps the most
// informative sentences of the previous summary and the new messages, ranked
// by TF-IDF centrality, and returns them in their original order, one per
// line, each prefixed with its speaker ("user: ...", "assistant: ...", or
// the message's Name). It never calls a network service and is
// deterministic: the same input gives the same summary.
//
// The zero value is ready to use. Extractive is safe for concurrent use.
//
// # Algorithm
//
// Each sentence (of prev, and of the content of user, assistant and
// plain-text tool messages) becomes a TF-IDF vector over the sentences of
// the call, of the terms the lexical index uses (index.Analyze: stemmed,
// stop words removed, identifiers kept whole), and scores its degree
// centrality: the sum of its cosine similarities to every other sentence,
// as in continuous LexRank (Erkan and Radev, "LexRank: Graph-based Lexical
// Centrality as Salience in Text Summarization", JAIR 2004). A sentence that shares its terms with much of
// the conversation scores high; an aside scores low. Sentences are kept
// greedily, best first, while the summary fits maxTokens; a sentence nearly
// identical to one already kept is skipped. Sentences of prev compete with
// new ones on equal terms, so the summary stays bounded as it rolls: older
// material survives only while it stays central.
//
// System messages, tool calls and JSON tool results are left out: they are
// instructions and machine data, not what was said. Sentences with no
// content word (only stop words, punctuation or emoji) carry nothing to rank
// and are dropped.
//
// When no whole sentence fits, the best one is cut at a word or token
// boundary, so a conversation with something to say never gets an empty
// summary. Sentences that share no term with the rest score zero and only
// fill room the others leave.
type Extractive struct {
	// Encoding is the tiktoken encoding that counts maxTokens. Empty means
	// [DefaultEncoding]; set it to the store's Options.Encoding when that is
	// different.
	Encoding string
}

// extractiveRedundancy is the cosine similarity at or above which a
// candidate counts as a repeat of a sentence already kept: the two share
// nearly all their terms in nearly the same proportions.
const extractiveRedundancy = 0.9

// maxSpeakerLen bounds the label recognised at the start of a line of prev
// as its speaker ("user: ..."); longer text before ": " belongs to the
// sentence.
const maxSpeakerLen = 64

// Summarize returns the sentences of prev and msgs that best fit maxTokens,
// one per line, in their original order. An input with nothing to summarize
// returns "" and no error. It returns an error wrapping [ErrInvalidOptions]
// for a maxTokens that is not positive or an unknown Encoding, and ctx.Err()
// when ctx is done before it starts.
func (e Extractive) Summarize(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error) {
	if maxTokens <= 0 {
		return "", fmt.Errorf("%w: summary budget of %d tokens is not positive", ErrInvalidOptions, maxTokens)
	}
	enc, err := tokenizer(cmp.Or(e.Encoding, DefaultEncoding))
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("memory: summarize: %w", err)
	}
	units := summaryUnits(prev, msgs)
	if len(units) == 0 {
		return "", nil
	}
	scoreUnits(units)

	// Best first; ties go to the earlier sentence, so the result depends on
	// nothing but the input.
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(units[b].score, units[a].score) })

	// Each kept line costs its own tokens plus about one for the newline
	// that joins it; the exact count of the joined text is checked below,
	// since BPE may merge across the join.
	var kept []int
	used := 0
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("memory: summarize: %w", err)
		}
		if used >= maxTokens {
			break
		}
		u := &units[i]
		cost := countText(enc, u.line())
		if len(kept) > 0 {
			cost++
		}
		if used+cost > maxTokens || redundant(u, units, kept) {
			continue
		}
		kept = append(kept, i)
		used += cost
	}
	for len(kept) > 0 {
		if joinedTokens(enc, units, kept) <= maxTokens {
			return joinUnits(units, kept), nil
		}
		kept = kept[:len(kept)-1] // the lowest-scoring line kept
	}
	return cutUnit(enc, &units[order[0]], maxTokens), nil
}

// cutUnit returns the start of u that fits maxTokens: its speaker and the
// start of its text when the label leaves room for a word or so, else the
// start of its text alone.
func cutUnit(enc *bpe.Encoder, u *summaryUnit, maxTokens int) string {
	if u.speaker != "" {
		label := u.speaker + ": "
		if room := maxTokens - countText(enc, label); room >= 2 {
			if t := truncateTokens(enc, u.text, room); t != "" {
				if line := label + t; countText(enc, line) <= maxTokens {
					return line
				}
			}
		}
	}
	return truncateTokens(enc, u.text, maxTokens)
}

// summaryUnit is one sentence competing for a place in the summary.
type summaryUnit struct {
	speaker string // "" when unknown (a line of prev without a label)
	text    string // the sentence, trimmed, one line
	vec     []termWeight
	score   float64
}

// line is the unit as the summary shows it.
func (u *summaryUnit) line() string {
	if u.speaker == "" {
		return u.text
	}
	return u.speaker + ": " + u.text
}

type termWeight struct {
	term int
	w    float64
}

// summaryUnits splits prev and the messages into sentences, in order, and
// gives each its terms' raw counts in vec (weighted later by scoreUnits),
// terms numbered in the order they first occur. Sentences without a term
// are dropped. prev's sentences come from parsedSummaries: a session's
// summary is folded again at each Recall after new messages, and parsing
// it was most of the fold's cost.
func summaryUnits(prev string, msgs []Message) []summaryUnit {
	pp := parsedSummaries.parse(prev)
	units := make([]summaryUnit, len(pp.units), len(pp.units)+2*len(msgs))
	for i, u := range pp.units {
		units[i] = u
		units[i].vec = slices.Clone(u.vec) // scoreUnits weighs them in place
	}
	var more map[string]int // terms prev does not have, numbered after its own
	id := func(t string) int {
		if id, ok := pp.ids[t]; ok {
			return id
		}
		if more == nil {
			more = map[string]int{}
		}
		id, ok := more[t]
		if !ok {
			id = len(pp.ids) + len(more)
			more[t] = id
		}
		return id
	}
	for i := range msgs {
		m := &msgs[i]
		if !summarizable(m) {
			continue
		}
		units = appendUnits(units, speakerOf(m), strings.ToValidUTF8(m.Content, "\uFFFD"), id)
	}
	return units
}

// appendUnits appends the sentences of text that have a term, spoken by
// speaker, with their terms' counts; id numbers a term.
func appendUnits(units []summaryUnit, speaker, text string, id func(string) int) []summaryUnit {
	for _, sp := range sentenceSpans(text) {
		s := text[sp.start:sp.end]
		counts := map[int]float64{}
		for _, t := range index.Analyze(s) {
			counts[id(t)]++
		}
		if len(counts) == 0 {
			continue
		}
		vec := make([]termWeight, 0, len(counts))
		for id, c := range counts {
			vec = append(vec, termWeight{id, c})
		}
		slices.SortFunc(vec, func(a, b termWeight) int { return cmp.Compare(a.term, b.term) })
		units = append(units, summaryUnit{speaker: speaker, text: s, vec: vec})
	}
	return units
}

// parsedSummary is a previous summary split into its sentences (their
// vecs raw counts), and the number of each term they have, in the order
// the terms first occur. Shared by the folds that read it: read only.
type parsedSummary struct {
	units []summaryUnit
	ids   map[string]int
}

// summaryCache holds the parses of recent summaries, by the SHA-256 of
// their text.
type summaryCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*parsedSummary
}

// parsedSummaries is the process's cache of parsed summaries.
var parsedSummaries summaryCache

// maxParsedSummaries bounds the cache; past it an entry is evicted at
// random. A parse of a summary of the default 256 tokens (787 bytes)
// takes about 5 KB of heap, so a full cache about 5 MB (outside the
// partition budget).
const maxParsedSummaries = 1024

// parse returns prev's parse, from the cache when it holds it.
func (c *summaryCache) parse(prev string) *parsedSummary {
	if prev == "" {
		return &parsedSummary{}
	}
	k := sha256.Sum256([]byte(prev))
	c.mu.Lock()
	pp, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return pp
	}
	pp = &parsedSummary{ids: map[string]int{}}
	id := func(t string) int {
		id, ok := pp.ids[t]
		if !ok {
			id = len(pp.ids)
			pp.ids[t] = id
		}
		return id
	}
	for line := range strings.Lines(strings.ToValidUTF8(prev, "\uFFFD")) {
		speaker, rest := speakerLabel(line)
		pp.units = appendUnits(pp.units, speaker, rest, id)
	}
	c.mu.Lock()
	c.m = putBounded(c.m, k, pp, maxParsedSummaries)
	c.mu.Unlock()
	return pp
}

// summarizable reports whether a message's content is conversation: not a
// system prompt, not a tool's JSON.
func summarizable(m *Message) bool {
	switch m.Role {
	case RoleUser, RoleAssistant:
		return true
	case RoleTool:
		c := strings.TrimSpace(m.Content)
		if c == "" {
			return false
		}
		return !((c[0] == '{' || c[0] == '[') && json.Valid([]byte(c)))
	}
	return false
}

// speakerOf is the label a message's sentences carry: its Name, else its
// role.
func speakerOf(m *Message) string {
	if name := strings.TrimSpace(strings.ToValidUTF8(m.Name, "\uFFFD")); name != "" && !strings.ContainsAny(name, ":\r\n") {
		return name
	}
	return string(m.Role)
}

// speakerLabel splits a line of a previous summary into its speaker label
// and the rest: "user: we chose Dana" gives ("user", "we chose Dana"). A
// line without a label (a summary written by a model, say) gives ("", line).
// Only the label's form is checked: a "Note: ..." line reads as spoken by
// "Note", which the summary then shows exactly as before.
func speakerLabel(line string) (speaker, rest string) {
	line = strings.TrimSpace(line)
	i := strings.Index(line, ": ")
	if i <= 0 || i > maxSpeakerLen || strings.IndexFunc(line[:i], unicode.IsSpace) >= 0 {
		return "", line
	}
	rest = strings.TrimSpace(line[i+2:])
	if rest == "" {
		return "", line
	}
	return line[:i], rest
}

// scoreUnits turns the term counts into unit TF-IDF vectors and scores each
// unit by degree centrality, the sum of its cosine similarities to the other
// units. With unit vectors u, that sum is u_i·(Σ_j u_j) − 1: one pass over
// the centroid instead of one per pair.
func scoreUnits(units []summaryUnit) {
	df := map[int]int{}
	for i := range units {
		for _, tw := range units[i].vec {
			df[tw.term]++
		}
	}
	// Smoothed idf, ln((1+N)/(1+df)) + 1, stays positive, so a term every
	// sentence shares still links them instead of vanishing.
	n := float64(len(units))
	sum := make([]float64, len(df))
	for i := range units {
		v := units[i].vec
		var norm float64
		for j := range v {
			v[j].w *= math.Log((1+n)/(1+float64(df[v[j].term]))) + 1
			norm += v[j].w * v[j].w
		}
		norm = math.Sqrt(norm)
		for j := range v {
			v[j].w /= norm
			sum[v[j].term] += v[j].w
		}
	}
	for i := range units {
		var dot float64
		for _, tw := range units[i].vec {
			dot += tw.w * sum[tw.term]
		}
		units[i].score = dot - 1
	}
}

// redundant reports whether u nearly repeats a unit already kept.
func redundant(u *summaryUnit, units []summaryUnit, kept []int) bool {
	for _, k := range kept {
		if cosine(u.vec, units[k].vec) >= extractiveRedundancy {
			return true
		}
	}
	return false
}

// cosine is the dot product of two unit vectors sorted by term.
func cosine(a, b []termWeight) float64 {
	var dot float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].term < b[j].term:
			i++
		case a[i].term > b[j].term:
			j++
		default:
			dot += a[i].w * b[j].w
			i++
			j++
		}
	}
	return dot
}

// joinUnits renders the kept units in their original order, one per line.
func joinUnits(units []summaryUnit, kept []int) string {
	idx := slices.Clone(kept)
	slices.Sort(idx)
	var b strings.Builder
	for n, i := range idx {
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(units[i].line())
	}
	return b.String()
}

// joinedTokens returns countText(enc, joinUnits(units, kept)) from the
// counts of its lines, which the count cache mostly holds from earlier
// refreshes, instead of tokenizing the joined text, which is new at every
// refresh. It relies on two facts of every encoding shipped, which
// TestJoinedTokens checks against the encoders:
//
//   - after a line break, a rune that is neither white space nor '/'
//     starts a new pre-token (no pattern carries a line break into what
//     follows it, except o200k_base's punctuation, which takes line breaks
//     and slashes after it), so the joined text counts as each line with
//     its '\n' plus the last line;
//   - a line break may join only the line's last pre-token (punctuation
//     takes trailing line breaks), which starts at or after the line's last
//     exact cut (see exactCut), so the '\n' adds count(tail+"\n") −
//     count(tail) for that tail.
//
// A line that starts or ends with white space, starts with '/' or holds a
// line break is counted the slow way.
func joinedTokens(enc *bpe.Encoder, units []summaryUnit, kept []int) int {
	idx := slices.Clone(kept)
	slices.Sort(idx)
	n := 0
	for k, i := range idx {
		line := units[i].line()
		if !joinable(line) {
			return countText(enc, joinUnits(units, kept))
		}
		n += countText(enc, line)
		if k < len(idx)-1 {
			tail := line[lastExactCut(line):]
			n += countText(enc, tail+"\n") - countText(enc, tail)
		}
	}
	return n
}

// joinable reports whether line is one joinedTokens can count from its
// parts: not empty, no line break, no white space at either end, no '/'
// first.
func joinable(line string) bool {
	if line == "" || line[0] == '/' || strings.ContainsAny(line, "\r\n") {
		return false
	}
	first, _ := utf8.DecodeRuneInString(line)
	last, _ := utf8.DecodeLastRuneInString(line)
	return !isSpaceLike(first) && !isSpaceLike(last)
}

// lastExactCut returns the byte offset of the last exact cut in s (zero
// when there is none): the start of the text after it is a pre-token
// boundary, whatever follows s.
func lastExactCut(s string) int {
	next, end := utf8.DecodeLastRuneInString(s)
	for i := len(s) - end; i > 0; {
		r, w := utf8.DecodeLastRuneInString(s[:i])
		if exactCut(r, next) {
			return i
		}
		next, i = r, i-w
	}
	return 0
}

// textSpan is a byte range [start, end) of a string.
type textSpan struct{ start, end int }

// sentenceSpans splits text into sentences, trimmed of white space. A
// sentence ends at a line break; at '.', '!', '?' or '…' (with any closing
// quotes or brackets after them) followed by white space or the end of the
// text; and at the full-width '。', '！' and '？'. A lone '.' followed by a
// lower-case word does not end one ("e.g. the", "approx. ten"), nor does a
// '.' inside a token ("3.5", "engram.dev").
func sentenceSpans(text string) []textSpan {
	var out []textSpan
	start := 0
	emit := func(end int) {
		s, e := start, end
		for s < e {
			r, size := utf8.DecodeRuneInString(text[s:e])
			if !unicode.IsSpace(r) {
				break
			}
			s += size
		}
		for e > s {
			r, size := utf8.DecodeLastRuneInString(text[s:e])
			if !unicode.IsSpace(r) {
				break
			}
			e -= size
		}
		if e > s {
			out = append(out, textSpan{s, e})
		}
		start = end
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			emit(i)
			i += size
			start = i
		case r == '。' || r == '！' || r == '？':
			i = skipClosers(text, i+size)
			emit(i)
		case isTerminator(r):
			j, lone := i+size, r == '.'
			for j < len(text) {
				r2, size2 := utf8.DecodeRuneInString(text[j:])
				if !isTerminator(r2) {
					break
				}
				j += size2
				lone = false
			}
			j = skipClosers(text, j)
			if j < len(text) {
				next, _ := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsSpace(next) {
					i = j
					continue
				}
				if lone {
					k := j
					for k < len(text) {
						r3, size3 := utf8.DecodeRuneInString(text[k:])
						if r3 != ' ' && r3 != '\t' {
							break
						}
						k += size3
					}
					if r3, _ := utf8.DecodeRuneInString(text[k:]); unicode.IsLower(r3) {
						i = j
						continue
					}
				}
			}
			emit(j)
			i = j
		default:
			i += size
		}
	}
	emit(len(text))
	return out
}

func isTerminator(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '…' }

// skipClosers returns the index after any closing quotes and brackets at i.
func skipClosers(text string, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !strings.ContainsRune(`"')]}»”’」』`, r) {
			break
		}
		i += size
	}
	return i
}

// countText counts the tokens of plain text (no chat framing) in enc,
// through the process's count cache.
func countText(enc *bpe.Encoder, s string) int {
	return textTokens.count(enc, s)
}

// truncateTokens returns the longest prefix of s that fits n tokens, cut at
// a token boundary and, when one lies in the second half of the prefix, at
// the last white space before it; the result is trimmed and valid UTF-8.
func truncateTokens(enc *bpe.Encoder, s string, n int) string {
	s = strings.TrimSpace(s)
	toks := encodeLinear(enc, s) // a long unbroken run would be quadratic (issue 12)
	if len(toks) <= n {
		return s
	}
	for k := n; k > 0; k-- {
		p := strings.ToValidUTF8(enc.Decode(toks[:k]), "")
		// A token may end inside a multi-byte character; drop the partial
		// bytes (ToValidUTF8 above) and keep what is a prefix of s.
		for !strings.HasPrefix(s, p) && p != "" {
			_, size := utf8.DecodeLastRuneInString(p)
			p = p[:len(p)-size]
		}
		if i := strings.LastIndexFunc(p, unicode.IsSpace); i > len(p)/2 {
			p = p[:i]
		}
		p = strings.TrimSpace(p)
		if countText(enc, p) <= n {
			return p
		}
	}
	return ""
}
