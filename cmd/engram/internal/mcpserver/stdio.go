package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewStdioTransport returns the transport engram mcp serves on: newline-
// delimited JSON-RPC over in and out, like the SDK's IOTransport, except
// that a bad line does not end the connection. The SDK's transport fails on
// the first line that is not JSON, or not a JSON-RPC message, and the
// server exits; this one answers such a line with a JSON-RPC error whose
// id is null (-32700 parse error for a line that is not JSON, or longer
// than [mcp.DefaultMaxLineLength]; -32600 invalid request for JSON that is
// no JSON-RPC message, or a batch where the protocol has none) and reads
// on. The transport neither closes in nor out.
func NewStdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{
		Reader: &lineFilter{r: bufio.NewReader(in), out: w, limit: mcp.DefaultMaxLineLength},
		Writer: w,
	}
}

// lockedWriter serializes the SDK's writes (one Write per message) and the
// filter's error replies, so that the two never interleave on the stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Close leaves the stream open: it belongs to the process.
func (w *lockedWriter) Close() error { return nil }

// lineFilter passes the good lines of r through to the SDK's decoder and
// answers the bad ones itself.
type lineFilter struct {
	r     *bufio.Reader
	out   io.Writer
	limit int
	// pending is what is left of the current good line.
	pending []byte
	line    []byte
	// batchesRefused is set once the client has asked for a protocol
	// version without JSON-RPC batches (2025-06-18 and later).
	batchesRefused bool
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.next()
		if line == nil && err != nil {
			return 0, err
		}
		if line != nil {
			if code, msg := f.check(line); code != 0 {
				if werr := f.reply(code, msg); werr != nil {
					return 0, werr
				}
			} else {
				f.pending = append(line, '\n')
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// Close does nothing: stdin belongs to the process.
func (f *lineFilter) Close() error { return nil }

// next returns the next non-blank line without its white space, with the
// reader's error when the line ends the stream, or nil and the error at
// the end. A line longer than the limit is answered with a parse error and
// skipped, without holding more than the limit in memory.
func (f *lineFilter) next() ([]byte, error) {
	for {
		f.line = f.line[:0]
		long := false
		var err error
		for {
			var chunk []byte
			chunk, err = f.r.ReadSlice('\n')
			if !long && len(f.line)+len(chunk) <= f.limit {
				f.line = append(f.line, chunk...)
			} else {
				long = true
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if long {
			if rerr := f.reply(jsonrpc.CodeParseError, fmt.Sprintf("parse error: a line is longer than %d bytes", f.limit)); rerr != nil {
				return nil, rerr
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		line := bytes.TrimSpace(f.line)
		if len(line) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		return line, err
	}
}

// check returns the JSON-RPC error code and message for a line the SDK
// would fail on, or 0.
func (f *lineFilter) check(line []byte) (int, string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "parse error: the line is not JSON"
	}
	if nestedDeeperThan(line, maxNesting) {
		// The SDK's batch decoder stops at 1000 levels and then fails
		// the connection; encoding/json allows 10000.
		return jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: nested more than %d levels deep", maxNesting)
	}
	if line[0] != '[' {
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %v", err)
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
			var params struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &params)
			// Batches went away in 2025-06-18; the SDK fails the
			// connection on one from a client that asked for it, or for
			// a version it does not know (it answers with its latest).
			f.batchesRefused = params.ProtocolVersion != "2024-11-05" && params.ProtocolVersion != "2025-03-26"
		}
		return 0, ""
	}
	if f.batchesRefused {
		return jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not part of this protocol version"
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
		return jsonrpc.CodeInvalidRequest, "invalid request: an empty or malformed batch"
	}
	ids := map[any]bool{}
	for _, raw := range batch {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request in a batch: %v", err)
		}
		// The SDK keys every request of a batch by its id, a
		// notification's being the zero one, and fails the connection on
		// a repeat: two notifications in one batch repeat it too.
		if req, ok := msg.(*jsonrpc.Request); ok {
			if ids[req.ID.Raw()] {
				return jsonrpc.CodeInvalidRequest, "invalid request: a batch repeats an id, or holds more than one notification"
			}
			ids[req.ID.Raw()] = true
		}
	}
	return 0, ""
}

// reply writes a JSON-RPC error response with a null id: a bad line has
// no id that can be trusted (JSON-RPC 2.0, section 5).
func (f *lineFilter) reply(code int, message string) error {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": message},
	})
	if err != nil {
		return err
	}
	_, err = f.out.Write(append(b, '\n'))
	return err
}

// maxNesting bounds how deeply a line's arrays and objects nest, well
// inside the 1000 levels the SDK's decoder takes; no MCP message comes
// near it.
const maxNesting = 512

// nestedDeeperThan reports whether the valid JSON text b nests arrays and
// objects more than limit levels deep.
func nestedDeeperThan(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}
