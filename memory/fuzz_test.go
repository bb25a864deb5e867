package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// FuzzDecodeRecord feeds arbitrary bytes to the message decoder: it must
// return a record or ErrCorrupt, never panic, and a decoded record must
// encode back to one that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	for _, m := range []Message{
		user("hello"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}},
		{Role: RoleTool, ToolCallID: "c", Content: "ok", Metadata: map[string]string{"k": "v"}, Time: time.Unix(1700000000, 5)},
	} {
		b, err := encodeRecord(&m, DefaultEncoding)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{recordVersion})
	f.Add([]byte{recordVersion, '{', '}'})
	f.Add([]byte{2, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		enc, err := decodeRecord(b, &m)
		if err != nil {
			return
		}
		b2, err := encodeRecord(&m, enc)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var m2 Message
		if _, err := decodeRecord(b2, &m2); err != nil {
			t.Fatalf("decode of re-encoded record: %v", err)
		}
		j1, _ := json.Marshal(m)
		j2, _ := json.Marshal(m2)
		if string(j1) != string(j2) {
			t.Fatalf("round trip changed the message:\n%s\n%s", j1, j2)
		}
	})
}

// FuzzDecodeSessionInfo: session records decode to a value or an error
// wrapping ErrCorrupt, and a decoded value round-trips: encoding it and
// decoding again gives an equal value and the same bytes. A value built
// from the fuzzer's numbers decodes from its encoding to itself.
func FuzzDecodeSessionInfo(f *testing.F) {
	f.Add(encodeSessionInfo(&sessionInfo{Created: 1, Updated: 2, Messages: 3, Last: make([]byte, 16)}), int64(1), int64(2), 3, []byte{1, 2})
	f.Add(encodeSessionInfo(&sessionInfo{}), int64(0), int64(0), 0, []byte(nil))
	f.Add([]byte{recordVersion, 'n', 'u', 'l', 'l'}, int64(-1), int64(1<<62), -5, []byte{})
	f.Add([]byte(`\x01{"c":-1,"u":9007199254740993,"n":-600,"l":"AAEC"}`), int64(9007199254740993), int64(0), 1<<40, make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte, created, updated int64, n int, last []byte) {
		v := &sessionInfo{Created: created, Updated: updated, Messages: n, Last: last}
		if got, err := decodeSessionInfo(encodeSessionInfo(v)); err != nil || got.Created != created ||
			got.Updated != updated || got.Messages != n || !bytes.Equal(got.Last, last) {
			t.Fatalf("%+v encodes and decodes to %+v, %v", v, got, err)
		}
		si, err := decodeSessionInfo(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc := encodeSessionInfo(si)
		again, err := decodeSessionInfo(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded %+v: %v", si, err)
		}
		if !reflect.DeepEqual(again, si) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", si, again)
		}
		if enc2 := encodeSessionInfo(again); !bytes.Equal(enc2, enc) {
			t.Fatalf("encode is not stable:\n%s\n%s", enc, enc2)
		}
	})
}

func FuzzDecodeSummary(f *testing.F) {
	f.Add(encodeSummary(&storedSummary{Text: "user: hi", Through: make([]byte, 16), Updated: 7}))
	f.Add([]byte{recordVersion, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := decodeSummary(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := decodeSummary(encodeSummary(&sum))
		if err != nil || again.Text != sum.Text || string(again.Through) != string(sum.Through) {
			t.Fatalf("round trip: %+v, %v", again, err)
		}
	})
}

// FuzzDecodeMemory: a memory's metadata decodes to a memory or an error
// wrapping ErrCorrupt; a decoded memory takes the record's id, and storing
// it again (memoryRecord) and decoding gives an equal memory and the same
// metadata bytes.
func FuzzDecodeMemory(f *testing.F) {
	m := Memory{ID: "01J0000000000000000000000A", Kind: KindPreference, Text: "tea", Tags: []string{"a"}, Importance: 0.5}
	f.Add(memoryRecord(&m, nil).Metadata[memoryMetaKey])
	full := Memory{
		Kind: KindEpisode, Text: "booked a flight", Tags: []string{"travel", "ü"},
		Metadata: map[string]string{"k": "v"}, Source: []string{"m1"}, Agent: "planner",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600)), ExpiresAt: time.Unix(1900000000, 0).UTC(),
		Importance: 0.25, Supersedes: "old", SupersededBy: "new",
	}
	f.Add(memoryRecord(&full, nil).Metadata[memoryMetaKey])
	f.Add(`{"kind":"fact","text":"x","expires_at":"2030-01-01T00:00:00Z"}`)
	f.Add(`{"id":"other","created_at":"9999-12-31T23:59:59.999999999-23:59"}`)
	f.Fuzz(func(t *testing.T, meta string) {
		// A memory with every field set, its strings from the input,
		// decodes from its record to itself.
		text := strings.ToValidUTF8(meta, "?")
		v := full
		v.ID, v.Text, v.Tags, v.Metadata, v.Agent = "id", text, []string{text}, map[string]string{text: text}, text
		vj, _ := json.Marshal(v)
		if back, err := decodeMemory(memoryRecord(&v, nil)); err != nil {
			t.Fatalf("decode a stored %s: %v", vj, err)
		} else if bj, _ := json.Marshal(back); string(bj) != string(vj) {
			t.Fatalf("stored and decoded:\n%s\nwant\n%s", bj, vj)
		}

		got, err := decodeMemory(engine.Record{ID: "id", Metadata: map[string]string{memoryMetaKey: meta}})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if got.ID != "id" {
			t.Fatalf("id %q", got.ID)
		}
		rec := memoryRecord(&got, nil)
		if rec.ID != "id" || rec.Text != got.Text || !rec.Time.Equal(got.CreatedAt) || !rec.ExpiresAt.Equal(got.ExpiresAt) {
			t.Fatalf("record of %+v: %+v", got, rec)
		}
		again, err := decodeMemory(rec)
		if err != nil {
			t.Fatalf("decode of a re-stored memory %+v: %v", got, err)
		}
		j1, _ := json.Marshal(got)
		j2, _ := json.Marshal(again)
		if string(j1) != string(j2) {
			t.Fatalf("round trip changed the memory:\n%s\n%s", j1, j2)
		}
		if meta2 := memoryRecord(&again, nil).Metadata[memoryMetaKey]; meta2 != rec.Metadata[memoryMetaKey] {
			t.Fatalf("re-stored metadata is not stable:\n%s\n%s", rec.Metadata[memoryMetaKey], meta2)
		}
	})
}
