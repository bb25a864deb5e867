package embed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxVocab bounds a tokenizer's vocabulary: token ids are int32 here, and
// real vocabularies hold 30,000 to 250,000 tokens.
const maxVocab = 1 << 24

// tokenizer is a Hugging Face tokenizers tokenizer as Model2Vec models
// ship it: a WordPiece or Unigram model behind a normalizer and a
// pre-tokenizer. BERT's form (a BertNormalizer, a BertPreTokenizer and
// WordPiece, which potion-base-8M uses) runs on a streaming fast path that
// normalises, splits and looks up a text in one pass; every other
// combination runs through pipe, one step after another as tokenizers
// does. It is immutable after parseTokenizer and safe for concurrent use;
// the working memory of an encoding lives in a tokenScratch.
type tokenizer struct {
	vocab    map[string]int32
	tokens   []string // tokens[id], for the identity hash and tests
	prefix   string   // WordPiece's continuing_subword_prefix, "##"
	unk      int32    // the unknown token's id; -1 for none (Unigram without unk_id)
	maxChars int      // WordPiece's max_input_chars_per_word: longer words are unknown
	maxBytes int      // the longest vocabulary token, in bytes

	// The BertNormalizer settings of the fast path.
	cleanText, chineseChars, stripAccents, lowercase bool

	pipe *pipeline // nil on the fast path
	uni  *unigram  // nil for a WordPiece model

	// describe is a canonical description of a tokenizer that is not on
	// the fast path (its normalizer, pre-tokenizer and model settings),
	// hashed into the identity; empty on the fast path, whose identity
	// predates it.
	describe []byte

	// The added tokens matched in the raw text, before normalisation:
	// their contents, longest first, and ids. The fast path treats every
	// special token so.
	specials   []string
	specialIDs []int32
	// The added tokens matched in the normalised text (normalized true,
	// on the general path): their normalised contents, longest first, and
	// ids.
	normAdded   []string
	normAddedID []int32
	dropped     []bool // dropped[id]: a special token, never pooled

	medianRunes int // the median token length in characters, as Model2Vec computes it
}

// tokenizerJSON is the part of a tokenizer.json this package reads.
type tokenizerJSON struct {
	AddedTokens  []addedTokenJSON `json:"added_tokens"`
	Normalizer   json.RawMessage  `json:"normalizer"`
	PreTokenizer json.RawMessage  `json:"pre_tokenizer"`
	Model        json.RawMessage  `json:"model"`
}

// addedTokenJSON is one of a tokenizer.json's added tokens.
type addedTokenJSON struct {
	ID         *int64  `json:"id"`
	Content    *string `json:"content"`
	Special    bool    `json:"special"`
	Normalized *bool   `json:"normalized"` // absent: !special, as in tokenizers
	SingleWord bool    `json:"single_word"`
	LStrip     bool    `json:"lstrip"`
	RStrip     bool    `json:"rstrip"`
}

// tokenizerModels parses each model type this package runs into tp.
var tokenizerModels = map[string]func(tp *tokenizer, raw json.RawMessage) error{
	"WordPiece": parseWordPiece,
	"Unigram":   parseUnigram,
}

// parseTokenizer parses a tokenizer.json. Errors wrap ErrInvalidModel for
// malformed content and ErrUnsupportedModel, with an [ErrUnknownComponent]
// naming it, for a model, normalizer or pre-tokenizer this package does not
// implement.
func parseTokenizer(b []byte) (*tokenizer, error) {
	var doc tokenizerJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a tokenizer JSON object: %v: %w", err, ErrInvalidModel)
	}
	tp := &tokenizer{unk: -1}
	modelType, err := partType(doc.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	parse, ok := tokenizerModels[modelType]
	if !ok {
		return nil, unknownComponent("model", modelType)
	}
	if err := parse(tp, doc.Model); err != nil {
		return nil, err
	}
	general := slices.ContainsFunc(doc.AddedTokens, func(a addedTokenJSON) bool { return !a.Special })
	if err := tp.parsePipeline(doc, modelType, general); err != nil {
		return nil, err
	}
	if err := tp.parseAdded(doc); err != nil {
		return nil, err
	}
	tp.medianRunes = medianRunes(tp.tokens)
	return tp, nil
}

