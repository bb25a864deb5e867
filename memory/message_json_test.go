package memory

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeRecordJSON checks the fast decoder of message records against
// encoding/json: whatever it takes decodes the same, and it takes every
// record without tool calls that encodeRecord writes.
func FuzzDecodeRecordJSON(f *testing.F) {
	full := Message{Role: RoleUser, Content: "booked a \"flight\" <to> Lisbon & back\n\tü 中 🙂 \u2028", Name: "alice",
		Metadata: map[string]string{"k": "v", "a\\b": "x/y"}, Tokens: 42}
	for _, m := range []Message{full, {Role: RoleTool, Content: "ok", ToolCallID: "call-1"}, {Role: RoleAssistant}} {
		b, err := encodeRecord(&m, "o200k_base")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b[1:]))
	}
	f.Add(`{"r":"user","t":-1,"k":0,"e":""}`)
	f.Add(`{"r":"user","t":1.5,"k":0,"e":""}`)
	f.Add(`{"r":"user","t":01,"k":0,"e":""}`)
	f.Add(`{"r":"user","t":9223372036854775808,"k":0,"e":""}`)
	f.Add(`{"r":"user","tc":[{"id":"a","name":"f"}],"t":0,"k":0,"e":""}`)
	f.Add(`{"r":"user","r":"tool"}`)
	f.Add(`{"R":"user"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, ok := decodeRecordJSON(s); ok {
			var want record
			if err := json.Unmarshal([]byte(s), &want); err != nil {
				t.Fatalf("decodeRecordJSON took %q, which json.Unmarshal refuses: %v", s, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\n got %#v\nwant %#v", s, got, want)
			}
		}
		// A message with the input as its strings is taken.
		text := strings.ToValidUTF8(s, "?")
		m := full
		m.Content, m.Name, m.Metadata, m.Tokens = text, text, map[string]string{text: text}, len(s)
		b, err := encodeRecord(&m, text)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeRecordJSON(string(b[1:]))
		if !ok {
			t.Fatalf("decodeRecordJSON refused encodeRecord's %s", b[1:])
		}
		var want record
		if err := json.Unmarshal(b[1:], &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %#v\nwant %#v (%v)", b[1:], got, want, err)
		}
	})
}

// BenchmarkDecodeRecord decodes a typical message record (a user turn of
// about 200 bytes) with encoding/json and with the fast decoder, in one
// run.
func BenchmarkDecodeRecord(b *testing.B) {
	m := Message{Role: RoleUser, Content: strings.Repeat("we booked the flight to Lisbon for the workshop ", 4), Tokens: 45}
	enc, err := encodeRecord(&m, "o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r record
			if err := json.Unmarshal(enc[1:], &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeRecordJSON(string(enc[1:])); !ok {
				b.Fatal("refused")
			}
		}
	})
}
