package memory

import (
	"encoding/json"
	"errors"
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

func FuzzDecodeSessionInfo(f *testing.F) {
	f.Add(encodeSessionInfo(&sessionInfo{Created: 1, Updated: 2, Messages: 3, Last: make([]byte, 16)}))
	f.Add([]byte{recordVersion, 'n', 'u', 'l', 'l'})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSessionInfo(b)
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

func FuzzDecodeMemory(f *testing.F) {
	m := Memory{ID: "01J0000000000000000000000A", Kind: KindPreference, Text: "tea", Tags: []string{"a"}, Importance: 0.5}
	f.Add(memoryRecord(&m, nil).Metadata[memoryMetaKey])
	f.Add(`{"kind":"fact","text":"x","expires_at":"2030-01-01T00:00:00Z"}`)
	f.Fuzz(func(t *testing.T, meta string) {
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
	})
}
