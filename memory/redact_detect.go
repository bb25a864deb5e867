package memory

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NewRedactor returns the offline default [Redactor]: regular expressions
// (linear time) for e-mail addresses, phone numbers, payment card numbers,
// IBANs, IPv4 and IPv6 addresses, US Social Security numbers and UK
// National Insurance numbers, each confirmed by its check (Luhn, mod 97
// and the country's length, address parsing, the issued ranges) so that
// dates, version numbers, ISBNs, order ids, prices and timestamps are left
// alone. Text is matched in a normalised form (NFKC, so full-width digits
// count; Unicode spaces and dashes as ASCII ones; format characters such
// as zero-width spaces dropped), and each find covers the original bytes.
// It finds data by its shape, not its meaning: a name or a street address
// is not found. docs/redaction.md gives its precision and recall on a
// labelled corpus. Safe for concurrent use.
func NewRedactor() Redactor { return patternRedactor{} }

type patternRedactor struct{}

// A detector finds one shape of one kind of data: its regular expression
// proposes candidates in the normalised text, its edges and context words
// refuse those that are part of something else, and its check confirms
// the rest.
type detector struct {
	kind  string
	re    *regexp.Regexp
	check func(s string) (value string, ok bool)
	edges edges
	// near, when set, must match the text just before a candidate: a bare
	// nine-digit number is a Social Security number only after "SSN".
	near *regexp.Regexp
	// notAfter, when set, must not match the text just before a candidate:
	// "version 1.2.3.4" is not an address.
	notAfter *regexp.Regexp
	// notBefore, when set, must not match the text just after it:
	// "git@github.com:org/repo" is a remote, not an address.
	notBefore *regexp.Regexp
	// shrink lets a candidate that fails be cut at a separator and tried
	// again, longest first: two numbers written side by side are two finds.
	shrink bool
}

// edges says what may touch a find: a number that touches a letter, a
// digit or one of the listed characters is part of a longer token
// ("v1.2.3.4", "ORD-555-123-4567", "2024-01-15T10:20:30").
type edges struct {
	open        bool     // no check: the data delimits itself (an e-mail address)
	left, right string   // characters that may not touch the data
	prefixes    []string // text that may touch the data on the left all the same ("tel:")
}

var (
	numberEdges = edges{left: "_-+/@:", right: "_-+/@:"}
	phoneEdges  = edges{left: "_-+/@:", right: "_-+/@:", prefixes: []string{"tel:", "tel://", "sms:", "callto:", "fax:"}}
	// An address may sit in a URL ("http://10.0.0.1/x", "[::1]:80"), carry
	// a port or a prefix length ("10.0.0.1:8080", "10.1.2.0/24").
	ipv4Edges = edges{left: "_-+:", right: "_-+@"}
	ipv6Edges = edges{left: "_-+@", right: "_-+@:"}
)

// Context words, in the 48 bytes of normalised text before a candidate.
var (
	ssnWords     = regexp.MustCompile(`(?i)(?:\bssn\b|\bss#|\bsocial[ -]?security\b|\bsoc\.? ?sec\b)[^0-9]{0,24}$`)
	versionWords = regexp.MustCompile(`(?i)(?:\bv|\bver|\bversions?|\breleases?d?|\bbuild|\brev(?:ision)?|\bfirmware|\bfw|\bupdate|\bpatch|\bdriver|\bkernel|\bchrome|\bfirefox|\bsafari|\bedge|\bopera|\bos|\bsection|\bsteps?|\bchapter|\bclause|\bparagraph|\bitem|\bOID|§)\.?[ :#/]*(?:to |is |of |from )?$`)
)

// scpPath follows a host in an scp-style remote ("git@host:path").
var scpPath = regexp.MustCompile(`^:[^\s]`)

const contextWindow = 48