// parsePipeline sets up the normalizer and pre-tokenizer: the fast path for
// BERT's form unless general, else a pipeline.
func (tp *tokenizer) parsePipeline(doc tokenizerJSON, modelType string, general bool) error {
	nzType, err := partType(doc.Normalizer)
	if err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	ptType, err := partType(doc.PreTokenizer)
	if err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	if nzType == "BertNormalizer" && ptType == "BertPreTokenizer" && modelType == "WordPiece" && !general {
		b, err := parseBertNormalizer(doc.Normalizer)
		if err != nil {
			return fmt.Errorf("normalizer: %w", err)
		}
		tp.cleanText, tp.chineseChars, tp.stripAccents, tp.lowercase = b.cleanText, b.chineseChars, b.stripAccents, b.lowercase
		return nil
	}
	p := &pipeline{}
	if p.norm, err = parseNormalizer(doc.Normalizer); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	if p.pre, err = parsePreTokenizer(doc.PreTokenizer); err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	tp.pipe = p
	tp.describe = append(tp.describe, "normalizer "...)
	tp.describe = append(tp.describe, canonicalJSON(doc.Normalizer)...)
	tp.describe = append(tp.describe, "\x00pre_tokenizer "...)
	tp.describe = append(tp.describe, canonicalJSON(doc.PreTokenizer)...)
	tp.describe = append(tp.describe, 0)
	return nil
}

// parseWordPiece reads a WordPiece model, with tokenizers' defaults.
func parseWordPiece(tp *tokenizer, raw json.RawMessage) error {
	var m struct {
		Unk      *string         `json:"unk_token"`
		Prefix   *string         `json:"continuing_subword_prefix"`
		MaxChars *int64          `json:"max_input_chars_per_word"`
		Vocab    json.RawMessage `json:"vocab"`
	}
	if err := unmarshalPart(raw, &m); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	unk := "[UNK]"
	tp.prefix, tp.maxChars = "##", 100
	if m.Unk != nil {
		unk = *m.Unk
	}
	if m.Prefix != nil {
		tp.prefix = *m.Prefix
	}
	if m.MaxChars != nil {
		if *m.MaxChars < 1 || *m.MaxChars > math.MaxInt32 {
			return fmt.Errorf("model max_input_chars_per_word %d is not positive: %w", *m.MaxChars, ErrInvalidModel)
		}
		tp.maxChars = int(*m.MaxChars)
	}
	if err := tp.parseVocab(m.Vocab); err != nil {
		return err
	}
	id, ok := tp.vocab[unk]
	if !ok {
		return fmt.Errorf("unk_token %q is not in the vocabulary: %w", unk, ErrInvalidModel)
	}
	tp.unk = id
	return nil
}

// parseAdded reads the added tokens. Each must be the vocabulary's entry
// for its id, or extend the vocabulary by the next id. A special token is
// cut from the text and dropped; another is cut and kept. On the fast path
// every special token is matched in the raw text; on the general path a
// token with normalized true is matched in the normalised text, against
// its content normalised, as tokenizers does.
func (tp *tokenizer) parseAdded(doc tokenizerJSON) error {
	added := slices.Clone(doc.AddedTokens)
	for i, at := range added {
		if at.ID == nil || at.Content == nil || *at.Content == "" {
			return fmt.Errorf("added_tokens[%d] lacks an id or content: %w", i, ErrInvalidModel)
		}
	}
	slices.SortStableFunc(added, func(a, b addedTokenJSON) int { return int(*a.ID - *b.ID) })
	for i, at := range added {
		if err := tp.checkAdded(i, at); err != nil {
			return err
		}
	}
	tp.dropped = make([]bool, len(tp.tokens))
	for _, at := range added {
		tp.addAdded(at)
	}
	// Longest first, so a token that contains another is cut whole.
	sortLongestFirst(tp.specials, tp.specialIDs)
	sortLongestFirst(tp.normAdded, tp.normAddedID)
	return nil
}

