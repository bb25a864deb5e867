package transfer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeLine: any input decodes or fails without panicking, and a
// line that decodes encodes back to a line that decodes to the same record.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","user":"alice","session":"s","id":"01JH0000000000000000000001","role":"assistant","tool_calls":[{"id":"c","name":"f","arguments":{"a":1}}],"time":"2026-01-01T00:00:00Z"}`,
		`{"type":"memory","user":"alice","kind":"preference","text":"email","tags":["x"],"metadata":{"k":"v"},"created_at":"2026-01-01T00:00:00Z","superseded_by":"01JH0000000000000000000002"}`,
		`{"role":"tool","tool_call_id":"c","session":"s","content":"r"}`,
		`{"text":"shared"}`, `{"type":"fact"}`, `null`, `[]`, `{"role":1}`, `{"type":"memory","text":"x"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeLine(b)
		if err != nil {
			return
		}
		var again []byte
		if r.msg != nil {
			again, err = json.Marshal(r.msg)
		} else {
			again, err = json.Marshal(r.mem)
		}
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		r2, err := decodeLine(again)
		if err != nil {
			t.Fatalf("re-encoded line %s does not decode: %v", again, err)
		}
		var third []byte
		if r2.msg != nil {
			third, _ = json.Marshal(r2.msg)
		} else {
			third, _ = json.Marshal(r2.mem)
		}
		if !bytes.Equal(again, third) {
			t.Fatalf("not stable:\n%s\n%s", again, third)
		}
	})
}

// FuzzReadHeader: any opening of an N-Quads file gives an owner or an
// error, never a panic; a header it accepts names a valid user.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{"# engram:user \"alice\"\n<a> <b> <c> .\n", "# engram:shared\n", "#\n\n# engram:user \"\\u00e9\"", "# engram:user"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := readHeader(strings.NewReader(s))
		if err != nil {
			return
		}
		if o.known && !o.shared && checkID("user", o.user) != nil {
			t.Fatalf("accepted a bad user %q", o.user)
		}
	})
}
