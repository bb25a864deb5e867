package memory

import (
	"context"
	"errors"
	"testing"
)

// TestFieldPath: the errors of Append and Write name the input field at
// fault by its JSON path, keep their text, and still match their class.
func TestFieldPath(t *testing.T) {
	st, err := Open(t.TempDir(), &Options{Extraction: ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	sc := Scope{Tenant: "t", User: "u", Session: "s"}
	user := Message{Role: RoleUser, Content: "hi"}
	for _, tc := range []struct {
		name  string
		write func() error
		path  string
		class error
		text  string
	}{
		{"role", func() error { return st.Session(sc).Append(ctx, Message{Role: "bogus", Content: "x"}) },
			"messages[0].role", ErrInvalidRole, `append message 0: memory: invalid message: unknown role "bogus"`},
		{"empty content in a batch", func() error {
			var b Batch
			b.Append(sc, user, Message{Role: RoleUser})
			_, err := st.Write(ctx, &b)
			return err
		}, "ops[0].messages[1].content", ErrInvalidMessage, "batch op 0: append message 1: memory: invalid message: empty user message"},
		{"tool call id", func() error {
			return st.Session(sc).Append(ctx, user, Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "f"}, {ID: "", Name: "f"}}})
		}, "messages[1].tool_calls[1].id", ErrInvalidMessage, ""},
		{"orphan tool result", func() error {
			return st.Session(sc).Append(ctx, Message{Role: RoleTool, ToolCallID: "nope", Content: "x"})
		}, "messages[0].tool_call_id", ErrOrphanToolResult, ""},
		{"metadata key", func() error {
			return st.Session(sc).Append(ctx, Message{Role: RoleUser, Content: "x", Metadata: map[string]string{"": "v"}})
		}, "messages[0].metadata", ErrInvalidMessage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if !errors.Is(err, tc.class) {
				t.Fatalf("err = %v, want %v", err, tc.class)
			}
			path, reason := FieldPath(err)
			if path != tc.path || !errors.Is(reason, tc.class) {
				t.Errorf("FieldPath = %q, %v; want %q", path, reason, tc.path)
			}
			if tc.text != "" && err.Error() != tc.text {
				t.Errorf("text = %q, want %q", err.Error(), tc.text)
			}
		})
	}
	if path, reason := FieldPath(ErrNotFound); path != "" || reason != ErrNotFound {
		t.Errorf("FieldPath of an error about no field = %q, %v", path, reason)
	}
}