// Local part, domain label and top-level domain of an e-mail address, in
// the alphabetic scripts; the local part may be quoted (RFC 5321). The
// repetitions are unbounded on purpose: Go compiles x{0,63} into 63
// copies of x, and its matcher then carries a thread for each on every
// byte (a megabyte of digits took 3.5 s with bounds, see nextStart). Scripts
// written without spaces are left out: in "我的邮箱是zhang@example.cn" the
// address starts at the z.
const (
	emailLetter = `\p{Latin}\p{Greek}\p{Cyrillic}\p{Armenian}\p{Georgian}\p{Hebrew}\p{Arabic}\p{Devanagari}`
	emailLocal  = `(?:"(?:[^"\\\r\n]|\\.){1,64}"|[` + emailLetter + `\p{N}][` + emailLetter + `\p{M}\p{N}._%+\-']*)`
	emailLabel  = `[` + emailLetter + `\p{N}](?:[` + emailLetter + `\p{M}\p{N}\-]*[` + emailLetter + `\p{M}\p{N}])?`
	emailTLD    = `(?:[` + emailLetter + `][` + emailLetter + `\p{M}]{1,23}|(?i:xn--[a-z0-9\-]{2,59}))`
	emailRegexp = emailLocal + `@` + emailLabel + `(?:\.` + emailLabel + `)*\.` + emailTLD
)

