package memory

import (
	"encoding/json"
	"testing"
	"time"
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
