package memory

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeMemoryJSON: whenever decodeMemoryJSON takes an input, it gives
// what json.Unmarshal gives (which must succeed); and it takes everything
// json.Marshal writes for a memory whose strings are valid UTF-8.
func FuzzDecodeMemoryJSON(f *testing.F) {
	full := Memory{
		ID: "01J0000000000000000000000A", Kind: KindEpisode, Text: "booked a \"flight\" <to> Lisbon & back\n\tü 中 🙂 \u2028",
		Tags: []string{"travel", "ü"}, Metadata: map[string]string{"k": "v", "a\\b": "x/y"}, Source: []string{"m1", "m2"},
		Agent: "planner", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600)), ExpiresAt: time.Unix(1900000000, 0).UTC(),
		Importance: 0.25, Supersedes: "old", SupersededBy: "new",
	}
	for _, m := range []Memory{full, {Kind: KindFact, Text: "x"}, {Text: "\x01\x7f", Importance: 1e-7}, {Importance: 1}} {
		b, _ := json.Marshal(m)
		f.Add(string(b))
	}
	f.Add(`{"kind":"fact","text":"x","expires_at":"2030-01-01T00:00:00Z"}`)
	f.Add(`{"Kind":"fact"}`)
	f.Add(`{"text":"a\u00e9\ud83d\ude00","importance":-0.0e+5}`)
	f.Add(`{"tags":[],"metadata":{},"importance":01}`)
	f.Add(`{"text":"a","text":"b"}`)
	f.Add(`{"metadata":{"k":"1","k":"2"}} `)
	f.Fuzz(func(t *testing.T, s string) {
		if got, ok := decodeMemoryJSON(s); ok {
			var want Memory
			if err := json.Unmarshal([]byte(s), &want); err != nil {
				t.Fatalf("decodeMemoryJSON took %q, which json.Unmarshal refuses: %v", s, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\n got %#v\nwant %#v", s, got, want)
			}
		}
		// A memory with the input as its strings is taken.
		text := strings.ToValidUTF8(s, "?")
		v := full
		v.Text, v.Tags, v.Metadata, v.Agent = text, []string{text}, map[string]string{text: text}, text
		b, _ := json.Marshal(v)
		got, ok := decodeMemoryJSON(string(b))
		if !ok {
			t.Fatalf("decodeMemoryJSON refused json.Marshal's %s", b)
		}
		var want Memory
		if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %#v\nwant %#v (%v)", b, got, want, err)
		}
	})
}
