package embed

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file holds the general tokenizer pipeline: the normalizers and
// pre-tokenizers of Hugging Face tokenizers that Model2Vec models use, each
// a function built from its tokenizer.json component by a table keyed by
// the component's "type". Each one works on whole strings, in the order
// tokenizers applies them; only the token ids matter here, so no offsets
// are kept.

// pipeline is a tokenizer's normalizer and pre-tokenizer.
type pipeline struct {
	norm normalizer   // nil: the text as it is
	pre  preTokenizer // nil: the whole normalised text is one word
}

// normalizer maps a text to its normalised form.
type normalizer func(string) string

// word is one split of a pre-tokenized text. at0 is set when it starts
// where the original text starts (Metaspace's prepend_scheme "first"
// prepends to that split only).
type word struct {
	s   string
	at0 bool
}

// preTokenizer appends the words w splits into to dst.
type preTokenizer func(dst []word, w word) []word

// partType returns a component's "type": "" for a JSON null or a missing
// component, an error wrapping ErrInvalidModel for one that is not an
// object with a string type.
func partType(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var t struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("%v: %w", err, ErrInvalidModel)
	}
	if t.Type == nil {
		return "", fmt.Errorf("a component without a type: %w", ErrInvalidModel)
	}
	return *t.Type, nil
}

// canonicalJSON re-encodes raw with sorted keys and no spaces, so the
// identity does not depend on how the file was formatted.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return []byte("null")
	}
	b, _ := json.Marshal(v) // re-encoding a decoded value cannot fail
	return b
}

// unknownComponent is the error for a component type this package does
// not implement.
func unknownComponent(component, typ string) error {
	return &ComponentError{Component: component, Type: typ}
}

// normalizerTypes builds each normalizer this package implements, except
// "Sequence", which parseNormalizer handles (it recurses).
var normalizerTypes = map[string]func(json.RawMessage) (normalizer, error){
	"BertNormalizer": func(raw json.RawMessage) (normalizer, error) {
		b, err := parseBertNormalizer(raw)
		return b.apply, err
	},
	"Replace":      parseReplace,
	"Lowercase":    func(json.RawMessage) (normalizer, error) { return lowerRust, nil },
	"NFC":          func(json.RawMessage) (normalizer, error) { return norm.NFC.String, nil },
	"NFD":          func(json.RawMessage) (normalizer, error) { return norm.NFD.String, nil },
	"NFKC":         func(json.RawMessage) (normalizer, error) { return norm.NFKC.String, nil },
	"NFKD":         func(json.RawMessage) (normalizer, error) { return norm.NFKD.String, nil },
	"Strip":        parseStrip,
	"StripAccents": func(json.RawMessage) (normalizer, error) { return stripMarks, nil },
	"Prepend":      parsePrepend,
	"Nmt":          func(json.RawMessage) (normalizer, error) { return nmt, nil },
	"Precompiled":  parsePrecompiled,
}

// parseNormalizer builds the normalizer of a tokenizer.json; nil for none.
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	typ, err := partType(raw)
	if err != nil || typ == "" {
		return nil, err
	}
	if typ == "Sequence" {
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := unmarshalPart(raw, &seq); err != nil {
			return nil, err
		}
		var steps []normalizer
		for i := 0; i < len(seq.Normalizers); i++ {
			if n, used := mergeReplaces(seq.Normalizers[i:]); used > 1 {
				steps = append(steps, n)
				i += used - 1
				continue
			}
			n, err := parseNormalizer(seq.Normalizers[i])
			if err != nil {
				return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
			}
			if n != nil {
				steps = append(steps, n)
			}
		}
		return func(s string) string {
			for _, n := range steps {
				s = n(s)
			}
			return s
		}, nil
	}
	build, ok := normalizerTypes[typ]
	if !ok {
		return nil, unknownComponent("normalizer", typ)
	}
	return build(raw)
}

