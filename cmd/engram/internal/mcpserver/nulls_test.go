package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNullArgumentsAreAbsent calls every tool with each optional argument
// set to null, then with all of them null, and requires the answer the
// same call gets with those arguments left out: null reads as absent, as
// clients built on JSON Schema nullables (OpenAI strict mode, Gemini)
// send it. Before, every optional field but tags, metadata, sources and
// tool_calls failed the call ("validating /properties/max_tokens: type:
// <invalid reflect.Value> has type "null", want "integer"").
func TestNullArgumentsAreAbsent(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// given are values for arguments whose first enum value or empty
	// value would not do.
	given := map[string]any{"text": "Alice drinks green tea", "content": "hello", "query": "Alice"}
	for _, tool := range res.Tools {
		var s jsonschema.Schema
		if err := remarshal(tool.InputSchema, &s); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		base := map[string]any{}
		for _, name := range s.Required {
			base[name] = sample(s.Properties[name], given[name])
		}
		var optional []string
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			if !slices.Contains(s.Required, name) {
				optional = append(optional, name)
			}
		}
		if len(optional) == 0 {
			continue
		}
		allNull := maps.Clone(base)
		for _, name := range optional {
			withNull := maps.Clone(base)
			withNull[name], allNull[name] = nil, nil
			sameAsAbsent(t, cs, tool.Name, withNull, base)
		}
		sameAsAbsent(t, cs, tool.Name, allNull, base)
	}
	// Nested: a tool call's arguments.
	sameAsAbsent(t, cs, "append_message",
		map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "name": "f", "arguments": nil}}},
		map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c2", "name": "f"}}})
	// The arguments object itself.
	for _, name := range []string{"get_window", "read_graph", "forget"} {
		sameAsAbsent(t, cs, name, json.RawMessage(`null`), json.RawMessage(`{}`))
	}
}

// sameAsAbsent calls tool with args and with absent, and requires the same
// outcome: both succeed, or both fail with the same text.
func sameAsAbsent(t *testing.T, cs *mcp.ClientSession, tool string, args, absent any) {
	t.Helper()
	got, want := call(t, cs, tool, args), call(t, cs, tool, absent)
	if got.IsError != want.IsError || (got.IsError && text(got) != text(want)) {
		t.Errorf("%s(%s): error=%v %q; with the nulls left out, %s: error=%v %q",
			tool, mustJSON(args), got.IsError, text(got), mustJSON(absent), want.IsError, text(want))
	}
}

// sample returns given, or a value of the property's type: its first enum
// value, or an empty one.
func sample(p *jsonschema.Schema, given any) any {
	if given != nil {
		return given
	}
	if p == nil {
		return nil
	}
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	types := append([]string{p.Type}, p.Types...)
	switch {
	case slices.Contains(types, "array"):
		return []any{}
	case slices.Contains(types, "object"):
		return map[string]any{}
	case slices.Contains(types, "integer"), slices.Contains(types, "number"):
		return 1
	case slices.Contains(types, "boolean"):
		return false
	}
	return "x"
}

// TestNullErrorText: a null the schema cannot read as absent (an element
// of an array) is refused in words, never as "<invalid reflect.Value>".
func TestNullErrorText(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	for _, c := range []struct {
		tool string
		args string
	}{
		{"remember", `{"text": "x", "tags": [null]}`},
		{"open_nodes", `{"names": [null]}`},
		{"create_entities", `{"entities": [null]}`},
		{"recall", `{"text": "x", "sources": [null]}`},
	} {
		msg := fails(t, cs, c.tool, json.RawMessage(c.args), "null")
		if strings.Contains(msg, "reflect") {
			t.Errorf("%s(%s): %q", c.tool, c.args, msg)
		}
	}
}
