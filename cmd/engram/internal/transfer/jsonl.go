package transfer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// The "type" of a JSONL line.
const (
	typeMessage = "message"
	typeMemory  = "memory"
)

// maxLine bounds one JSONL line: a message of memory.MaxMessageBytesLimit
// with every byte escaped as \u00XX is 6 MiB.
const maxLine = 8 << 20

// messageLine is a message line: whose it is, then the message's fields.
type messageLine struct {
	Type    string `json:"type"`
	User    string `json:"user"`
	Session string `json:"session"`
	memory.Message
}

// memoryLine is a memory line: whose it is, then the memory's fields.
type memoryLine struct {
	Type string `json:"type"`
	User string `json:"user,omitempty"`
	memory.Memory
}

// record is one decoded line.
type record struct {
	msg *messageLine // a message, or
	mem *memoryLine  // a memory
}

func (r *record) user() string {
	if r.msg != nil {
		return r.msg.User
	}
	return r.mem.User
}

func (r *record) setUser(u string) {
	if r.msg != nil {
		r.msg.User = u
	} else {
		r.mem.User = u
	}
}

// decodeLine decodes and checks one non-blank line: JSON with only known
// fields, a known type, and ids that the store accepts. What needs the
// store (a tool result's call, a memory's dedup) is checked on import.
func decodeLine(b []byte) (record, error) {
	var probe struct {
		Type string          `json:"type"`
		Role json.RawMessage `json:"role"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return record{}, jsonError(err)
	}
	typ := probe.Type
	if typ == "" {
		typ = typeMemory
		if probe.Role != nil {
			typ = typeMessage
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	switch typ {
	case typeMessage:
		var m messageLine
		if err := dec.Decode(&m); err != nil {
			return record{}, jsonError(err)
		}
		m.Type, m.Tokens = typeMessage, 0
		if m.Session == "" {
			return record{}, errors.New(`a message needs "session"`)
		}
		if err := checkID("session", m.Session); err != nil {
			return record{}, err
		}
		if !m.Role.Valid() {
			return record{}, fmt.Errorf("unknown role %q", m.Role)
		}
		if err := checkULID(m.ID); err != nil {
			return record{}, err
		}
		return record{msg: &m}, checkID("user", m.User)
	case typeMemory:
		var m memoryLine
		if err := dec.Decode(&m); err != nil {
			return record{}, jsonError(err)
		}
		m.Type = typeMemory
		if strings.TrimSpace(m.Text) == "" {
			return record{}, errors.New(`a memory needs "text"`)
		}
		if m.Kind != "" && !m.Kind.Valid() {
			return record{}, fmt.Errorf("unknown kind %q", m.Kind)
		}
		if err := checkULID(m.ID); err != nil {
			return record{}, err
		}
		return record{mem: &m}, checkID("user", m.User)
	}
	return record{}, fmt.Errorf("unknown type %q (want %q or %q)", probe.Type, typeMessage, typeMemory)
}

// checkID checks a user or session id, when set.
func checkID(field, id string) error {
	if id == "" {
		return nil
	}
	if err := engine.ValidateScopeID(id); err != nil {
		return fmt.Errorf("%s %w", field, err)
	}
	return nil
}

// checkULID checks an id, when set.
func checkULID(id string) error {
	if id == "" {
		return nil
	}
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("id %q is not a ULID: %w", id, err)
	}
	return nil
}

// jsonError drops encoding/json's "json: " prefix; the caller names the
// file and line.
func jsonError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("not JSON: %s (at byte %d)", syn.Error(), syn.Offset)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// lineReader reads lines of at most maxLine bytes and counts them and the
// bytes read.
type lineReader struct {
	r     *bufio.Reader
	line  int
	bytes int64
	long  []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its end of line, valid until the next
// call, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) && len(lr.long) <= maxLine {
			b, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, b...)
		}
		b = lr.long
	}
	if len(b) == 0 && err != nil {
		return nil, err
	}
	lr.line++
	lr.bytes += int64(len(b))
	if len(b) > maxLine {
		return nil, fmt.Errorf("line %d: longer than %d bytes", lr.line, maxLine)
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("line %d: %w", lr.line, err)
	}
	if lr.line == 1 {
		b = bytes.TrimPrefix(b, []byte("\uFEFF")) // a byte order mark
	}
	return bytes.TrimRight(b, "\r\n"), nil
}