// mergeReplaces turns the Replace normalizers of one character each at the
// start of parts (Model2Vec's Sequence holds 32 of them, one per ASCII
// punctuation mark) into one strings.Replacer pass, and reports how many
// it took. That gives what replacing one after another gives when the
// characters differ and no replacement holds the character of a later
// one; it stops before a part that would break that.
func mergeReplaces(parts []json.RawMessage) (normalizer, int) {
	var pairs []string
	for _, raw := range parts {
		var r struct {
			Type    string         `json:"type"`
			Pattern replacePattern `json:"pattern"`
			Content *string        `json:"content"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Type != "Replace" || r.Content == nil ||
			r.Pattern.String == nil || r.Pattern.Regex != nil || utf8.RuneCountInString(*r.Pattern.String) != 1 {
			break
		}
		old := *r.Pattern.String
		clash := false
		for i := 0; i < len(pairs); i += 2 {
			clash = clash || pairs[i] == old || strings.Contains(pairs[i+1], old)
		}
		if clash {
			break
		}
		pairs = append(pairs, old, *r.Content)
	}
	if len(pairs) < 4 {
		return nil, 0
	}
	return strings.NewReplacer(pairs...).Replace, len(pairs) / 2
}

// bertNormalizer holds a BertNormalizer's settings.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

// parseBertNormalizer reads a BertNormalizer with tokenizers' defaults:
// everything on, strip_accents null following lowercase.
func parseBertNormalizer(raw json.RawMessage) (bertNormalizer, error) {
	var nz struct {
		CleanText    *bool `json:"clean_text"`
		ChineseChars *bool `json:"handle_chinese_chars"`
		StripAccents *bool `json:"strip_accents"`
		Lowercase    *bool `json:"lowercase"`
	}
	if err := unmarshalPart(raw, &nz); err != nil {
		return bertNormalizer{}, err
	}
	b := bertNormalizer{
		cleanText:    nz.CleanText == nil || *nz.CleanText,
		chineseChars: nz.ChineseChars == nil || *nz.ChineseChars,
		lowercase:    nz.Lowercase == nil || *nz.Lowercase,
	}
	b.stripAccents = b.lowercase
	if nz.StripAccents != nil {
		b.stripAccents = *nz.StripAccents
	}
	return b, nil
}

// apply runs the BertNormalizer on s, step by step in tokenizers' order:
// clean_text (drop NUL, U+FFFD and "other" characters, make whitespace a
// space), handle_chinese_chars (a space either side of each CJK
// ideograph), strip_accents (NFD, then drop nonspacing marks), lowercase.
func (b bertNormalizer) apply(s string) string {
	if isASCII(s) {
		return b.applyASCII(s)
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		if b.cleanText {
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				r = ' '
			case r == utf8.RuneError || isOther(r): // NUL is "other" too
				continue
			case unicode.IsSpace(r):
				r = ' '
			}
		}
		if b.chineseChars && isCJK(r) {
			sb.WriteByte(' ')
			sb.WriteRune(r)
			sb.WriteByte(' ')
			continue
		}
		sb.WriteRune(r)
	}
	out := sb.String()
	if b.stripAccents {
		out = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(out))
	}
	if b.lowercase {
		out = lowerRust(out)
	}
	return out
}

// applyASCII is apply for an ASCII s, which has no accents, CJK or
// non-ASCII spaces: a control character goes (\t, \n and \r become
// spaces) and letters are lowercased, as configured.
func (b bertNormalizer) applyASCII(s string) string {
	buf := []byte(s)
	n := 0
	for _, c := range buf {
		switch {
		case b.cleanText && (c == '\t' || c == '\n' || c == '\r'):
			c = ' '
		case b.cleanText && (c < 0x20 || c == 0x7f):
			continue
		case b.lowercase && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return string(buf[:n])
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerRust lowercases s as Rust's char::to_lowercase does, character by
// character: as unicode.ToLower, except that 'İ' becomes "i̇".
func lowerRust(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.Map(unicode.ToLower, s)
	}
	return strings.Map(unicode.ToLower, strings.ReplaceAll(s, "İ", "i\u0307"))
}

// stripMarks is the StripAccents normalizer: it drops combining marks.
func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me) {
			return -1
		}
		return r
	}, s)
}

// nmt is the Nmt normalizer (sentencepiece's NMT rules): it drops some
// control characters and makes some others, and a few spaces, a space.
func nmt(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 0x1 <= r && r <= 0x8, r == 0xb, 0xe <= r && r <= 0x1f, r == 0x7f, r == 0x8f, r == 0x9f:
			return -1
		case r == 0x9, r == 0xa, r == 0xc, r == 0xd, r == 0x1680, 0x200b <= r && r <= 0x200f,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xfeff, r == 0xfffd:
			return ' '
		}
		return r
	}, s)
}

// parseStrip reads a Strip normalizer: whitespace (Rust's
// char::is_whitespace, which is unicode.IsSpace) off either end.
func parseStrip(raw json.RawMessage) (normalizer, error) {
	var st struct {
		Left  *bool `json:"strip_left"`
		Right *bool `json:"strip_right"`
	}
	if err := unmarshalPart(raw, &st); err != nil {
		return nil, err
	}
	left, right := st.Left == nil || *st.Left, st.Right == nil || *st.Right
	return func(s string) string {
		if left {
			s = strings.TrimLeftFunc(s, unicode.IsSpace)
		}
		if right {
			s = strings.TrimRightFunc(s, unicode.IsSpace)
		}
		return s
	}, nil
}

// parsePrepend reads a Prepend normalizer: its string before any non-empty
// text.
func parsePrepend(raw json.RawMessage) (normalizer, error) {
	var p struct {
		Prepend *string `json:"prepend"`
	}
	if err := unmarshalPart(raw, &p); err != nil {
		return nil, err
	}
	if p.Prepend == nil {
		return nil, fmt.Errorf("Prepend without a prepend string: %w", ErrInvalidModel)
	}
	pre := *p.Prepend
	return func(s string) string {
		if s == "" {
			return s
		}
		return pre + s
	}, nil
}

// replacePattern is the "pattern" of a Replace normalizer or a Split
// pre-tokenizer: a literal string or an Oniguruma regular expression.
type replacePattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// compile returns the pattern as a Go regular expression (nil for a
// string), or an error naming the component when it cannot be translated.
func (p replacePattern) compile(component, typ string) (*regexp.Regexp, error) {
	switch {
	case p.String != nil && p.Regex == nil:
		if *p.String == "" {
			return nil, fmt.Errorf("%s %s with an empty pattern: %w", typ, component, ErrInvalidModel)
		}
		return nil, nil
	case p.Regex != nil && p.String == nil:
		expr, err := translateOnig(*p.Regex)
		if err == nil {
			var re *regexp.Regexp
			if re, err = regexp.Compile(expr); err == nil {
				return re, nil
			}
		}
		return nil, &ComponentError{Component: component, Type: typ, Detail: fmt.Sprintf("regular expression %q: %v", *p.Regex, err)}
	}
	return nil, fmt.Errorf("%s %s pattern needs one of String and Regex: %w", component, typ, ErrInvalidModel)
}

// parseReplace reads a Replace normalizer: every match of its pattern,
// leftmost first and not overlapping, becomes its content.
func parseReplace(raw json.RawMessage) (normalizer, error) {
	var r struct {
		Pattern replacePattern `json:"pattern"`
		Content *string        `json:"content"`
	}
	if err := unmarshalPart(raw, &r); err != nil {
		return nil, err
	}
	if r.Content == nil {
		return nil, fmt.Errorf("Replace without content: %w", ErrInvalidModel)
	}
	re, err := r.Pattern.compile("normalizer", "Replace")
	if err != nil {
		return nil, err
	}
	content := *r.Content
	switch {
	case re == nil:
		old := *r.Pattern.String
		return func(s string) string { return strings.ReplaceAll(s, old, content) }, nil
	case *r.Pattern.Regex == `\s+`:
		// Model2Vec's own rule, run without the regexp engine.
		return func(s string) string { return squeezeSpaces(s, content) }, nil
	}
	return func(s string) string { return re.ReplaceAllLiteralString(s, content) }, nil
}

// squeezeSpaces replaces each run of whitespace in s (Oniguruma's \s,
// which is unicode.IsSpace) with content.
func squeezeSpaces(s, content string) string {
	// Nothing to do when every run is one character that equals content.
	clean := true
	prev := false
	for _, r := range s {
		sp := unicode.IsSpace(r)
		if sp && (prev || string(r) != content) {
			clean = false
			break
		}
		prev = sp
	}
	if clean {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	prev = false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		switch {
		case sp && !prev:
			sb.WriteString(content)
		case !sp:
			_, size := utf8.DecodeRuneInString(s[i:])
			sb.WriteString(s[i : i+size]) // invalid bytes as they are
		}
		prev = sp
	}
	return sb.String()
}

// The Unicode classes of Oniguruma's \s, \d and \w with UTF-8 text (what
// tokenizers compiles its patterns with), as Go character-class contents;
// Go's own are ASCII-only. \w is approximated without Other_Alphabetic.
const (
	onigSpace = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`
	onigDigit = `\p{Nd}`
	onigWord  = `\pL\pM\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}`
)

// translateOnig rewrites the Oniguruma pattern expr for Go's regexp:
// \s, \d and \w (and their negations, outside brackets) become their
// Unicode classes. The rest must mean the same in both syntaxes, which
// holds for the plain patterns tokenizer files use; anything Go's
// regexp rejects is reported by the caller.
func translateOnig(expr string) (string, error) {
	var sb strings.Builder
	inClass := false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\\' || i+1 == len(expr) {
			switch {
			case c == '[' && !inClass:
				inClass = true
			case c == ']' && inClass:
				inClass = false
			}
			sb.WriteByte(c)
			continue
		}
		i++
		class := map[byte]string{'s': onigSpace, 'd': onigDigit, 'w': onigWord,
			'S': onigSpace, 'D': onigDigit, 'W': onigWord}[expr[i]]
		switch {
		case class == "":
			sb.WriteByte('\\')
			sb.WriteByte(expr[i])
		case inClass && unicode.IsUpper(rune(expr[i])):
			return "", fmt.Errorf(`\%c inside brackets`, expr[i])
		case inClass:
			sb.WriteString(class)
		case unicode.IsUpper(rune(expr[i])):
			sb.WriteString("[^" + class + "]")
		default:
			sb.WriteString("[" + class + "]")
		}
	}
	return sb.String(), nil
}

