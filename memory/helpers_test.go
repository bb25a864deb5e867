package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var bg = context.Background()

func openMem(t testing.TB, opts *Options) *Store {
	t.Helper()
	s, err := Open("", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var testScope = Scope{Tenant: "acme", User: "alice", Session: "s1"}

func sys(c string) Message  { return Message{Role: RoleSystem, Content: c} }
func user(c string) Message { return Message{Role: RoleUser, Content: c} }
func asst(c string) Message { return Message{Role: RoleAssistant, Content: c} }
func call(ids ...string) Message {
	m := Message{Role: RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "lookup", Arguments: json.RawMessage(`{"q":"` + id + `"}`)})
	}
	return m
}
func result(id string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: "result " + id}
}

// label renders messages compactly for comparisons: "S:x U:y A:z C:id T:id".
func label(msgs []Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case m.Role == RoleSystem:
			fmt.Fprintf(&b, "S:%s", m.Content)
		case m.Role == RoleUser:
			fmt.Fprintf(&b, "U:%s", m.Content)
		case len(m.ToolCalls) > 0:
			ids := make([]string, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				ids[j] = c.ID
			}
			fmt.Fprintf(&b, "C:%s", strings.Join(ids, ","))
		case m.Role == RoleAssistant:
			fmt.Fprintf(&b, "A:%s", m.Content)
		case m.Role == RoleTool:
			fmt.Fprintf(&b, "T:%s", m.ToolCallID)
		}
	}
	return b.String()
}

func mustAppend(t testing.TB, sess *Session, msgs ...Message) {
	t.Helper()
	if err := sess.Append(bg, msgs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}
