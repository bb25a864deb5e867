package index

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// maxTermBytes is the longest term kept, in bytes; longer tokens are cut at
// the last rune boundary before it, the same way in documents and queries,
// so a long token still matches itself. Lucene caps tokens at 255
// characters for the same reason: one base64 blob should not become a
// kilobyte-long dictionary key. A SHA-256 in hex (64 bytes) fits.
const maxTermBytes = 256

// Analyze returns the index terms of text, in order, repeats included: the
// terms [BM25.Add] indexes and [BM25.Search] looks up.
//
// Text is normalised to NFKC (so full-width and ligature forms match their
// plain letters) and split into words: runs of letters, digits and
// combining marks, with each Han or Hiragana character a word of its own,
// as in Unicode's word segmentation (UAX #29); format characters such as
// soft hyphens are ignored. A run of the joiners '-', '_', '.', '/', '@' and
// ':' between two word characters joins them into one token, and so does a
// single ',' between two digits ("1,000") and an apostrophe ("Alice's").
// Each token is then lower-cased by full Unicode case folding ("Straße"
// matches "STRASSE") and:
//
//   - a token holding a digit ("3942", "v1.2.3", "gpt4") or a joiner
//     ("user_id", "foo.bar", "alice@example.com", "abc-123") is an
//     identifier, kept whole and unstemmed;
//   - any other token is a word: English stop words (see stopwords.go) are
//     dropped and the rest stemmed by the Snowball English (Porter2)
//     stemmer, so "running" and "runs" both become "run".
//
// A final "'s" is removed first ("Alice's" indexes as "Alice" does; that
// is "alic", the stem). Terms are non-empty, lower-case, valid UTF-8 in
// NFC and at most 256 bytes long, and folding them again changes nothing.
// They may share memory with text.
func Analyze(text string) []string { return AppendTerms(nil, text) }

// AppendTerms is [Analyze] appending the terms of text to dst, for callers
// that reuse a buffer; it returns the extended slice.
func AppendTerms(dst []string, text string) []string {
	if !isASCII(text) {
		text = norm.NFKC.String(text)
	}
	for i := 0; i < len(text); {
		r, n := decodeRune(text, i)
		switch runeClass(r) {
		case clsWord:
			end, fl := scanToken(text, i)
			dst = appendToken(dst, text[i:end], fl)
			i = end
		case clsIdeo:
			// No case, no stem: the character is the term.
			dst = append(dst, text[i:i+n])
			i += n
		default:
			i += n
		}
	}
	return dst
}

// runeCls is the part a rune plays in splitting text into tokens.
type runeCls uint8

const (
	clsSep    runeCls = iota // ends a token
	clsWord                  // letter, digit or combining mark
	clsIdeo                  // Han or Hiragana: a token of its own
	clsJoiner                // joins two word runes: - _ . / @ : , and apostrophes
	clsFormat                // format character (soft hyphen, joiners): ignored
)

// tokFlags records what a token holds, so that the common case (ASCII
// lower-case) is a substring of the text with no copy.
type tokFlags uint8

const (
	tokUpper    tokFlags = 1 << iota // ASCII upper-case letter
	tokNonASCII                      // a rune past ASCII (fold, drop or rewrite it)
	tokDigit                         // a digit: an identifier
	tokJoiner                        // - _ . / @ : or ,: an identifier
	tokApos                          // an apostrophe: maybe a possessive
)

// asciiClass is runeClass for ASCII, where most text lives.
var asciiClass = func() (t [utf8.RuneSelf]runeCls) {
	for r := range utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			t[r] = clsWord
		case strings.ContainsRune("-_./@:,'", rune(r)):
			t[r] = clsJoiner
		}
	}
	return t
}()

func runeClass(r rune) runeCls {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case isApostrophe(r):
		return clsJoiner
	case r == '\u200b': // zero width space separates words in Thai and Khmer
		return clsSep
	case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
		if unicode.In(r, unicode.Han, unicode.Hiragana) {
			return clsIdeo
		}
		return clsWord
	case unicode.Is(unicode.Cf, r):
		return clsFormat
	}
	return clsSep
}

// isApostrophe reports whether r is written as an apostrophe: ASCII, the
// right single quotation mark most editors type, the left and reversed ones,
// and the modifier letter.
func isApostrophe(r rune) bool {
	switch r {
	case '\'', '\u2019', '\u2018', '\u201b', '\u02bc':
		return true
	}
	return false
}

// runeFlags returns the flags a word or joiner rune adds to its token.
func runeFlags(r rune) tokFlags {
	var fl tokFlags
	switch {
	case r >= utf8.RuneSelf:
		fl = tokNonASCII
		if isApostrophe(r) {
			fl |= tokApos
		} else if unicode.IsNumber(r) {
			fl |= tokDigit
		}
	case 'A' <= r && r <= 'Z':
		fl = tokUpper
	case '0' <= r && r <= '9':
		fl = tokDigit
	case r == '\'':
		fl = tokApos
	case asciiClass[r] == clsJoiner:
		fl = tokJoiner
	}
	return fl
}