// preTokenizerTypes builds each pre-tokenizer this package implements,
// except "Sequence", which parsePreTokenizer handles.
var preTokenizerTypes = map[string]func(json.RawMessage) (preTokenizer, error){
	"BertPreTokenizer": func(json.RawMessage) (preTokenizer, error) { return bertPreTokenize, nil },
	"Whitespace":       func(json.RawMessage) (preTokenizer, error) { return whitespacePreTokenize, nil },
	"WhitespaceSplit":  func(json.RawMessage) (preTokenizer, error) { return whitespaceSplit, nil },
	"Metaspace":        parseMetaspace,
	"Digits":           parseDigits,
	"ByteLevel":        parseByteLevel,
}

// parsePreTokenizer builds the pre-tokenizer of a tokenizer.json; nil for
// none.
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	typ, err := partType(raw)
	if err != nil || typ == "" {
		return nil, err
	}
	if typ == "Sequence" {
		var seq struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := unmarshalPart(raw, &seq); err != nil {
			return nil, err
		}
		var steps []preTokenizer
		for i, part := range seq.PreTokenizers {
			p, err := parsePreTokenizer(part)
			if err != nil {
				return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
			}
			if p != nil {
				steps = append(steps, p)
			}
		}
		return func(dst []word, w word) []word {
			cur := []word{w}
			for _, p := range steps {
				var next []word
				for _, x := range cur {
					next = p(next, x)
				}
				cur = next
			}
			return append(dst, cur...)
		}, nil
	}
	build, ok := preTokenizerTypes[typ]
	if !ok {
		return nil, unknownComponent("pre_tokenizer", typ)
	}
	return build(raw)
}

