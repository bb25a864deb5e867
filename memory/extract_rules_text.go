package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokeniser of the rule extractor: one linear pass over the text that
// yields words, numbers, identifiers, e-mail addresses, URLs and
// punctuation, grouped into sentences. Contractions are expanded ("I'm"
// → "I" "am", "don't" → "do" "not"), so that the patterns see one form.

// ruleTokKind classifies a token.
type ruleTokKind uint8

const (
	rtWord  ruleTokKind = iota // letters, with inner apostrophes and hyphens
	rtNum                      // digits, with inner . , : / -
	rtIdent                    // letters and digits mixed, or a #-prefixed code
	rtEmail
	rtURL
	rtPunct
)

// ruleTok is one unit of a sentence.
type ruleTok struct {
	s   string // surface text (an expanded contraction's piece: "am")
	l   string // lower case of s
	k   ruleTokKind
	cap bool // the first rune is upper case
	sp  bool // rendered with a space before it
}

// ruleSentence is a run of tokens up to a sentence end.
type ruleSentence struct {
	toks     []ruleTok
	question bool // ends with "?"
	guarded  bool // hypothetical, reported, quoted or uncertain: no facts
}

// maxRuleBytes bounds the text the rule extractor reads: the rest of a
// longer message is ignored (chat messages are far shorter; a 200 KiB
// paste is a document, not something said about oneself).
const maxRuleBytes = 16 << 10

// maxRuleTokenBytes bounds a word the patterns consider: longer ones are kept
// as tokens but never become names.
const maxRuleTokenBytes = 64

// ruleAbbrev are abbreviations whose trailing period does not end a sentence.
var ruleAbbrev = ruleWords("mr mrs ms dr st prof jr sr vs etc approx")

// ruleGuard words mark a sentence as hypothetical, reported, uncertain or
// modal: nothing in it is taken as a fact, a preference or an event.
var ruleGuard = ruleWords(`if unless whether would could should might wish wished suppose supposing imagine
imagined pretend maybe perhaps hope hoping hopefully assume assuming said says say saying told tells tell
think thinks thought believe believes believed heard hear according claims claimed claim asked asks
wonder wondering wondered guess guessing dream dreamed dreamt hypothetically kidding joking rumor rumour
apparently supposedly allegedly probably possibly`)

// ruleNeg words deny what follows them.
var ruleNeg = ruleWords("not never no nobody nothing neither nor none")

// ruleContractions maps a lower-case contraction to its expansion.
var ruleContractions = map[string][2]string{
	"i'm": {"I", "am"}, "i've": {"I", "have"}, "i'd": {"I", "would"}, "i'll": {"I", "will"},
	"we're": {"we", "are"}, "we've": {"we", "have"}, "we'd": {"we", "would"}, "we'll": {"we", "will"},
	"you're": {"you", "are"}, "you've": {"you", "have"}, "you'd": {"you", "would"}, "you'll": {"you", "will"},
	"they're": {"they", "are"}, "they've": {"they", "have"}, "they'd": {"they", "would"}, "they'll": {"they", "will"},
	"he'd": {"he", "would"}, "she'd": {"she", "would"}, "he'll": {"he", "will"}, "she'll": {"she", "will"},
	"it's": {"it", "is"}, "that's": {"that", "is"}, "what's": {"what", "is"}, "there's": {"there", "is"},
	"he's": {"he", "is"}, "she's": {"she", "is"}, "who's": {"who", "is"}, "here's": {"here", "is"},
	"let's": {"let", "us"}, "name's": {"name", "is"},
	"can't": {"can", "not"}, "won't": {"will", "not"}, "shan't": {"shall", "not"}, "ain't": {"is", "not"},
}

// ruleWords builds a set from space-separated words.
func ruleWords(words string) map[string]struct{} {
	f := strings.Fields(words)
	m := make(map[string]struct{}, len(f))
	for _, w := range f {
		m[w] = struct{}{}
	}
	return m
}

func inSet(set map[string]struct{}, w string) bool {
	_, ok := set[w]
	return ok
}

// ruleTokenizer accumulates the sentences of one text.
type ruleTokenizer struct {
	sents []ruleSentence
	cur   []ruleTok // the current sentence, at the end of buf when it fits
	buf   []ruleTok // the tokens of the closed sentences
	space bool
}

// ruleTokenize splits text into sentences of tokens. It is linear in the
// length of text.
func ruleTokenize(text string) []ruleSentence {
	z := ruleTokenizer{space: true, buf: make([]ruleTok, 0, len(text)/4+4)}
	z.cur = z.buf[:0]
	z.sents = make([]ruleSentence, 0, len(text)/64+1)
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n' || r == '\r':
			z.end(false)
			z.space = true
			i += n
		case unicode.IsSpace(r) || r == utf8.RuneError:
			z.space = true
			i += n
		default:
			j := i
			for j < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[j:])
				if unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
			z.chunk(text[i:j])
			i = j
			z.space = true
		}
	}
	z.end(false)
	return z.sents
}

