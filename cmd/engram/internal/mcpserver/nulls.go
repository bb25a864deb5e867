package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nullsAsAbsent is a receiving middleware that reads a null argument of a
// tools/call as one left out: it drops every object member whose value is
// null from the call's arguments, at any depth (a tool call's arguments in
// append_message's tool_calls too), before the SDK validates them. Clients
// whose tool schemas make optional properties nullable (OpenAI's strict
// mode, Gemini) send null for what the model leaves out, and the schemas
// here, the nine graph tools' byte for byte the reference server's, say
// only the type. A null element of an array is left, and refused.
func nullsAsAbsent(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			call.Params.Arguments = dropNulls(call.Params.Arguments)
		}
		return next(ctx, method, req)
	}
}

// dropNulls returns args without the object members whose value is null,
// or args itself when it has none or does not decode (the SDK then reports
// it).
func dropNulls(args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // numbers go back as they came
	var v any
	if dec.Decode(&v) != nil {
		return args
	}
	if v == nil {
		return json.RawMessage("{}") // null arguments: none
	}
	if !dropNullMembers(v) {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}

// dropNullMembers deletes the null members of every object in v and
// reports whether it deleted any.
func dropNullMembers(v any) bool {
	dropped := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
				dropped = true
			} else if dropNullMembers(x) {
				dropped = true
			}
		}
	case []any:
		for _, x := range v {
			if dropNullMembers(x) {
				dropped = true
			}
		}
	}
	return dropped
}

// invalidValue is how the SDK's schema validation prints a null it
// refuses: a reflect.Value of nothing.
const invalidValue = "<invalid reflect.Value>"

// nullText returns s with the validator's name for a null value replaced
// by the word null.
func nullText(s string) string {
	return strings.ReplaceAll(s, invalidValue, "null")
}