// splitRunes splits w by the class of each character: class returns drop
// for a character that separates words and is removed, alone for one
// that is a word by itself, or any other value, characters of equal value
// running together into one word.
func splitRunes(dst []word, w word, class func(rune) int) []word {
	start, cur := 0, -1
	flush := func(end int) {
		if start < end {
			dst = append(dst, word{w.s[start:end], w.at0 && start == 0})
		}
	}
	for i, r := range w.s {
		c := class(r)
		if c == cur && c != splitAlone && c != splitDrop {
			continue
		}
		flush(i)
		start, cur = i, c
		if c == splitDrop {
			_, size := utf8.DecodeRuneInString(w.s[i:])
			start = i + size
		}
	}
	flush(len(w.s))
	return dst
}

// The classes of splitRunes that are not ordinary runs.
const (
	splitDrop  = -2
	splitAlone = -3
)

// bertPreTokenize splits on whitespace, removed, and punctuation, each
// character a word.
func bertPreTokenize(dst []word, w word) []word {
	return splitRunes(dst, w, func(r rune) int {
		switch {
		case unicode.IsSpace(r):
			return splitDrop
		case r < utf8.RuneSelf && asciiPunct(byte(r)), unicode.IsPunct(r):
			return splitAlone
		}
		return 0
	})
}