// end closes the current sentence.
func (z *ruleTokenizer) end(question bool) {
	if len(z.cur) == 0 {
		return
	}
	s := ruleSentence{toks: z.cur, question: question}
	for _, t := range s.toks {
		if t.k == rtPunct && (t.s == `"` || t.s == "“" || t.s == "”") {
			s.guarded = true
		}
		if t.k == rtWord && inSet(ruleGuard, t.l) {
			s.guarded = true
		}
	}
	z.sents = append(z.sents, s)
	// One allocation for the tokens of every sentence: cur grows in buf's
	// spare capacity unless it outgrew it.
	if spare := z.buf[len(z.buf):cap(z.buf)]; len(spare) > 0 && &spare[0] == &z.cur[0] {
		z.buf = z.buf[:len(z.buf)+len(z.cur)]
	}
	z.cur = z.buf[len(z.buf):len(z.buf):cap(z.buf)]
}

func (z *ruleTokenizer) add(t ruleTok) {
	t.sp = z.space
	z.space = false
	z.cur = append(z.cur, t)
}

const ruleTrailingPunct = `.,;:!?)]}>"'”’`

// chunk tokenises a run of text without spaces.
func (z *ruleTokenizer) chunk(c string) {
	lc := strings.ToLower(c)
	if strings.HasPrefix(lc, "http://") || strings.HasPrefix(lc, "https://") || strings.HasPrefix(lc, "www.") {
		u := strings.TrimRight(c, ruleTrailingPunct)
		if len(u) > len("www.") {
			z.add(ruleTok{s: u, l: strings.ToLower(u), k: rtURL})
			z.words(c[len(u):])
			return
		}
	}
	if strings.IndexByte(c, '@') >= 0 {
		lead := len(c) - len(strings.TrimLeft(c, `(<["'“`))
		e := strings.TrimRight(c[lead:], ruleTrailingPunct)
		if ruleIsEmail(e) {
			z.words(c[:lead])
			z.add(ruleTok{s: e, l: strings.ToLower(e), k: rtEmail})
			z.words(c[lead+len(e):])
			return
		}
	}
	z.words(c)
}

// ruleIsEmail reports whether s looks like local@domain.tld.
func ruleIsEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || at != strings.LastIndexByte(s, '@') || len(s) > 254 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 || dot >= len(domain)-2 {
		return false
	}
	for _, r := range local {
		if !(r < utf8.RuneSelf && (ruleAlnum(r) || strings.ContainsRune("._%+-", r))) {
			return false
		}
	}
	for _, r := range domain {
		if !(r < utf8.RuneSelf && (ruleAlnum(r) || r == '.' || r == '-')) {
			return false
		}
	}
	return !strings.Contains(domain, "..")
}

func ruleAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// words splits a chunk into words, numbers, identifiers and punctuation.
func (z *ruleTokenizer) words(c string) {
	i := 0
	for i < len(c) {
		r, n := utf8.DecodeRuneInString(c[i:])
		if !ruleAlnum(r) && !(r == '#' && i+n < len(c) && ruleAlnumAt(c, i+n)) {
			i += n
			z.punct(r, c, i)
			continue
		}
		j := i + n
		for j < len(c) {
			r2, n2 := utf8.DecodeRuneInString(c[j:])
			if ruleAlnum(r2) {
				j += n2
				continue
			}
			// Joiners inside a word: an apostrophe between letters, a
			// hyphen between letters or digits, and . , : / between
			// digits.
			if j+n2 < len(c) && ruleAlnumAt(c, j+n2) {
				prev, _ := utf8.DecodeLastRuneInString(c[:j])
				next, _ := utf8.DecodeRuneInString(c[j+n2:])
				if ((r2 == '\'' || r2 == '’') && unicode.IsLetter(prev) && unicode.IsLetter(next)) ||
					r2 == '-' ||
					(strings.ContainsRune(".,:/", r2) && unicode.IsDigit(prev) && unicode.IsDigit(next)) {
					j += n2
					continue
				}
			}
			break
		}
		z.word(c[i:j])
		i = j
	}
}

func ruleAlnumAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return ruleAlnum(r)
}

