package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Both transports check what a client sends with checkPayload before the
// SDK reads it, so they take and refuse the same messages: the SDK fails a
// stdio connection on some of them, and answers others wrongly.

// batchVersions are the protocol versions that have JSON-RPC batches; they
// went away in 2025-06-18.
var batchVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true}

// maxExactID is the largest integer id the SDK echoes exactly: it decodes
// an id as a float64 and converts it to int64, so 2^53+1 comes back as
// 2^53, 1.5 as 1, and 1e30 as -9223372036854775808.
const maxExactID = 1 << 53

// intID is an integer as JSON writes it, without fraction or exponent;
// -0 is left out (it comes back as 0).
var intID = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// checkPayload returns the JSON-RPC error code and message for a payload
// (a message, or a batch of them) that the server refuses, or 0. batches
// says whether the client declared a protocol version with batches.
func checkPayload(p []byte, batches bool) (int, string) {
	if !json.Valid(p) {
		return jsonrpc.CodeParseError, "parse error: the payload is not JSON"
	}
	if nestedDeeperThan(p, maxNesting) {
		// The SDK's batch decoder stops at 1000 levels and then fails
		// the connection; encoding/json allows 10000.
		return jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: nested more than %d levels deep", maxNesting)
	}
	p = bytes.TrimSpace(p)
	if p[0] != '[' {
		if msg := checkID(p); msg != "" {
			return jsonrpc.CodeInvalidRequest, msg
		}
		if _, err := jsonrpc.DecodeMessage(p); err != nil {
			return jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %v", err)
		}
		return 0, ""
	}
	if !batches {
		return jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are taken only under protocol versions 2024-11-05 and 2025-03-26, which the client did not declare"
	}
	return checkBatch(p)
}

// checkBatch checks a batch's messages: each one valid, and no id twice.
func checkBatch(p []byte) (int, string) {
	var batch []json.RawMessage
	if err := json.Unmarshal(p, &batch); err != nil || len(batch) == 0 {
		return jsonrpc.CodeInvalidRequest, "invalid request: an empty or malformed batch"
	}
	ids := map[any]bool{}
	for _, raw := range batch {
		if msg := checkID(raw); msg != "" {
			return jsonrpc.CodeInvalidRequest, msg + " (in a batch)"
		}
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

// checkID returns a message when the id of the message m is one the
// server could not echo exactly: a number with a fraction or an exponent,
// -0, or an integer beyond 2^53 in magnitude. The SDK cannot keep such an
// id (see maxExactID), so the request is refused rather than answered
// under another id. Strings, integers within 2^53 and null pass; other
// types are left to the SDK's decoder, which refuses them.
func checkID(m []byte) string {
	var fields struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(m, &fields) != nil || len(fields.ID) == 0 {
		return ""
	}
	id := string(fields.ID)
	switch id[0] {
	case '"', 'n':
		return ""
	case 't', 'f', '{', '[':
		return fmt.Sprintf("invalid request: id %.40s is not a string, an integer or null", id)
	}
	if intID.MatchString(id) {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n >= -maxExactID && n <= maxExactID {
			return ""
		}
	}
	return fmt.Sprintf("invalid request: id %.40s is not a string or an integer of at most 2^53 in magnitude, so it could not be echoed exactly", id)
}
