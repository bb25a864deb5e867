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
// on. A batch is taken only after an initialize asking for a protocol
// version with batches, and a line whose id the SDK would not echo exactly
// (1e30, 2^53+1, 1.5) is refused with -32600, as over HTTP (see
// checkPayload). The transport neither closes in nor out.
//
// The end of in ends the connection only once every request read from it
// has been answered (or cancelled by the client), or out has failed: a
// client that writes its requests and closes its end of the pipe gets
// every answer. The SDK's transport reports the end at once, and the SDK
// then cancels the requests still being served and drops their answers.
func NewStdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	fl := newInflight()
	w := &lockedWriter{w: out, flight: fl}
	return &mcp.IOTransport{
		Reader: &lineFilter{r: bufio.NewReader(in), out: w, limit: mcp.DefaultMaxLineLength, flight: fl},
		Writer: w,
	}
}

// lockedWriter serializes the SDK's writes (one Write per message) and the
// filter's error replies, so that the two never interleave on the stream,
// and tells flight which requests each write answers.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	flight *inflight
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	n, err := w.write(p)
	if err != nil {
		w.flight.fail()
	} else {
		w.flight.answered(p)
	}
	return n, err
}

func (w *lockedWriter) write(p []byte) (int, error) {
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
	// batchesAllowed is set once the client has asked, in initialize,
	// for a protocol version with JSON-RPC batches (2024-11-05 or
	// 2025-03-26). Before that batches are refused, as over HTTP without
	// such an MCP-Protocol-Version header.
	batchesAllowed bool
	// flight counts the requests passed on and not yet answered.
	flight *inflight
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.next()
		if line == nil && err != nil {
			return 0, f.end(err)
		}
		if line != nil {
			if code, msg := f.check(line); code != 0 {
				if werr := f.reply(code, msg); werr != nil {
					return 0, werr
				}
			} else {
				f.flight.read(line)
				f.pending = append(line, '\n')
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, f.end(err)
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// Close does nothing: stdin belongs to the process.
func (f *lineFilter) Close() error { return nil }

// end returns err, the end of the input, once every request read has been
// answered: the SDK cancels the requests in flight when the input ends.
func (f *lineFilter) end(err error) error {
	f.flight.wait()
	return err
}

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

// check returns the JSON-RPC error code and message for a line the server
// refuses (see checkPayload), or 0. An initialize line sets whether
// batches are taken from then on.
func (f *lineFilter) check(line []byte) (int, string) {
	code, msg := checkPayload(line, f.batchesAllowed)
	if code != 0 || line[0] == '[' {
		return code, msg
	}
	if req, err := jsonrpc.DecodeMessage(line); err == nil {
		if req, ok := req.(*jsonrpc.Request); ok && req.Method == "initialize" {
			var params struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &params)
			// Batches went away in 2025-06-18; the SDK fails the
			// connection on one from a client that asked for a later
			// version, or for a version it does not know (it answers
			// with its latest).
			f.batchesAllowed = batchVersions[params.ProtocolVersion]
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
