package memory

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/engine"
)

// Role is who wrote a message, in the chat-completions vocabulary.
type Role string

// The roles of the chat format.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// String returns the role's wire name.
func (r Role) String() string { return string(r) }

// ToolCall is one function call requested by an assistant message.
type ToolCall struct {
	// ID names the call; the tool result answering it carries the same id in
	// Message.ToolCallID. Unique within a session.
	ID string `json:"id"`
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is the JSON the model produced for the call. Empty means no
	// arguments; otherwise it must be valid JSON.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Message is one turn of a conversation, in the shape of the OpenAI
// chat-completions API that most of the ecosystem uses.
type Message struct {
	// ID is assigned by [Session.Append]: a ULID, so ids sort in append
	// order. Ignored on Append.
	ID string `json:"id,omitempty"`
	// Role is required.
	Role Role `json:"role"`
	// Content is the text. Required except on assistant messages that make
	// tool calls and on tool results.
	Content string `json:"content,omitempty"`
	// Name optionally names the participant (a user or a tool).
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is set on a tool result: the id of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Time is when the message was said. Zero on Append means now.
	Time time.Time `json:"time,omitzero"`
	// Metadata is free-form string data kept with the message.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Tokens is the message's size in tokens of the store's encoding,
	// chat-format framing included. Set on messages read from the store;
	// ignored on Append.
	Tokens int `json:"tokens,omitempty"`
}

// validate checks the rules that need no other message. Tool-call ids are
// checked against the session by Append.
func (m *Message) validate() error {
	if !m.Role.Valid() {
		return fieldError("role", fmt.Errorf("%w %q", ErrInvalidRole, m.Role))
	}
	if err := engine.ValidateTime(m.Time); err != nil {
		return fieldError("time", fmt.Errorf("%w: Time %w", ErrInvalidMessage, err))
	}
	if !utf8.ValidString(m.Content) {
		return fieldError("content", fmt.Errorf("%w: content is not valid UTF-8", ErrInvalidMessage))
	}
	if m.Name != "" {
		if err := engine.ValidateID(m.Name); err != nil {
			return fieldError("name", fmt.Errorf("%w: name %w", ErrInvalidMessage, err))
		}
	}
	switch {
	case len(m.ToolCalls) > 0 && m.Role != RoleAssistant:
		return fieldError("tool_calls", fmt.Errorf("%w: only assistant messages make tool calls, not %s", ErrInvalidMessage, m.Role))
	case m.ToolCallID != "" && m.Role != RoleTool:
		return fieldError("tool_call_id", fmt.Errorf("%w: a tool-call id belongs on a tool result, not on a %s message", ErrInvalidMessage, m.Role))
	case m.Role == RoleTool && m.ToolCallID == "":
		return fieldError("tool_call_id", fmt.Errorf("%w: a tool result needs the ToolCallID of the call it answers", ErrOrphanToolResult))
	case m.Content == "" && len(m.ToolCalls) == 0 && m.Role != RoleTool:
		return fieldError("content", fmt.Errorf("%w: empty %s message", ErrInvalidMessage, m.Role))
	}
	if m.ToolCallID != "" {
		if err := engine.ValidateID(m.ToolCallID); err != nil {
			return fieldError("tool_call_id", fmt.Errorf("%w: ToolCallID %w", ErrInvalidMessage, err))
		}
	}
	if err := m.validateToolCalls(); err != nil {
		return err
	}
	for k, v := range m.Metadata {
		if err := engine.ValidateID(k); err != nil {
			return fieldError("metadata", fmt.Errorf("%w: metadata key %w", ErrInvalidMessage, err))
		}
		if !utf8.ValidString(v) {
			return fieldError("metadata", fmt.Errorf("%w: metadata %q is not valid UTF-8", ErrInvalidMessage, k))
		}
	}
	return nil
}

// validateToolCalls checks the ids, names and arguments of m's tool calls.
func (m *Message) validateToolCalls() error {
	seen := make(map[string]bool, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		if err := engine.ValidateID(c.ID); err != nil {
			return toolCallError(i, "id", fmt.Errorf("%w: tool call %d: id %w", ErrInvalidMessage, i, err))
		}
		if seen[c.ID] {
			return toolCallError(i, "id", fmt.Errorf("%w %q", ErrDuplicateToolCall, c.ID))
		}
		seen[c.ID] = true
		if err := engine.ValidateID(c.Name); err != nil {
			return toolCallError(i, "name", fmt.Errorf("%w: tool call %d: name %w", ErrInvalidMessage, i, err))
		}
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			return toolCallError(i, "arguments", fmt.Errorf("%w: tool call %q", ErrInvalidToolArguments, c.ID))
		}
	}
	return nil
}

