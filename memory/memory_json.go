package memory

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// decodeMemoryJSON decodes the JSON of a memory record's memoryMetaKey as
// json.Marshal writes it (the fields of Memory in order, no white space),
// without reflection: encoding/json took a tenth of a Recall, which
// decodes the memories it may show. It reports false for anything else (a
// field it does not know, white space, a repeated field, null, an escape
// it does not decode, invalid UTF-8), and the caller then decodes with
// encoding/json. When it reports true, m is what json.Unmarshal gives
// (FuzzDecodeMemoryJSON).
func decodeMemoryJSON(s string) (m Memory, ok bool) {
	d := jsonScanner{s: s}
	ok = d.object(memoryJSONField, func(f int) (ok bool) {
		switch f {
		case 0:
			m.ID, ok = d.str()
		case 1:
			var k string
			k, ok = d.str()
			m.Kind = Kind(k)
		case 2:
			m.Text, ok = d.str()
		case 3:
			m.Tags, ok = d.strs()
		case 4:
			m.Metadata, ok = d.strMap()
		case 5:
			m.Source, ok = d.strs()
		case 6:
			m.Agent, ok = d.str()
		case 7:
			m.CreatedAt, ok = d.time()
		case 8:
			m.ExpiresAt, ok = d.time()
		case 9:
			m.Importance, ok = d.number()
		case 10:
			m.Supersedes, ok = d.str()
		case 11:
			m.SupersededBy, ok = d.str()
		}
		return ok
	})
	if !ok {
		return Memory{}, false
	}
	return m, true
}

// memoryJSONField returns the index of a Memory JSON key, or -1. The keys
// must match exactly: encoding/json also takes other cases ("Kind").
func memoryJSONField(key string) int {
	switch key {
	case "id":
		return 0
	case "kind":
		return 1
	case "text":
		return 2
	case "tags":
		return 3
	case "metadata":
		return 4
	case "source":
		return 5
	case "agent":
		return 6
	case "created_at":
		return 7
	case "expires_at":
		return 8
	case "importance":
		return 9
	case "supersedes":
		return 10
	case "superseded_by":
		return 11
	}
	return -1
}

// jsonScanner reads the JSON that decodeMemoryJSON accepts.
type jsonScanner struct {
	s string
	i int
}

func (d *jsonScanner) end() bool { return d.i == len(d.s) }

// object reads a whole input that is one object: for each key, field gives
// its number (below 32; -1 for a key the caller does not take) and value
// reads its value. It reports false for an unknown or repeated key, a value
// that value refuses, or anything after the object.
func (d *jsonScanner) object(field func(key string) int, value func(f int) bool) bool {
	if !d.byte('{') {
		return false
	}
	if d.byte('}') {
		return d.end()
	}
	var seen uint32
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return false
		}
		f := field(key)
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if !value(f) {
			return false
		}
		if d.byte('}') {
			return d.end()
		}
		if !d.byte(',') {
			return false
		}
	}
}

func (d *jsonScanner) byte(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string: its bytes valid UTF-8 with no control characters,
// and its escapes those of JSON but a \u escape of a surrogate.
func (d *jsonScanner) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			out := d.s[start:d.i]
			d.i++
			if !ascii && !utf8.ValidString(out) {
				return "", false
			}
			return out, true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped finishes a string that has an escape, from its start.
func (d *jsonScanner) escaped(start int) (string, bool) {
	var b strings.Builder
	b.WriteString(d.s[start:d.i])
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			out := b.String()
			if !utf8.ValidString(out) {
				return "", false
			}
			return out, true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			return "", false
		}
		e := d.s[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if d.i+4 > len(d.s) {
				return "", false
			}
			r, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
			if err != nil || d.s[d.i] == '+' || (r >= 0xd800 && r < 0xe000) {
				return "", false
			}
			b.WriteRune(rune(r))
			d.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

// strs reads a non-empty array of strings.
func (d *jsonScanner) strs() ([]string, bool) {
	if !d.byte('[') {
		return nil, false
	}
	var out []string
	for {
		v, ok := d.str()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if d.byte(']') {
			return out, true
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}

// strMap reads a non-empty object of strings; a repeated key keeps its
// last value, as encoding/json does.
func (d *jsonScanner) strMap() (map[string]string, bool) {
	if !d.byte('{') {
		return nil, false
	}
	out := map[string]string{}
	for {
		k, ok := d.str()
		if !ok || !d.byte(':') {
			return nil, false
		}
		v, ok := d.str()
		if !ok {
			return nil, false
		}
		out[k] = v
		if d.byte('}') {
			return out, true
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}

// time reads a time as time.Time's UnmarshalJSON does, which it calls.
func (d *jsonScanner) time() (time.Time, bool) {
	start := d.i
	if _, ok := d.str(); !ok {
		return time.Time{}, false
	}
	var t time.Time
	if err := t.UnmarshalJSON([]byte(d.s[start:d.i])); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jsonScanner) number() (float64, bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.digits() == 0:
		return 0, false
	}
	if d.byte('.') && d.digits() == 0 {
		return 0, false
	}
	if d.byte('e') || d.byte('E') {
		if !d.byte('+') {
			d.byte('-')
		}
		if d.digits() == 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	return f, err == nil
}

func (d *jsonScanner) digits() int {
	n := 0
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}