// checkAdded checks the added token at (added_tokens[i]) against the
// vocabulary, which it extends when at takes the next id.
func (tp *tokenizer) checkAdded(i int, at addedTokenJSON) error {
	id, content := *at.ID, *at.Content
	if id == int64(len(tp.tokens)) && id < maxVocab {
		if _, dup := tp.vocab[content]; !dup {
			tp.vocab[content] = int32(id)
			tp.tokens = append(tp.tokens, content)
		}
	}
	if id < 0 || id >= int64(len(tp.tokens)) || tp.tokens[id] != content {
		return fmt.Errorf("added_tokens[%d] %q with id %d does not match the vocabulary: %w", i, content, id, ErrInvalidModel)
	}
	if !at.Special && (at.SingleWord || at.LStrip || at.RStrip) {
		return &ComponentError{Component: "added_tokens", Type: content, Detail: "single_word, lstrip or rstrip"}
	}
	return nil
}

// addAdded registers the checked added token at to be cut from the raw or
// the normalised text.
func (tp *tokenizer) addAdded(at addedTokenJSON) {
	id, content := int32(*at.ID), *at.Content
	tp.dropped[id] = at.Special
	normalized := !at.Special
	if at.Normalized != nil {
		normalized = *at.Normalized
	}
	if tp.pipe != nil {
		tp.describe = fmt.Appendf(tp.describe, "added %d %q %t %t\x00", id, content, at.Special, normalized)
	}
	if tp.pipe == nil || !normalized {
		if !slices.Contains(tp.specials, content) {
			tp.specials = append(tp.specials, content)
			tp.specialIDs = append(tp.specialIDs, id)
		}
		return
	}
	if tp.pipe.norm != nil {
		content = tp.pipe.norm(content)
	}
	if content != "" && !slices.Contains(tp.normAdded, content) {
		tp.normAdded = append(tp.normAdded, content)
		tp.normAddedID = append(tp.normAddedID, id)
	}
}

// sortLongestFirst sorts contents, longest first and otherwise stably, and
// ids with them.
func sortLongestFirst(contents []string, ids []int32) {
	idx := make([]int, len(contents))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return len(contents[b]) - len(contents[a]) })
	c, d := slices.Clone(contents), slices.Clone(ids)
	for i, j := range idx {
		contents[i], ids[i] = c[j], d[j]
	}
}

// medianRunes is the median token length in characters (of the vocabulary
// in id order, truncated to an int), by which Model2Vec cuts a text to
// max_length × it before tokenizing it.
func medianRunes(tokens []string) int {
	lens := make([]int, len(tokens))
	for i, t := range tokens {
		lens[i] = utf8.RuneCountInString(t)
	}
	slices.Sort(lens)
	n := len(lens)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return lens[n/2]
	}
	return (lens[n/2-1] + lens[n/2]) / 2
}

// parseVocab reads the "vocab" object of token -> id: ids must be the
// integers 0 to n-1, each once, and no token may appear twice.
func (tp *tokenizer) parseVocab(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("model vocab is not a JSON object: %w", ErrInvalidModel)
	}
	tp.vocab = make(map[string]int32)
	ids := make(map[int64]string)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("model vocab: %v: %w", err, ErrInvalidModel)
		}
		word, _ := tok.(string)
		tok, err = dec.Token()
		if err != nil {
			return fmt.Errorf("model vocab: %v: %w", err, ErrInvalidModel)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return fmt.Errorf("model vocab: the id of %q is not a number: %w", word, ErrInvalidModel)
		}
		id, err := num.Int64()
		if err != nil || id < 0 || id >= maxVocab {
			return fmt.Errorf("model vocab: the id of %q, %s, is not an integer in [0, %d): %w", word, num, maxVocab, ErrInvalidModel)
		}
		if _, dup := tp.vocab[word]; dup {
			return fmt.Errorf("model vocab: token %q appears twice: %w", word, ErrInvalidModel)
		}
		if other, dup := ids[id]; dup {
			return fmt.Errorf("model vocab: tokens %q and %q share id %d: %w", other, word, id, ErrInvalidModel)
		}
		tp.vocab[word] = int32(id)
		ids[id] = word
		tp.maxBytes = max(tp.maxBytes, len(word))
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("model vocab: %v: %w", err, ErrInvalidModel)
	}
	if len(ids) == 0 {
		return fmt.Errorf("model vocab is empty: %w", ErrInvalidModel)
	}
	tp.tokens = make([]string, len(ids))
	for id, w := range ids {
		if id >= int64(len(ids)) {
			return fmt.Errorf("model vocab: id %d of %q is not below the vocabulary size %d: %w", id, w, len(ids), ErrInvalidModel)
		}
		tp.tokens[id] = w
	}
	return nil
}