// scanToken reads the token starting with the word rune at s[start] and
// returns where it ends and what it holds. A run of joiners (and format
// characters) belongs to the token only when a word rune follows it; a run
// holding a ',' only when it is that one comma between two digits.
func scanToken(s string, start int) (end int, fl tokFlags) {
	i := start
	lastDigit := false // whether the last word rune was a digit
	for i < len(s) {
		r, n := decodeRune(s, i)
		switch runeClass(r) {
		case clsWord:
			f := runeFlags(r)
			fl |= f
			lastDigit = f&tokDigit != 0
			i += n
			end = i
			continue
		case clsFormat:
			fl |= tokNonASCII
			i += n
			continue
		case clsJoiner:
			j, jfl, runes, comma := i, tokFlags(0), 0, false
			for j < len(s) {
				r2, n2 := decodeRune(s, j)
				c := runeClass(r2)
				if c != clsJoiner && c != clsFormat {
					break
				}
				if c == clsJoiner {
					jfl |= runeFlags(r2)
					runes++
					comma = comma || r2 == ','
				} else {
					jfl |= tokNonASCII
				}
				j += n2
			}
			if j < len(s) {
				r2, _ := decodeRune(s, j)
				if runeClass(r2) == clsWord &&
					(!comma || runes == 1 && lastDigit && runeFlags(r2)&tokDigit != 0) {
					fl |= jfl
					i = j
					continue
				}
			}
		}
		break
	}
	return end, fl
}

func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// appendToken turns one token into at most one term and appends it.
func appendToken(dst []string, tok string, fl tokFlags) []string {
	t := tok
	switch {
	case fl&tokNonASCII != 0:
		t = foldToken(tok)
	case fl&tokUpper != 0:
		t = strings.ToLower(tok)
	}
	ident := fl&(tokDigit|tokJoiner) != 0
	if fl&tokApos != 0 {
		if !ident && isStopWord(t) { // "they're", "don't"
			return dst
		}
		t = trimPossessive(t)
	}
	if ident {
		return appendTerm(dst, t)
	}
	if isStopWord(t) {
		return dst
	}
	st := stem(t)
	if st != t && !isASCII(st) {
		// The stemmer edited the word; keep it in the form fold gives.
		st = fold(st)
	}
	return appendTerm(dst, st)
}

// stemCacheSize is the number of words whose stems are remembered. The
// stemmer costs about 1 µs a word (kljensen/snowball v0.10.0 converts each
// suffix it tries to runes), about 80% of [Analyze]'s time, and word use is
// Zipfian: the 4096 commonest words of English cover most of a text.
const stemCacheSize = 4096

// stemEntry is one remembered stem.
type stemEntry struct{ word, stem string }

var (
	// stemCache is a direct-mapped memo of the stemmer, shared by every
	// goroutine without a lock: a slot is replaced whole, atomically, and a
	// lookup checks the word, so a collision or a race costs only a miss.
	// It changes no result, only their speed, and holds at most
	// stemCacheSize short words.
	stemCache [stemCacheSize]atomic.Pointer[stemEntry]
	stemSeed  = maphash.MakeSeed()
)

// stem returns the Porter2 stem of the folded word w.
func stem(w string) string {
	slot := &stemCache[maphash.String(stemSeed, w)%stemCacheSize]
	if e := slot.Load(); e != nil && e.word == w {
		return e.stem
	}
	st := english.Stem(w, true)
	if len(w) <= 32 { // long words are rare and would bloat the cache
		// Clone both: w and, when unchanged, st are substrings of a text
		// the cache must not keep alive.
		slot.Store(&stemEntry{word: strings.Clone(w), stem: strings.Clone(st)})
	}
	return st
}

// trimPossessive removes a final "'s".
func trimPossessive(t string) string {
	if len(t) > 2 && strings.HasSuffix(t, "'s") {
		return t[:len(t)-2]
	}
	return t
}

// appendTerm appends t cut to maxTermBytes, unless it is empty.
func appendTerm(dst []string, t string) []string {
	if t = clipTerm(t); t == "" {
		return dst
	}
	return append(dst, t)
}

// clipTerm cuts t to at most maxTermBytes, at a rune boundary.
func clipTerm(t string) string {
	if len(t) <= maxTermBytes {
		return t
	}
	n := maxTermBytes
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n]
}

// foldToken drops the format characters of a token holding non-ASCII runes,
// writes its apostrophes as ASCII ones, and folds its case.
func foldToken(tok string) string {
	t := tok
	if strings.IndexFunc(tok, rewritten) >= 0 {
		var b strings.Builder
		b.Grow(len(tok))
		for _, r := range tok {
			switch {
			case isApostrophe(r):
				r = '\''
			case runeClass(r) == clsFormat:
				continue
			}
			b.WriteRune(r)
		}
		t = b.String()
	}
	if isASCII(t) {
		return strings.ToLower(t)
	}
	return fold(t)
}

// rewritten reports whether foldToken drops or replaces r.
func rewritten(r rune) bool {
	return r >= utf8.RuneSelf && (isApostrophe(r) || runeClass(r) == clsFormat)
}

// folders holds case folders: a cases.Caser keeps state and must not be
// shared between goroutines.
var folders = sync.Pool{New: func() any {
	c := cases.Fold()
	return &c
}}

// fold applies full Unicode case folding ("Straße" to "strasse"), then
// lower-cases, then recomposes to NFC, since folding can decompose ("ǰ" to
// "j" and a combining caron). The lower-casing is for Cherokee, the one
// script that folds to upper case: x/text v0.28.0 folds each case of it to
// the other, so folding alone would not give the same term twice.
func fold(s string) string {
	c := folders.Get().(*cases.Caser)
	s = c.String(s)
	folders.Put(c)
	return norm.NFC.String(strings.ToLower(s))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
