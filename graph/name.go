package graph

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxNameLength bounds entity names, aliases and predicates, in bytes.
const MaxNameLength = 512

// Fold returns the canonical form of a name: Unicode case-folded, NFC
// normalized, with leading and trailing white space removed and inner runs
// of white space collapsed to one space. Two names are the same entity (or
// predicate) exactly when their folded forms are equal.
func Fold(name string) string {
	if s, ok := foldASCII(name); ok {
		return s
	}
	s := strings.Join(strings.Fields(name), " ")
	return norm.NFC.String(cases.Fold().String(s))
}

// foldASCII folds an ASCII name without allocating when it is already
// canonical. It reports false for names with non-ASCII bytes.
func foldASCII(name string) (string, bool) {
	canonical := true
	space := true // at the start, a space would be leading
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= utf8.RuneSelf:
			return "", false
		case 'A' <= c && c <= 'Z':
			canonical = false
		case isASCIISpace(c):
			if space || c != ' ' {
				canonical = false
			}
		}
		space = isASCIISpace(c)
	}
	if space && len(name) > 0 {
		canonical = false
	}
	if canonical {
		return name, true
	}
	b := make([]byte, 0, len(name))
	pending := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isASCIISpace(c) {
			pending = len(b) > 0
			continue
		}
		if pending {
			b = append(b, ' ')
			pending = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b), true
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// displayName trims a name for display; the first spelling of an entity is
// kept this way.
func displayName(name string) string { return strings.TrimSpace(name) }

// checkName validates a name and returns its display and folded forms.
// White space other than the ASCII space is allowed (it folds away), other
// control characters are not, so that folded names never hold the 0x00
// that separates key components.
// ValidName reports whether name is usable as an entity name, alias or
// predicate: the rule every write of the graph checks (non-empty once
// trimmed, at most [MaxNameLength] bytes of UTF-8, no control characters).
func ValidName(name string) bool {
	_, _, err := checkName("name", name)
	return err == nil
}

func checkName(what, name string) (display, folded string, err error) {
	display = displayName(name)
	switch {
	case display == "":
		return "", "", fmt.Errorf("%w: empty %s", ErrInvalidName, what)
	case len(display) > MaxNameLength:
		return "", "", fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalidName, what, len(display), MaxNameLength)
	case !utf8.ValidString(display):
		return "", "", fmt.Errorf("%w: %s is not UTF-8", ErrInvalidName, what)
	}
	for _, r := range display {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "", "", fmt.Errorf("%w: %s %q holds control character %U", ErrInvalidName, what, display, r)
		}
	}
	folded = Fold(display)
	if len(folded) > 2*MaxNameLength {
		// Folding can grow a string (ß → ss); bound the key all the same.
		return "", "", fmt.Errorf("%w: %s folds to %d bytes", ErrInvalidName, what, len(folded))
	}
	return display, folded, nil
}