// unmarshalPart decodes one component of a tokenizer.json into v; JSON
// null or a missing component leave v zero.
func unmarshalPart(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalidModel)
	}
	return nil
}

// describePart names a component's type for an error message.
func describePart(raw json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "null"
	}
	if json.Unmarshal(raw, &t) != nil || t.Type == "" {
		return "without a type"
	}
	return fmt.Sprintf("%q", t.Type)
}

// tokenScratch is the working memory of one encoding.
type tokenScratch struct {
	word  []byte  // the current word, normalised, UTF-8
	runes int     // its length in characters
	key   []byte  // prefix + a candidate piece
	ids   []int32 // the token ids so far
	limit int     // stop once len(ids) reaches it
	full  bool    // the limit was reached
	next  []int   // each special token's next position in the text, -1 for none

	words   []word        // the general pipeline's words
	lattice []latticeNode // Unigram's Viterbi lattice
	path    []int32       // ... and the ends of its best path's tokens

	// keepAll keeps the unknown and special tokens' ids, as tokenizers
	// reports them (for the tests that compare with it).
	keepAll bool
}

// encode appends the ids of the known, non-special tokens of text to s.ids,
// up to s.limit tokens, after cutting text to maxRunes characters (0: no
// cut), as Model2Vec's StaticModel.tokenize does.
func (tp *tokenizer) encode(s *tokenScratch, text string, maxRunes int) {
	s.word, s.runes, s.full = s.word[:0], 0, false
	if maxRunes > 0 && len(text) > maxRunes {
		n := 0
		for i := range text {
			if n == maxRunes {
				text = text[:i]
				break
			}
			n++
		}
	}
	// Special tokens are split off the raw text first, as tokenizers does
	// with added tokens, and dropped: the earliest occurrence of any,
	// the first special listed on a tie. Each special's next occurrence
	// is remembered and searched again only once the text has moved past
	// it, so the text is scanned once per special, not once per
	// occurrence.
	pos := 0
	next := s.next[:0]
	for _, sp := range tp.specials {
		next = append(next, strings.Index(text, sp))
	}
	s.next = next
	for !s.full {
		at, k := -1, 0
		for j, i := range next {
			if i >= 0 && (at < 0 || i < at) {
				at, k = i, j
			}
		}
		if at < 0 {
			break
		}
		tp.span(s, text[pos:at], pos == 0)
		if !s.full {
			mark := len(s.ids)
			s.ids = append(s.ids, tp.specialIDs[k])
			tp.keep(s, mark)
		}
		pos = at + len(tp.specials[k])
		for j, i := range next {
			if i >= 0 && i < pos {
				if next[j] = strings.Index(text[pos:], tp.specials[j]); next[j] >= 0 {
					next[j] += pos
				}
			}
		}
	}
	if !s.full {
		tp.span(s, text[pos:], pos == 0)
	}
}

// span tokenizes text, a span of the raw text without special tokens;
// at0 says whether it starts the text.
func (tp *tokenizer) span(s *tokenScratch, text string, at0 bool) {
	if tp.pipe == nil {
		tp.segment(s, text)
		tp.flush(s)
		return
	}
	if tp.pipe.norm != nil {
		text = tp.pipe.norm(text)
	}
	if len(tp.normAdded) > 0 {
		tp.splitNormAdded(s, text, at0)
		return
	}
	tp.words(s, text, at0)
}

// splitNormAdded cuts the normalised added tokens out of text, a
// normalised span, leftmost and then longest first, and tokenizes the
// rest; only a part at the start of a span that starts the text starts
// the text.
func (tp *tokenizer) splitNormAdded(s *tokenScratch, text string, at0 bool) {
	for pos := 0; !s.full; {
		at, k := -1, 0
		for j, c := range tp.normAdded {
			if i := strings.Index(text[pos:], c); i >= 0 && (at < 0 || pos+i < at) {
				at, k = pos+i, j
			}
		}
		if at < 0 {
			tp.words(s, text[pos:], at0 && pos == 0)
			return
		}
		tp.words(s, text[pos:at], at0 && pos == 0)
		if !s.full {
			mark := len(s.ids)
			s.ids = append(s.ids, tp.normAddedID[k])
			tp.keep(s, mark)
		}
		pos = at + len(tp.normAdded[k])
	}
}