// whitespaceSplit splits on whitespace, removed.
func whitespaceSplit(dst []word, w word) []word {
	return splitRunes(dst, w, func(r rune) int {
		if unicode.IsSpace(r) {
			return splitDrop
		}
		return 0
	})
}

// whitespacePreTokenize is the Whitespace pre-tokenizer, the pattern
// \w+|[^\w\s]+: runs of word characters and runs of other non-space
// characters; whitespace is removed.
func whitespacePreTokenize(dst []word, w word) []word {
	return splitRunes(dst, w, func(r rune) int {
		switch {
		case isOnigWord(r):
			return 1
		case unicode.IsSpace(r):
			return splitDrop
		}
		return 2
	})
}

// isOnigWord reports whether r matches Oniguruma's \w with UTF-8 text:
// alphabetic, a mark, a decimal digit, a connector or a joiner.
func isOnigWord(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.Nd, unicode.Nl, unicode.Pc,
		unicode.Other_Alphabetic, unicode.Join_Control)
}

// parseDigits reads a Digits pre-tokenizer: numeric characters (Rust's
// char::is_numeric, Unicode N) split from the rest, each a word with
// individual_digits, else runs of them.
func parseDigits(raw json.RawMessage) (preTokenizer, error) {
	var d struct {
		Individual bool `json:"individual_digits"`
	}
	if err := unmarshalPart(raw, &d); err != nil {
		return nil, err
	}
	digit := 1
	if d.Individual {
		digit = splitAlone
	}
	return func(dst []word, w word) []word {
		return splitRunes(dst, w, func(r rune) int {
			if unicode.IsNumber(r) {
				return digit
			}
			return 0
		})
	}, nil
}

