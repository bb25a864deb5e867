package httpapi

import (
	"strconv"
	"unicode/utf8"
)

// maxQuoted is how much of a client's value an error message quotes: enough
// to recognise it, never the whole of a 3 MiB field (issue 26: a bad time
// of 3 MiB came back in a 6 MB error).
const maxQuoted = 100

// quote returns s as a Go string literal, as %q does, cut to its first
// maxQuoted bytes (at a character boundary) with the size of the whole
// when it is longer.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
