package bpe

import (
	"unicode"
	"unicode/utf8"
)

// Character classes of the pre-tokenizers' patterns, as regexp2 reads them:
// \p{L}, \p{N}, \p{M} are Go's unicode tables and \s is unicode.IsSpace.
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cS                 // \s
	cNL                // \r or \n
	cUpper             // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
	cLower             // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
)

// asciiClass holds the classes of the ASCII runes.
var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOf(r)
	}
}

func classOf(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= cL
	}
	if unicode.IsNumber(r) {
		c |= cN
	}
	if unicode.IsSpace(r) {
		c |= cS
	}
	if r == '\r' || r == '\n' {
		c |= cNL
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	return c
}

// class returns the classes of the rune at s[i] and its length in bytes;
// at the end of s it returns 0, 0.
func class(s string, i int) (uint8, int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return classOf(r), n
}

// Classes the patterns name by exclusion.
const (
	// notPrefix excludes from [^\r\n\p{L}\p{N}].
	notPrefix = cNL | cL | cN
	// notOther excludes from [^\s\p{L}\p{N}].
	notOther = cS | cL | cN
)

// run returns the end of the longest run from i of runes with a class in
// want.
func run(s string, i int, want uint8) int {
	for {
		c, n := class(s, i)
		if n == 0 || c&want == 0 {
			return i
		}
		i += n
	}
}

// contraction returns the end of one of 's 't 're 've 'm 'll 'd at i, or i.
// Under ignoreCase a letter matches when unicode.ToLower gives it, which
// is how regexp2 compares under (?i).
func contraction(s string, i int, ignoreCase bool) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	letter := func(j int, want rune) (int, bool) {
		if j >= len(s) {
			return j, false
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if r == want || ignoreCase && unicode.ToLower(r) == want {
			return j + n, true
		}
		return j, false
	}
	for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
		j, ok := i+1, true
		for _, want := range c {
			if j, ok = letter(j, want); !ok {
				break
			}
		}
		if ok {
			return j
		}
	}
	return i
}

// space returns the end of the piece that the patterns' white-space
// alternatives, \s*[\r\n]+ (when newlines is set), \s+(?!\S) and \s+, take
// from i, where a run of white space starts.
func space(s string, i int, newlines bool) int {
	end, lastNL, lastStart, runes := i, -1, i, 0
	for {
		c, n := class(s, end)
		if n == 0 || c&cS == 0 {
			break
		}
		if c&cNL != 0 {
			lastNL = end + n
		}
		lastStart = end
		end += n
		runes++
	}
	switch {
	case newlines && lastNL >= 0:
		return lastNL // \s*[\r\n]+ backtracks to the last newline
	case end == len(s) || runes == 1:
		return end // \s+(?!\S) at the end, else \s+
	default:
		return lastStart // \s+(?!\S) leaves the last space to what follows
	}
}

// other returns the end of ` ?[^\s\p{L}\p{N}]+` at i followed by a run of
// the bytes in tail, or i when it does not match.
func other(s string, i int, tail string) int {
	j := i
	if j < len(s) && s[j] == ' ' {
		if c, n := class(s, j+1); n > 0 && c&notOther == 0 {
			j++
		}
	}
	start := j
	for {
		c, n := class(s, j)
		if n == 0 || c&notOther != 0 {
			break
		}
		j += n
	}
	if j == start {
		return i
	}
	for j < len(s) && containsByte(tail, s[j]) {
		j++
	}
	return j
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// nextO200k returns the end of the piece starting at i under o200k_base's
// pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextO200k(s string, i int) int {
	c, n := class(s, i)
	prefixed := c&notPrefix == 0
	// The first alternative, with the optional prefix and then without.
	if prefixed {
		if end, ok := upperLower(s, i+n); ok {
			return contraction(s, end, true)
		}
	}
	if end, ok := upperLower(s, i); ok {
		return contraction(s, end, true)
	}
	// The second: the same, a run of upper first.
	if prefixed {
		if c2, _ := class(s, i+n); c2&cUpper != 0 {
			return upperThenLower(s, i+n)
		}
	}
	if c&cUpper != 0 {
		return upperThenLower(s, i)
	}
	if c&cN != 0 {
		return digits(s, i, 3)
	}
	if end := other(s, i, "\r\n/"); end > i {
		return end
	}
	return space(s, i, true)
}

// upperLower matches [upper]*[lower]+ at i: the greedy run of upper
// backtracks to its last rune that is also lower when no lower follows it.
func upperLower(s string, i int) (int, bool) {
	j, lastLower := i, -1
	for {
		c, n := class(s, j)
		if n == 0 || c&cUpper == 0 {
			if c&cLower != 0 {
				return run(s, j, cLower), true
			}
			return lastLower, lastLower >= 0
		}
		j += n
		if c&cLower != 0 {
			lastLower = j
		}
	}
}

// upperThenLower matches [upper]+[lower]*(?i:'s|...)? at i, where an upper
// rune starts.
func upperThenLower(s string, i int) int {
	j := run(s, run(s, i, cUpper), cLower)
	return contraction(s, j, true)
}

// digits matches \p{N}{1,max} at i, where a digit starts (max 0: no bound).
func digits(s string, i, max int) int {
	runes := 0
	for max == 0 || runes < max {
		c, n := class(s, i)
		if n == 0 || c&cN == 0 {
			break
		}
		i += n
		runes++
	}
	return i
}

// nextCl100k returns the end of the piece starting at i under cl100k_base's
// pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func nextCl100k(s string, i int) int {
	if end := contraction(s, i, true); end > i {
		return end
	}
	c, n := class(s, i)
	if c&notPrefix == 0 {
		if c2, _ := class(s, i+n); c2&cL != 0 {
			return run(s, i+n, cL)
		}
	}
	if c&cL != 0 {
		return run(s, i, cL)
	}
	if c&cN != 0 {
		return digits(s, i, 3)
	}
	if end := other(s, i, "\r\n"); end > i {
		return end
	}
	return space(s, i, true)
}

// nextGPT2 returns the end of the piece starting at i under the pattern of
// p50k_base and r50k_base:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func nextGPT2(s string, i int) int {
	if end := contraction(s, i, false); end > i {
		return end
	}
	j := i
	if s[i] == ' ' {
		j++
	}
	// A space starts ` ?\p{L}+` or ` ?\p{N}+` only with what follows it,
	// being neither itself.
	for _, want := range [...]uint8{cL, cN} {
		if c, _ := class(s, j); c&want != 0 {
			return run(s, j, want)
		}
	}
	if end := other(s, i, ""); end > i {
		return end
	}
	return space(s, i, false)
}