// detectors in order of precedence: where two find overlapping data, the
// earlier wins (an e-mail address holding digits is an address, not a
// phone number; an SSN is not taken for a phone number).
var detectors = []detector{
	{kind: PIIEmail, re: regexp.MustCompile(emailRegexp), check: checkEmail, edges: edges{open: true}, notBefore: scpPath},
	{kind: PIIIBAN, re: regexp.MustCompile(`(?i)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?`), check: checkIBAN, edges: numberEdges, shrink: true},
	{kind: PIICard, re: regexp.MustCompile(`[0-9]{4}(?:[ \-]?[0-9]{2,6}){2,4}|[0-9]{13,19}`), check: checkCard, edges: numberEdges, shrink: true},
	{kind: PIISSN, re: regexp.MustCompile(`[0-9]{3}-[0-9]{2}-[0-9]{4}|[0-9]{3} [0-9]{2} [0-9]{4}`), check: checkSSN, edges: numberEdges},
	{kind: PIISSN, re: regexp.MustCompile(`[0-9]{9}`), check: checkSSN, edges: numberEdges, near: ssnWords},
	{kind: PIININumber, re: regexp.MustCompile(`(?i)[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]`), check: checkNINumber, edges: numberEdges},
	{kind: PIIIP, re: regexp.MustCompile(`(?i)(?:[0-9a-f]{0,4}:){2,7}(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9a-f]{1,4})?`), check: checkIPv6, edges: ipv6Edges},
	{kind: PIIIP, re: regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}`), check: checkIPv4, edges: ipv4Edges, notAfter: versionWords},
	{kind: PIIPhone, re: regexp.MustCompile(`(?:\+|00)[1-9][0-9 ().\-]{5,20}[0-9]|1[ .\-]\(?[0-9]{3}\)?[ .\-]?[0-9]{3}[ .\-][0-9]{4}|\(?[0-9]{2,5}\)?[ .\-]?[0-9]{2,8}(?:[ .\-][0-9]{2,4}){0,3}|[0-9]{10,11}`), check: checkPhone, edges: phoneEdges, shrink: true},
}

// Find implements [Redactor].
func (patternRedactor) Find(text string) []PII {
	n := normalize(text)
	f := finder{text: n.text}
	for i := range detectors {
		f.run(&detectors[i])
	}
	if len(f.out) == 0 {
		return nil
	}
	slices.SortFunc(f.out, func(a, b PII) int { return a.Start - b.Start })
	out := f.out[:0]
	last := 0
	for _, p := range f.out {
		p.Start, p.End = n.span(p.Start, p.End)
		if p.Start < last { // two finds in one normalisation segment
			continue
		}
		out = append(out, p)
		last = p.End
	}
	return out
}

// finder runs the detectors over one normalised text.
type finder struct {
	text  string
	taken []bool // bytes already found, allocated at the first find
	out   []PII
}

func (f *finder) run(d *detector) {
	for pos := 0; pos < len(f.text); {
		loc := d.re.FindStringIndex(f.text[pos:])
		if loc == nil {
			return
		}
		start, end := pos+loc[0], pos+loc[1]
		if p, ok := f.accept(d, start, end); ok {
			f.out = append(f.out, p)
			if f.taken == nil {
				f.taken = make([]bool, len(f.text))
			}
			for i := p.Start; i < p.End; i++ {
				f.taken[i] = true
			}
			pos = p.End
			continue
		}
		pos = nextStart(f.text, start)
	}
}

// nextStart returns where to look for data after a refused candidate at
// start: the next position that follows a character that is not part of
// a word or number, since data stands alone. Moving on by one character
// instead would make a megabyte of digits, or of letters before
// "@host:path", cost a regular expression call per byte, each scanning up
// to a candidate's length.
func nextStart(text string, start int) int {
	_, size := utf8.DecodeRuneInString(text[start:])
	i := start + size
	for i < len(text) {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		if !isWordRune(r) && size > 0 {
			break
		}
		_, size = utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return i
}

// accept returns the find the candidate text[start:end] holds: the whole
// of it, or with shrink its longest prefix ending before a separator.
func (f *finder) accept(d *detector, start, end int) (PII, bool) {
	for e := end; e > start; e = prevCut(f.text, start, e) {
		if p, ok := f.try(d, start, e); ok {
			return p, true
		}
		if !d.shrink {
			break
		}
	}
	return PII{}, false
}

func (f *finder) try(d *detector, start, end int) (PII, bool) {
	if !d.edges.open && !standsAlone(f.text, start, end, &d.edges) {
		return PII{}, false
	}
	if f.taken != nil && slices.Contains(f.taken[start:end], true) {
		return PII{}, false
	}
	before := f.text[max(0, start-contextWindow):start]
	after := f.text[end:min(len(f.text), end+contextWindow)]
	if (d.near != nil && !d.near.MatchString(before)) || (d.notAfter != nil && d.notAfter.MatchString(before)) ||
		(d.notBefore != nil && d.notBefore.MatchString(after)) {
		return PII{}, false
	}
	value, ok := d.check(f.text[start:end])
	if !ok {
		return PII{}, false
	}
	return PII{Kind: d.kind, Start: start, End: end, Value: value}, true
}

// prevCut returns the end of the longest shorter candidate within
// text[start:end]: the last separator whose left neighbour is a letter or
// digit, or start when there is none.
func prevCut(text string, start, end int) int {
	for i := end - 1; i > start; i-- {
		if strings.IndexByte(" -./", text[i]) >= 0 && isAlnumByte(text[i-1]) {
			return i
		}
	}
	return start
}

func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// standsAlone reports whether text[start:end] is not part of a longer
// word, number or dotted/dashed token: "v1.2.3.4", "ORD-1234-5678-9012"
// and "2024-01-15T10:20:30" hold no data.
func standsAlone(text string, start, end int, e *edges) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:start])
		if !leftAllowed(text[:start], e) && (isWordRune(r) || strings.ContainsRune(e.left, r)) {
			return false
		}
		if r == '.' && start > 1 {
			if r2, _ := utf8.DecodeLastRuneInString(text[:start-1]); isWordRune(r2) {
				return false
			}
		}
	}
	if end < len(text) {
		r, _ := utf8.DecodeRuneInString(text[end:])
		if isWordRune(r) || strings.ContainsRune(e.right, r) {
			return false
		}
		if r == '.' && end+1 < len(text) {
			if r2, _ := utf8.DecodeRuneInString(text[end+1:]); isWordRune(r2) {
				return false
			}
		}
	}
	return true
}

// leftAllowed reports whether before ends with one of e's prefixes
// ("call tel:" before a phone number), itself standing alone.
func leftAllowed(before string, e *edges) bool {
	for _, p := range e.prefixes {
		if len(before) >= len(p) && strings.EqualFold(before[len(before)-len(p):], p) {
			rest := before[:len(before)-len(p)]
			r, _ := utf8.DecodeLastRuneInString(rest)
			return rest == "" || !isWordRune(r)
		}
	}
	return false
}

// isWordRune reports whether r continues a word or number. Letters of
// scripts written without spaces (Han, kana, Hangul, Thai) do not: in
// "カード4111 1111 1111 1111です" the number stands alone.
func isWordRune(r rune) bool {
	if unicode.IsDigit(r) {
		return true
	}
	return unicode.IsLetter(r) && !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}
