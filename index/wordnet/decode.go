package wordnet

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The table format, as internal/wnconv writes it (all integers unsigned
// varints, strings front coded: shared prefix length, suffix length,
// suffix bytes, in strictly ascending order):
//
//	magic "EWN\x00", version byte 1
//	words: count, strings
//	synsets: count, then each: member count, word ids; hypernym count, synset ids
//	senses, for nouns then verbs: lemma count, then each: word id minus
//	    the previous one plus one (ascending), sense count, then each
//	    sense: synset id, tag count
//	exceptions, for nouns then verbs: forms (count, strings), then for
//	    each form: base count, word ids
const (
	magic   = "EWN\x00"
	version = 1
	// maxWordLen bounds a word's length in bytes: WordNet's longest
	// lemma is under 100. Without it, words that each repeat all of the
	// previous one would make a small input decode to a huge arena.
	maxWordLen = 255
)

// decoder reads the table format, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items each taking at least one byte, so a count
// beyond the bytes left is corrupt rather than a huge allocation.
func (d *decoder) count(what string) int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("%s count %d exceeds the %d bytes left", what, n, len(d.b))
		return 0
	}
	return int(n)
}

// id reads an index below limit.
func (d *decoder) id(limit int, what string) uint32 {
	v := d.uvarint()
	if v >= uint64(limit) {
		d.fail("%s %d out of range (%d)", what, v, limit)
		return 0
	}
	return uint32(v)
}

func (d *decoder) strings(what string) []string {
	n := d.count(what)
	// The strings share one arena: one allocation, not one per word.
	ends := make([]int, 0, n)
	var arena []byte
	prev := 0 // start of the previous string in arena
	for range n {
		shared, rest := d.uvarint(), d.uvarint()
		if d.err != nil {
			return nil
		}
		if shared > uint64(len(arena)-prev) || rest > uint64(len(d.b)) || shared+rest > maxWordLen {
			d.fail("%s: bad front coding", what)
			return nil
		}
		start := len(arena)
		arena = append(arena, arena[prev:prev+int(shared)]...)
		arena = append(arena, d.b[:rest]...)
		d.b = d.b[rest:]
		s, p := arena[start:], arena[prev:start]
		if len(s) == 0 || len(ends) > 0 && string(s) <= string(p) {
			d.fail("%s: %q is empty or out of order", what, s)
			return nil
		}
		ends = append(ends, len(arena))
		prev = start
	}
	all := string(arena)
	out := make([]string, len(ends))
	start := 0
	for i, e := range ends {
		out[i] = all[start:e]
		start = e
	}
	return out
}

// Decode decodes an uncompressed table, the format internal/wnconv writes
// (the embedded wordnet.bin is that format compressed with DEFLATE; [Load]
// decodes it). Invalid input returns an error wrapping [ErrCorrupt]. The
// table keeps no reference to b.
func Decode(b []byte) (*Table, error) {
	if len(b) < len(magic)+1 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic number", ErrCorrupt)
	}
	if b[len(magic)] != version {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, b[len(magic)])
	}
	d := &decoder{b: b[len(magic)+1:]}
	t := &Table{}
	t.words = d.strings("words")
	for _, w := range t.words {
		if strings.ToLower(w) != w {
			d.fail("word %q is not lower-case", w)
			break
		}
	}
	nw := len(t.words)
	ns := d.count("synsets")
	t.memOff = make([]uint32, 1, ns+1)
	t.hypOff = make([]uint32, 1, ns+1)
	for range ns {
		for range d.count("members") {
			t.mem = append(t.mem, d.id(nw, "member"))
		}
		t.memOff = append(t.memOff, uint32(len(t.mem)))
		for range d.count("hypernyms") {
			t.hyp = append(t.hyp, Synset(d.id(ns, "hypernym")))
		}
		t.hypOff = append(t.hypOff, uint32(len(t.hyp)))
		if d.err != nil {
			return nil, d.err
		}
	}
	for p := range t.pos {
		pt := &t.pos[p]
		n := d.count("lemmas")
		pt.lemmas = make([]uint32, 0, n)
		pt.offs = make([]uint32, 1, n+1)
		next := uint64(0) // the smallest word id the next lemma may have
		for range n {
			delta := d.uvarint()
			if delta == 0 || delta > uint64(nw) || next+delta-1 >= uint64(nw) {
				d.fail("lemma id out of order or range")
				return nil, d.err
			}
			id := next + delta - 1
			next = id + 1
			pt.lemmas = append(pt.lemmas, uint32(id))
			k := d.count("senses")
			if k == 0 {
				d.fail("lemma %q has no sense", t.words[id])
			}
			for range k {
				s := Synset(d.id(ns, "sense synset"))
				c := d.uvarint()
				if c > 1<<32-1 {
					d.fail("tag count %d too large", c)
				}
				pt.senses = append(pt.senses, Sense{Synset: s, Count: uint32(c)})
			}
			pt.offs = append(pt.offs, uint32(len(pt.senses)))
			if d.err != nil {
				return nil, d.err
			}
		}
	}
	for p := range t.pos {
		pt := &t.pos[p]
		pt.infl = d.strings("exceptions")
		pt.baseOf = make([]uint32, 1, len(pt.infl)+1)
		for range pt.infl {
			k := d.count("bases")
			if k == 0 {
				d.fail("exception without a base")
			}
			for range k {
				pt.bases = append(pt.bases, d.id(nw, "base"))
			}
			pt.baseOf = append(pt.baseOf, uint32(len(pt.bases)))
			if d.err != nil {
				return nil, d.err
			}
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	return t, nil
}