// words pre-tokenizes text, normalised, and runs the model on each word.
func (tp *tokenizer) words(s *tokenScratch, text string, at0 bool) {
	if text == "" {
		return
	}
	words := append(s.words[:0], word{text, at0})
	if tp.pipe.pre != nil {
		words = tp.pipe.pre(words[:0], word{text, at0})
	}
	s.words = words
	for _, w := range words {
		if s.full {
			return
		}
		if w.s == "" {
			continue
		}
		if tp.uni == nil {
			s.word = append(s.word[:0], w.s...)
			s.runes = utf8.RuneCountInString(w.s)
			tp.flush(s)
			continue
		}
		mark := len(s.ids)
		tp.unigramWord(s, w.s)
		tp.keep(s, mark)
	}
}

// segment normalises and pre-tokenizes text, a span without special
// tokens, passing each word to flush.
func (tp *tokenizer) segment(s *tokenScratch, text string) {
	for i := 0; i < len(text) && !s.full; {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				tp.flush(s)
			case c < 0x20 || c == 0x7f:
				// A control character: clean_text removes it; otherwise \v
				// and \f are whitespace to the pre-tokenizer.
				if !tp.cleanText && (c == '\v' || c == '\f') {
					tp.flush(s)
				} else if !tp.cleanText {
					tp.add(s, rune(c))
				}
			case asciiPunct(c):
				tp.flush(s)
				tp.add(s, rune(c))
				tp.flush(s)
			default:
				if tp.lowercase && 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				if s.runes++; s.runes <= tp.maxChars {
					s.word = append(s.word, c)
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		tp.normalizeRune(s, r)
	}
}

// normalizeRune applies the BertNormalizer to one non-ASCII character in
// the order tokenizers does: clean_text, handle_chinese_chars,
// strip_accents (NFD, then drop nonspacing marks), lowercase. Then it
// pre-tokenizes the result.
func (tp *tokenizer) normalizeRune(s *tokenScratch, r rune) {
	if tp.cleanText && (r == utf8.RuneError || isOther(r)) {
		return // U+0085 too: a control character before it is a space
	}
	if unicode.IsSpace(r) {
		tp.flush(s)
		return
	}
	chinese := tp.chineseChars && isCJK(r)
	if chinese {
		tp.flush(s)
	}
	if !tp.stripAccents {
		tp.lowerAndSplit(s, r)
	} else if hangulBase <= r && r < hangulBase+hangulCount {
		// x/text/unicode/norm does not list Hangul syllables'
		// decompositions: compute them (Unicode §3.12).
		si := r - hangulBase
		tp.lowerAndSplit(s, 0x1100+si/(21*28))
		tp.lowerAndSplit(s, 0x1161+si%(21*28)/28)
		if t := si % 28; t != 0 {
			tp.lowerAndSplit(s, 0x11a7+t)
		}
	} else {
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		d := norm.NFD.Properties(buf[:n]).Decomposition()
		if d == nil {
			if !unicode.Is(unicode.Mn, r) {
				tp.lowerAndSplit(s, r)
			}
		} else {
			for len(d) > 0 {
				dr, dn := utf8.DecodeRune(d)
				d = d[dn:]
				if !unicode.Is(unicode.Mn, dr) {
					tp.lowerAndSplit(s, dr)
				}
			}
		}
	}
	if chinese {
		tp.flush(s)
	}
}

// lowerAndSplit lowercases r if configured and adds it to the current
// word, or makes it a word of its own if it is punctuation.
func (tp *tokenizer) lowerAndSplit(s *tokenScratch, r rune) {
	if tp.lowercase {
		if r == 'İ' && !tp.stripAccents {
			// Rust's char::to_lowercase, which tokenizers uses, maps it
			// to "i̇"; unicode.ToLower to "i".
			tp.add(s, 'i')
			tp.add(s, 0x307)
			return
		}
		r = unicode.ToLower(r)
	}
	switch {
	case unicode.IsSpace(r):
		tp.flush(s)
	case r < utf8.RuneSelf && asciiPunct(byte(r)), unicode.IsPunct(r):
		tp.flush(s)
		tp.add(s, r)
		tp.flush(s)
	default:
		tp.add(s, r)
	}
}

// add appends r to the current word. Past maxChars characters the word is
// unknown whatever follows, so only its length is kept counting: a huge
// text without spaces does not grow the buffer.
func (tp *tokenizer) add(s *tokenScratch, r rune) {
	if s.runes++; s.runes <= tp.maxChars {
		s.word = utf8.AppendRune(s.word, r)
	}
}

// flush runs WordPiece on the current word, greedy longest match first as
// in tokenizers: a word longer than maxChars, or with a part that matches
// no token, is the unknown token, which is dropped.
func (tp *tokenizer) flush(s *tokenScratch) {
	word := s.word
	nr := s.runes
	s.word, s.runes = s.word[:0], 0
	if nr == 0 || s.full {
		return
	}
	mark := len(s.ids)
	if nr > tp.maxChars || !tp.wordPieces(s, word) {
		s.ids = append(s.ids[:mark], tp.unk) // the whole word is unknown
	}
	tp.keep(s, mark)
}

// wordPieces appends the WordPiece tokens of word to s.ids, or reports
// false when a part of it matches no token.
func (tp *tokenizer) wordPieces(s *tokenScratch, word []byte) bool {
	for start := 0; start < len(word); {
		end := len(word)
		budget := tp.maxBytes
		if start > 0 {
			budget -= len(tp.prefix)
		}
		if end-start > budget {
			end = start + max(budget, 0)
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		id := int32(-1)
		for end > start {
			var ok bool
			if start == 0 {
				id, ok = tp.vocab[string(word[:end])]
			} else {
				s.key = append(append(s.key[:0], tp.prefix...), word[start:end]...)
				id, ok = tp.vocab[string(s.key)]
			}
			if ok {
				break
			}
			id = -1
			end--
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		if id < 0 {
			return false
		}
		s.ids = append(s.ids, id)
		start = end
	}
	return true
}

// keep drops the unknown and special tokens from s.ids[mark:] (a
// vocabulary may hold the unknown token's text as an ordinary-looking
// piece), unless s.keepAll, and stops at s.limit.
func (tp *tokenizer) keep(s *tokenScratch, mark int) {
	if !s.keepAll {
		out := s.ids[:mark]
		for _, id := range s.ids[mark:] {
			if id >= 0 && id != tp.unk && !tp.dropped[id] {
				out = append(out, id)
			}
		}
		s.ids = out
	}
	if len(s.ids) >= s.limit {
		s.ids = s.ids[:s.limit]
		s.full = true
	}
}

// asciiPunct reports whether c is ASCII punctuation as Rust's
// char::is_ascii_punctuation defines it (and BERT's pre-tokenizer uses):
// !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~.
func asciiPunct(c byte) bool {
	return '!' <= c && c <= '/' || ':' <= c && c <= '@' || '[' <= c && c <= '`' || '{' <= c && c <= '~'
}

// isOther reports whether r is in a Unicode "other" category (Cc, Cf, Cs,
// Co, Cn), which BertNormalizer's clean_text removes; \t, \n and \r are
// whitespace instead.
func isOther(r rune) bool {
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isCJK reports whether r is a CJK ideograph, which BertNormalizer's
// handle_chinese_chars makes a word of its own (the ranges of BERT's
// _is_chinese_char).
func isCJK(r rune) bool {
	return 0x4E00 <= r && r <= 0x9FFF || 0x3400 <= r && r <= 0x4DBF ||
		0x20000 <= r && r <= 0x2A6DF || 0x2A700 <= r && r <= 0x2B73F ||
		0x2B740 <= r && r <= 0x2B81F || 0x2B920 <= r && r <= 0x2CEAF ||
		0xF900 <= r && r <= 0xFAFF || 0x2F800 <= r && r <= 0x2FA1F
}

const (
	hangulBase  = 0xAC00
	hangulCount = 11172
)