// parseMetaspace reads a Metaspace pre-tokenizer: each space becomes the
// replacement character; it is prepended to every word (prepend_scheme
// "always"), to the text's first word ("first") or to none ("never")
// unless the word starts with it; with split, each replacement character
// starts a new word. An old file's add_prefix_space stands for "always"
// (true) or "never" (false).
func parseMetaspace(raw json.RawMessage) (preTokenizer, error) {
	var m struct {
		Replacement    *string `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		Split          *bool   `json:"split"`
	}
	if err := unmarshalPart(raw, &m); err != nil {
		return nil, err
	}
	rep := "\u2581"
	if m.Replacement != nil {
		if utf8.RuneCountInString(*m.Replacement) != 1 {
			return nil, fmt.Errorf("Metaspace replacement %q is not one character: %w", *m.Replacement, ErrInvalidModel)
		}
		rep = *m.Replacement
	}
	scheme := "always"
	if m.AddPrefixSpace != nil && !*m.AddPrefixSpace {
		scheme = "never"
	}
	if m.PrependScheme != nil {
		scheme = *m.PrependScheme
	}
	if scheme != "always" && scheme != "first" && scheme != "never" {
		return nil, &ComponentError{Component: "pre_tokenizer", Type: "Metaspace", Detail: fmt.Sprintf("prepend_scheme %q", scheme)}
	}
	ms := metaspace{rep: rep, scheme: scheme, split: m.Split == nil || *m.Split}
	return ms.apply, nil
}

// metaspace is a parsed Metaspace pre-tokenizer.
type metaspace struct {
	rep    string // the replacement character
	scheme string // "always", "first" or "never"
	split  bool
}

// apply runs the Metaspace pre-tokenizer on w.
func (m metaspace) apply(dst []word, w word) []word {
	s := strings.ReplaceAll(w.s, " ", m.rep)
	if s != "" && !strings.HasPrefix(s, m.rep) && (m.scheme == "always" || m.scheme == "first" && w.at0) {
		s = m.rep + s
	}
	if !m.split {
		if s != "" {
			dst = append(dst, word{s, w.at0})
		}
		return dst
	}
	// Each replacement character starts a word (tokenizers'
	// MergedWithNext).
	start := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], m.rep)
		if j < 0 {
			break
		}
		if i+j > start {
			dst = append(dst, word{s[start : i+j], w.at0 && start == 0})
		}
		start = i + j
		i = start + len(m.rep)
	}
	if start < len(s) {
		dst = append(dst, word{s[start:], w.at0 && start == 0})
	}
	return dst
}

// parseByteLevel reads a ByteLevel pre-tokenizer (GPT-2's, which Model2Vec
// keeps when it turns a BPE tokenizer into a Unigram one): with
// add_prefix_space (default on) a space goes before each word that does
// not start with one; with use_regex (default on) each word is split by
// GPT-2's pattern; then every byte becomes the character GPT-2's table
// gives it.
func parseByteLevel(raw json.RawMessage) (preTokenizer, error) {
	var b struct {
		AddPrefixSpace *bool `json:"add_prefix_space"`
		UseRegex       *bool `json:"use_regex"`
	}
	if err := unmarshalPart(raw, &b); err != nil {
		return nil, err
	}
	bl := byteLevel{prefix: b.AddPrefixSpace == nil || *b.AddPrefixSpace, regex: b.UseRegex == nil || *b.UseRegex}
	return bl.apply, nil
}

// byteLevel is a parsed ByteLevel pre-tokenizer.
type byteLevel struct {
	prefix, regex bool
}

// apply runs the ByteLevel pre-tokenizer on w.
func (b byteLevel) apply(dst []word, w word) []word {
	s := w.s
	if b.prefix && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.regex {
		return append(dst, word{byteChars(s), w.at0})
	}
	for i := 0; i < len(s); {
		n := max(gpt2Match(s, i), 1) // never 0, but a slip must not loop forever
		dst = append(dst, word{byteChars(s[i : i+n]), w.at0 && i == 0})
		i += n
	}
	return dst
}

// gpt2Match returns the length of the match at s[i:] of GPT-2's pattern
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (its alternatives tried in order, as a regex engine does), which
// matches everywhere, so the matches cover s.
func gpt2Match(s string, i int) int {
	for _, c := range [...]string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
		if strings.HasPrefix(s[i:], c) {
			return len(c)
		}
	}
	j := i
	if s[j] == ' ' {
		j++
	}
	if j < len(s) {
		r, _ := utf8.DecodeRuneInString(s[j:])
		switch {
		case unicode.IsLetter(r):
			return runOf(s, j, unicode.IsLetter) - i
		case unicode.IsNumber(r):
			return runOf(s, j, unicode.IsNumber) - i
		case !unicode.IsSpace(r):
			return runOf(s, j, func(r rune) bool { return !unicode.In(r, unicode.L, unicode.N) && !unicode.IsSpace(r) }) - i
		}
	}
	// Whitespace: all of a run that ends the text or is one character,
	// else all but its last character (which goes with what follows).
	end := runOf(s, i, unicode.IsSpace)
	_, last := utf8.DecodeLastRuneInString(s[:end])
	if end == len(s) || end-last == i {
		return end - i
	}
	return end - last - i
}

// runOf returns the end of the run of characters in class from s[i].
func runOf(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !class(r) {
			break
		}
		i += size
	}
	return i
}

// byteChars maps every byte of s to its character in GPT-2's
// bytes_to_unicode table.
func byteChars(s string) string {
	t := gpt2Bytes()
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		sb.WriteRune(t[s[i]])
	}
	return sb.String()
}

// gpt2Bytes is GPT-2's bytes_to_unicode: the printable bytes '!'-'~',
// '¡'-'¬' and '®'-'ÿ' stand for themselves, the others for 256, 257, ...
// in byte order.
var gpt2Bytes = sync.OnceValue(func() *[256]rune {
	var t [256]rune
	n := rune(256)
	for b := range t {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			t[b] = rune(b)
		} else {
			t[b] = n
			n++
		}
	}
	return &t
})