// toolCallError returns err about field of the message's tool call i.
func toolCallError(i int, field string, err error) error {
	return &FieldError{Field: "tool_calls", Index: i, Err: fieldError(field, err)}
}

// rawSize is a lower bound of m's encoded size: the bytes of its text
// fields, which encoding only adds to. Append compares it with the limit
// before counting tokens, so an oversized message costs no tokenizer time
// (issue 12: a 300 KiB message was refused only after 81 s of counting).
func (m *Message) rawSize() int {
	n := len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for k, v := range m.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// checkSize returns [ErrTooLarge] when m cannot fit in limit bytes encoded,
// judged by its raw size alone.
func (m *Message) checkSize(limit int) error {
	if n := m.rawSize(); n > limit {
		return fmt.Errorf("%w: at least %d bytes encoded, limit %d", ErrTooLarge, n, limit)
	}
	return nil
}

// recordVersion is the first byte of every stored message: the version of
// the encoding that follows (JSON of record).
const recordVersion = 1

// record is a message as stored: the message without its id (the key holds
// it), plus the token count and the encoding that produced it, so a window
// never re-tokenizes unless the store's encoding changed.
type record struct {
	Role       Role              `json:"r"`
	Content    string            `json:"c,omitempty"`
	Name       string            `json:"n,omitempty"`
	ToolCalls  []ToolCall        `json:"tc,omitempty"`
	ToolCallID string            `json:"tid,omitempty"`
	Time       int64             `json:"t"`
	Metadata   map[string]string `json:"m,omitempty"`
	Tokens     int               `json:"k"`
	Encoding   string            `json:"e"`
}

func encodeRecord(m *Message, encoding string) ([]byte, error) {
	b, err := json.Marshal(record{
		Role:       m.Role,
		Content:    m.Content,
		Name:       m.Name,
		ToolCalls:  m.ToolCalls,
		ToolCallID: m.ToolCallID,
		Time:       m.Time.UnixNano(),
		Metadata:   m.Metadata,
		Tokens:     m.Tokens,
		Encoding:   encoding,
	})
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return append([]byte{recordVersion}, b...), nil
}

// decodeRecord decodes a stored message into m (ID excluded) and returns the
// encoding its token count was made with. It never panics on bad input.
func decodeRecord(b []byte, m *Message) (encoding string, err error) {
	if len(b) == 0 || b[0] != recordVersion {
		return "", fmt.Errorf("%w: unknown message record version", ErrCorrupt)
	}
	r, ok := decodeRecordJSON(string(b[1:]))
	if !ok {
		if err := json.Unmarshal(b[1:], &r); err != nil {
			return "", fmt.Errorf("%w: message record: %v", ErrCorrupt, err)
		}
	}
	if !r.Role.Valid() || r.Tokens < 0 {
		return "", fmt.Errorf("%w: message record has role %q, %d tokens", ErrCorrupt, r.Role, r.Tokens)
	}
	*m = Message{
		ID:         m.ID,
		Role:       r.Role,
		Content:    r.Content,
		Name:       r.Name,
		ToolCalls:  r.ToolCalls,
		ToolCallID: r.ToolCallID,
		Time:       time.Unix(0, r.Time).UTC(),
		Metadata:   r.Metadata,
		Tokens:     r.Tokens,
	}
	return r.Encoding, nil
}
