package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/engramdb/engram/memory"
)

// serveMCP serves /mcp with the MCP handler. The request's scope is
// checked first when Options.MCPScope is set, and the handler's HTTP
// errors (the SDK answers 400, 405 and 415 in plain text, and a refused
// request with a JSON-RPC error without id) come in the API's JSON
// envelope like every other error of the server (issue 26). A JSON-RPC
// error answering a request by its id is the protocol's answer and passes
// through.
func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request) error {
	if h.mcpScope != nil {
		if _, err := h.mcpScope(r); err != nil {
			if errors.Is(err, memory.ErrInvalidScope) {
				return err
			}
			return &apiError{status: http.StatusForbidden, code: "forbidden", message: "no scope for this request: " + err.Error()}
		}
	}
	ew := &mcpErrorWriter{ResponseWriter: w}
	h.mcp.ServeHTTP(ew, r)
	return ew.finish()
}

// maxMCPError bounds the error body kept to be rewritten; the SDK's are a
// line.
const maxMCPError = 64 << 10

// mcpErrorWriter passes a response through, except one of status 400 or
// more, which it keeps for finish to rewrite.
type mcpErrorWriter struct {
	http.ResponseWriter
	status int
	held   bool // an error response is being kept
	body   bytes.Buffer
}

func (w *mcpErrorWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code >= 400 {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpErrorWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.held {
		if room := maxMCPError - w.body.Len(); room > 0 {
			w.body.Write(p[:min(len(p), room)])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *mcpErrorWriter) Flush() {
	if w.held {
		return
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *mcpErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a kept error response: as it was when it is a JSON-RPC
// answer to a request with an id, else as the API's error.
func (w *mcpErrorWriter) finish() error {
	if !w.held {
		return nil
	}
	var rpc struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	isRPC := json.Unmarshal(w.body.Bytes(), &rpc) == nil && rpc.Error != nil
	if isRPC && len(rpc.ID) > 0 && string(rpc.ID) != "null" {
		w.ResponseWriter.WriteHeader(w.status)
		_, err := w.ResponseWriter.Write(w.body.Bytes())
		return err
	}
	msg := strings.TrimSpace(w.body.String())
	if isRPC {
		msg = rpc.Error.Message
	}
	return mcpHTTPError(w.status, msg)
}

// mcpHTTPError is the API's error for an MCP handler's HTTP error.
func mcpHTTPError(status int, msg string) error {
	code := map[int]string{
		http.StatusBadRequest:            "invalid_request",
		http.StatusForbidden:             "forbidden",
		http.StatusNotFound:              "not_found",
		http.StatusMethodNotAllowed:      "method_not_allowed",
		http.StatusNotAcceptable:         "not_acceptable",
		http.StatusConflict:              "conflict",
		http.StatusRequestEntityTooLarge: "too_large",
		http.StatusUnsupportedMediaType:  "unsupported_media_type",
	}[status]
	switch {
	case status >= 500:
		return &apiError{status: status, code: "internal", message: "internal error; see the server log"}
	case code == "":
		code = "invalid_request"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &apiError{status: status, code: code, message: "mcp: " + msg}
}