// punct adds a punctuation token; a sentence end closes the sentence.
// after indexes c past the rune, to see a run like "?!" or "...".
func (z *ruleTokenizer) punct(r rune, c string, after int) {
	s := string(r)
	if r == '’' || r == '‘' {
		s = "'"
	}
	switch r {
	case '.', '!', '?', '…':
		if r == '.' && len(z.cur) > 0 {
			last := &z.cur[len(z.cur)-1]
			if last.k == rtWord && !z.space && (inSet(ruleAbbrev, last.l) ||
				last.l == "no" && len(z.cur) > 1 && inSet(ruleIDNouns, z.cur[len(z.cur)-2].l)) {
				// "Dr. Lee", "St. Mary", "ticket no. 12": the period
				// belongs to the word.
				last.s += "."
				last.l += "."
				return
			}
		}
		z.add(ruleTok{s: s, l: s, k: rtPunct})
		// A run like "?!" or "..." ends once.
		if after < len(c) {
			if nr, _ := utf8.DecodeRuneInString(c[after:]); strings.ContainsRune(".!?…", nr) {
				return
			}
		}
		z.end(r == '?' || (r == '!' && len(z.cur) > 1 && z.cur[len(z.cur)-2].s == "?"))
		return
	}
	z.add(ruleTok{s: s, l: s, k: rtPunct})
}

// word adds a word, number or identifier, expanding contractions.
func (z *ruleTokenizer) word(w string) {
	w = strings.ReplaceAll(w, "’", "'")
	l := strings.ToLower(w)
	first, _ := utf8.DecodeRuneInString(w)
	capital := unicode.IsUpper(first)
	hasDigit, hasLetter := false, false
	for _, r := range w {
		if unicode.IsDigit(r) {
			hasDigit = true
		} else if unicode.IsLetter(r) {
			hasLetter = true
		}
	}
	switch {
	case w[0] == '#' || (hasDigit && hasLetter):
		z.add(ruleTok{s: w, l: l, k: rtIdent, cap: capital})
		return
	case hasDigit:
		z.add(ruleTok{s: w, l: l, k: rtNum})
		return
	}
	if strings.IndexByte(l, '\'') >= 0 {
		if e, ok := ruleContractions[l]; ok {
			z.add(ruleTok{s: ruleKeepCase(e[0], capital), l: strings.ToLower(e[0]), k: rtWord, cap: e[0] == "I" || capital})
			z.cur = append(z.cur, ruleTok{s: e[1], l: e[1], k: rtWord, sp: true})
			return
		}
		switch {
		case strings.HasSuffix(l, "n't"):
			base := w[:len(w)-3]
			z.add(ruleTok{s: base, l: l[:len(l)-3], k: rtWord, cap: capital})
			z.cur = append(z.cur, ruleTok{s: "not", l: "not", k: rtWord, sp: true})
			return
		case strings.HasSuffix(l, "'s") && len(l) > 2:
			z.add(ruleTok{s: w[:len(w)-2], l: l[:len(l)-2], k: rtWord, cap: capital})
			z.cur = append(z.cur, ruleTok{s: "'s", l: "'s", k: rtWord})
			return
		case strings.HasSuffix(l, "'re") || strings.HasSuffix(l, "'ve") || strings.HasSuffix(l, "'ll") || strings.HasSuffix(l, "'d"):
			k := strings.LastIndexByte(l, '\'')
			z.add(ruleTok{s: w[:k], l: l[:k], k: rtWord, cap: capital})
			exp := map[string]string{"'re": "are", "'ve": "have", "'ll": "will", "'d": "would"}[l[k:]]
			z.cur = append(z.cur, ruleTok{s: exp, l: exp, k: rtWord, sp: true})
			return
		}
	}
	z.add(ruleTok{s: w, l: l, k: rtWord, cap: capital})
}

func ruleKeepCase(w string, capital bool) string {
	if capital && w != "I" {
		r, n := utf8.DecodeRuneInString(w)
		return string(unicode.ToUpper(r)) + w[n:]
	}
	return w
}

// ruleRender joins tokens back into text.
func ruleRender(b *strings.Builder, toks []ruleTok) {
	for _, t := range toks {
		if t.sp && b.Len() > 0 && !(t.k == rtPunct && strings.Contains(".,;:!?)]", t.s)) {
			b.WriteByte(' ')
		}
		b.WriteString(t.s)
	}
}

// ruleLooksEnglish reports whether text is plausibly English: mostly
// ASCII letters, and, past a few lower-case words, at least one in ten of
// them an English function word.
func ruleLooksEnglish(sents []ruleSentence) bool {
	words, function, ascii, other := 0, 0, 0, 0
	for _, s := range sents {
		for _, t := range s.toks {
			if t.k != rtWord {
				continue
			}
			if !t.cap {
				// Names say nothing about the language around them.
				words++
			}
			if inSet(ruleFunctionWords, t.l) {
				function++
			}
			for _, r := range t.l {
				if r < utf8.RuneSelf {
					ascii++
				} else if unicode.IsLetter(r) {
					other++
				}
			}
		}
	}
	if other*5 > ascii {
		return false
	}
	return words < 4 || function*10 >= words
}

// ruleFunctionWords are frequent English function words.
var ruleFunctionWords = ruleWords(`i me my mine we our us you your he she his her it its they them their the a an
and or but of to in on at for with from by about is am are was were be been being have has had do does did
not no this that these those there here what who where when why how which so if than then too very just
can will all some any one up out as into`)
