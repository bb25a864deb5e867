package memory

import "strconv"

// decodeRecordJSON decodes a message record's JSON as json.Marshal writes
// it (the fields of record in order, no white space, no tool calls),
// without reflection: a Recall in a busy session decodes its window's
// messages, and the rolling summary the messages that left it. It reports
// false for anything else (tool calls, a field it does not know, white
// space, a repeated field, null, an escape it does not decode, invalid
// UTF-8), and the caller then decodes with encoding/json. When it reports
// true, r is what json.Unmarshal gives (FuzzDecodeRecordJSON).
func decodeRecordJSON(s string) (r record, ok bool) {
	d := jsonScanner{s: s}
	ok = d.object(recordJSONField, func(f int) (ok bool) {
		switch f {
		case 0:
			var role string
			role, ok = d.str()
			r.Role = Role(role)
		case 1:
			r.Content, ok = d.str()
		case 2:
			r.Name, ok = d.str()
		case 3:
			r.ToolCallID, ok = d.str()
		case 4:
			r.Time, ok = d.int64()
		case 5:
			r.Metadata, ok = d.strMap()
		case 6:
			var k int64
			k, ok = d.int64()
			r.Tokens = int(k)
			ok = ok && int64(r.Tokens) == k
		case 7:
			r.Encoding, ok = d.str()
		}
		return ok
	})
	if !ok {
		return record{}, false
	}
	return r, true
}

// recordJSONField returns the index of a record JSON key it decodes, or
// -1 (tool calls, "tc", included: encoding/json decodes those).
func recordJSONField(key string) int {
	switch key {
	case "r":
		return 0
	case "c":
		return 1
	case "n":
		return 2
	case "tid":
		return 3
	case "t":
		return 4
	case "m":
		return 5
	case "k":
		return 6
	case "e":
		return 7
	}
	return -1
}

// int64 reads a JSON integer, -?(0|[1-9][0-9]*), that fits in an int64.
func (d *jsonScanner) int64() (int64, bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.digits() == 0:
		return 0, false
	}
	if d.i < len(d.s) && (d.s[d.i] == '.' || d.s[d.i] == 'e' || d.s[d.i] == 'E' || (d.s[d.i] >= '0' && d.s[d.i] <= '9')) {
		return 0, false // a fraction, an exponent, or a leading zero
	}
	n, err := strconv.ParseInt(d.s[start:d.i], 10, 64)
	return n, err == nil
}
