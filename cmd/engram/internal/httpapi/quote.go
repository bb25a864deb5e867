package httpapi

import (
	"strconv"
	"strings"
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

// maxMessage bounds an error message however it was made: messages of other
// packages quote what they were given with %q, which shortQuotes shortens,
// and anything else long is cut here.
const maxMessage = 1000

// boundMessage returns msg with every Go string literal in it longer than
// maxQuoted cut as quote cuts it, and the whole cut to maxMessage bytes.
// It bounds the messages of errors the store returns, which name the bad
// value in full (an unknown kind of 3 MiB).
func boundMessage(msg string) string {
	if len(msg) <= maxQuoted {
		return msg
	}
	var b strings.Builder
	for len(msg) > 0 {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			break
		}
		b.WriteString(msg[:i])
		msg = msg[i:]
		lit, err := strconv.QuotedPrefix(msg)
		if err != nil {
			b.WriteByte('"')
			msg = msg[1:]
			continue
		}
		if s, err := strconv.Unquote(lit); err == nil && len(lit) > maxQuoted+2 {
			b.WriteString(quote(s))
		} else {
			b.WriteString(lit)
		}
		msg = msg[len(lit):]
	}
	out := b.String()
	if len(out) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "... (cut)"
	}
	return out
}
