package memory

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	unorm "golang.org/x/text/unicode/norm"
)

// normalized is a text in the form the detectors match, with the way back
// to the original's bytes: NFKC (full-width "４１１１" is "4111", a
// no-break space a space), every Unicode space as ' ', every dash and the
// minus sign as '-', and format characters (zero-width spaces, joiners,
// soft hyphens, direction marks) dropped.
type normalized struct {
	text string
	// segs maps text back to the original, one entry per normalisation
	// segment in order; nil when text is the original.
	segs []normSeg
}

// normSeg is one segment: it starts at byte n of the normalised text and
// came from the original's bytes [o, oEnd).
type normSeg struct{ n, o, oEnd int }

func normalize(s string) normalized {
	if isASCII(s) { // NFKC and the mappings leave ASCII as it is
		return normalized{text: s}
	}
	var b strings.Builder
	b.Grow(len(s))
	segs := make([]normSeg, 0, len(s)/2)
	var it unorm.Iter
	it.InitString(unorm.NFKC, s)
	for !it.Done() {
		o := it.Pos()
		seg := it.Next()
		segs = append(segs, normSeg{n: b.Len(), o: o, oEnd: it.Pos()})
		for len(seg) > 0 {
			r, size := utf8.DecodeRune(seg)
			switch {
			case r == utf8.RuneError && size == 1:
				b.WriteByte(seg[0]) // invalid UTF-8 stays as it is
			case unicode.Is(unicode.Zs, r):
				b.WriteByte(' ')
			case unicode.Is(unicode.Pd, r) || r == '\u2212':
				b.WriteByte('-')
			case unicode.Is(unicode.Cf, r):
			default:
				b.Write(seg[:size])
			}
			seg = seg[size:]
		}
	}
	return normalized{text: b.String(), segs: segs}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// span returns the original bytes of the normalised text[start:end]: from
// the start of the segment holding start to the end of the one holding
// end-1, so a find never splits a character of the original.
func (n *normalized) span(start, end int) (int, int) {
	if n.segs == nil {
		return start, end
	}
	// The last segment starting at or before i holds i: segments dropped
	// whole (a zero-width space) start where the next one does and lose.
	at := func(i int) normSeg {
		k := sort.Search(len(n.segs), func(k int) bool { return n.segs[k].n > i })
		return n.segs[k-1]
	}
	return at(start).o, at(end - 1).oEnd
}
