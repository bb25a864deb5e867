package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// engramToolNames are Engram's own tools, those with strict schemas.
var engramToolNames = []string{"remember", "recall", "append_message", "get_window", "forget"}

// The rules of OpenAI's strict function calling, from "Structured
// Outputs: supported schemas"
// (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas):
// the root is an object, not an anyOf; every object has
// additionalProperties false and lists every property in required (an
// optional field is a union with null); only the keywords below are
// taken; at most 10 levels of nesting and 5000 properties.
var openAIKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "enum": true, "const": true, "anyOf": true,
	"$ref": true, "$defs": true,
	// Strings, numbers and arrays.
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// openAIFormats are the string formats strict mode takes.
var openAIFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// checkOpenAIStrict returns every way schema breaks OpenAI's strict rules.
func checkOpenAIStrict(schema map[string]any) []string {
	var errs []string
	if schema["type"] != "object" || schema["anyOf"] != nil {
		errs = append(errs, "root: not a plain object")
	}
	props := 0
	var walk func(path string, s map[string]any, depth int)
	walk = func(path string, s map[string]any, depth int) {
		if depth > 10 {
			errs = append(errs, path+": nested deeper than 10 levels")
		}
		for k := range s {
			if !openAIKeywords[k] {
				errs = append(errs, fmt.Sprintf("%s: keyword %q is not supported", path, k))
			}
		}
		if f, ok := s["format"].(string); ok && !slices.Contains(openAIFormats, f) {
			errs = append(errs, fmt.Sprintf("%s: format %q is not supported", path, f))
		}
		if isType(s, "object") {
			if ap, ok := s["additionalProperties"].(bool); !ok || ap {
				errs = append(errs, path+": object without additionalProperties: false")
			}
			p, _ := s["properties"].(map[string]any)
			req := strs(s["required"])
			for name := range p {
				props++
				if !slices.Contains(req, name) {
					errs = append(errs, fmt.Sprintf("%s: property %q is not in required", path, name))
				}
			}
		}
		eachChild(path, s, func(p string, c map[string]any) { walk(p, c, depth+1) })
	}
	walk("", schema, 0)
	if props > 5000 {
		errs = append(errs, "more than 5000 properties")
	}
	return errs
}

// The subset of JSON Schema Gemini takes in a function declaration's
// parametersJsonSchema, the field Google's MCP bridge (mcpToTool in
// @google/genai) sends a tool's input schema in
// (https://ai.google.dev/api/caching#FunctionDeclaration: "only the
// following properties are supported"), and what issue 28 saw Gemini
// refuse: a type list ("type": ["null","array"]) and an object with no
// properties (a free-form map, whose additionalProperties is a schema).
// Enums are of strings.
var geminiKeywords = map[string]bool{
	"$id": true, "$defs": true, "$ref": true, "$anchor": true,
	"type": true, "format": true, "title": true, "description": true, "enum": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "anyOf": true, "oneOf": true,
	"properties": true, "additionalProperties": true, "required": true, "propertyOrdering": true,
}

// checkGemini returns every way schema leaves Gemini's subset.
func checkGemini(schema map[string]any) []string {
	var errs []string
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		for k := range s {
			if !geminiKeywords[k] {
				errs = append(errs, fmt.Sprintf("%s: keyword %q is not supported", path, k))
			}
		}
		if _, ok := s["type"].([]any); ok {
			errs = append(errs, path+": a list of types")
		}
		if isType(s, "object") {
			if p, _ := s["properties"].(map[string]any); len(p) == 0 {
				errs = append(errs, path+": an object with no properties")
			}
			if ap, ok := s["additionalProperties"]; ok && ap != false {
				errs = append(errs, path+": additionalProperties other than false")
			}
		}
		for _, e := range asSlice(s["enum"]) {
			if _, ok := e.(string); !ok {
				errs = append(errs, fmt.Sprintf("%s: enum value %v is not a string", path, e))
			}
		}
		eachChild(path, s, walk)
	}
	walk("", schema)
	return errs
}

// eachChild calls f on every subschema of s: properties, items, anyOf.
func eachChild(path string, s map[string]any, f func(string, map[string]any)) {
	if p, ok := s["properties"].(map[string]any); ok {
		for name, c := range p {
			if c, ok := c.(map[string]any); ok {
				f(path+"/"+name, c)
			}
		}
	}
	if c, ok := s["items"].(map[string]any); ok {
		f(path+"/items", c)
	}
	if c, ok := s["additionalProperties"].(map[string]any); ok {
		f(path+"/additionalProperties", c)
	}
	for i, c := range asSlice(s["anyOf"]) {
		if c, ok := c.(map[string]any); ok {
			f(fmt.Sprintf("%s/anyOf/%d", path, i), c)
		}
	}
}

func isType(s map[string]any, typ string) bool {
	return s["type"] == typ || slices.Contains(asSlice(s["type"]), any(typ))
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func strs(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// listedSchemas returns the input schemas tools/list advertises, by
// tool name, as plain JSON.
func listedSchemas(t *testing.T, cs *mcp.ClientSession) map[string]map[string]any {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, tool := range res.Tools {
		var s map[string]any
		if err := remarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = s
	}
	return out
}

// TestStrictSchemas: tools/list advertises for each of Engram's own tools
// an input schema that keeps to OpenAI's strict rules and to Gemini's
// subset, with every property of the tool (metadata as {key, value}
// pairs). The schemas calls are validated with, the ones of before, break
// both, which is what the checkers are for.
func TestStrictSchemas(t *testing.T) {
	cs := connect(t, NewServer(openStore(t), fixed(testScope)))
	listed := listedSchemas(t, cs)
	registered := map[string]any{}
	t2 := &engramTools
	for _, tool := range []*mcp.Tool{t2.remember, t2.recall, t2.appendMessage, t2.getWindow, t2.forget} {
		registered[tool.Name] = tool.InputSchema
	}
	for _, name := range engramToolNames {
		s := listed[name]
		if errs := checkOpenAIStrict(s); len(errs) > 0 {
			t.Errorf("%s: not OpenAI strict:\n  %s\n%s", name, strings.Join(errs, "\n  "), mustJSON(s))
		}
		if errs := checkGemini(s); len(errs) > 0 {
			t.Errorf("%s: not Gemini's subset:\n  %s\n%s", name, strings.Join(errs, "\n  "), mustJSON(s))
		}
		var lenient map[string]any
		if err := remarshal(registered[name], &lenient); err != nil {
			t.Fatal(err)
		}
		lp, _ := lenient["properties"].(map[string]any)
		sp, _ := s["properties"].(map[string]any)
		if len(lp) != len(sp) || len(strs(s["required"])) != len(lp) {
			t.Errorf("%s: strict properties %v (required %v), registered %v", name, keys(sp), s["required"], keys(lp))
		}
		if name != "get_window" && name != "forget" && len(checkOpenAIStrict(lenient))+len(checkGemini(lenient)) == 0 {
			t.Errorf("%s: the registered schema passes both checkers, so they check nothing", name)
		}
	}
	for _, name := range []string{"remember", "append_message"} {
		meta := mustJSON(listed[name]["properties"].(map[string]any)["metadata"])
		if !strings.Contains(meta, `"key"`) || !strings.Contains(meta, `"value"`) {
			t.Errorf("%s metadata: %s, want {key, value} pairs", name, meta)
		}
	}
	// The graph tools are listed as registered, by a server without the
	// middleware: the reference's schemas (TestCompatibility compares
	// them with the reference itself).
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "v0"}, nil)
	(&handlers{store: openStore(t), scope: fixed(testScope)}).addGraphTools(bare)
	graphTools := listedSchemas(t, connect(t, bare))
	if len(graphTools) != 9 {
		t.Fatalf("%d graph tools", len(graphTools))
	}
	for name, s := range graphTools {
		if mustJSON(s) != mustJSON(listed[name]) {
			t.Errorf("%s: listed %s, registered %s", name, mustJSON(listed[name]), mustJSON(s))
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestStrictCalls: the server takes the calls a strict client makes
// (every property present, null for those the model leaves out,
// metadata as pairs) and the calls of before (optional properties left
// out, metadata as an object), and both mean the same.
func TestStrictCalls(t *testing.T) {
	st := openStore(t)
	cs := connect(t, NewServer(st, fixed(testScope)))
	var strict, old rememberOut
	ok(t, cs, "remember", raw(`{"text":"Alice takes tea","kind":null,"tags":null,"importance":null,"expires_at":null,"shared":null,
		"metadata":[{"key":"source","value":"chat"},{"key":"lang","value":"en"}]}`), &strict)
	ok(t, cs, "remember", raw(`{"text":"Bob takes coffee","metadata":{"source":"chat","lang":"en"}}`), &old)
	for _, id := range []string{strict.ID, old.ID} {
		m, err := st.Memory(context.Background(), memory.Scope{Tenant: testScope.Tenant, User: testScope.User}, id)
		if err != nil || m.Metadata["source"] != "chat" || m.Metadata["lang"] != "en" || len(m.Metadata) != 2 {
			t.Errorf("memory %s = %+v, %v", id, m, err)
		}
	}
	fails(t, cs, "remember", raw(`{"text":"x","metadata":[{"key":"a","value":"1"},{"key":"a","value":"2"}]}`), "given twice")
	fails(t, cs, "remember", raw(`{"text":"x","metadata":[{"key":"a"}]}`), "metadata")

	ok(t, cs, "append_message", raw(`{"role":"user","content":"hi","name":null,"tool_calls":null,"tool_call_id":null,"metadata":[{"key":"k","value":"v"}]}`), nil)
	ok(t, cs, "append_message", raw(`{"role":"assistant","content":null,"name":null,"tool_call_id":null,"metadata":null,
		"tool_calls":[{"id":"c1","name":"weather","arguments":null}]}`), nil)
	ok(t, cs, "append_message", raw(`{"role":"tool","content":"sunny","tool_call_id":"c1"}`), nil)
	var w getWindowOut
	ok(t, cs, "get_window", raw(`{"max_messages":null,"max_tokens":null}`), &w)
	if len(w.Messages) != 3 || w.Messages[0].Metadata["k"] != "v" {
		t.Errorf("window = %s", mustJSON(w))
	}
	var rec recallOut
	ok(t, cs, "recall", raw(`{"text":"tea","max_tokens":null,"max_messages":null,"top_k":null,"hops":null,"sources":null,"shared":null}`), &rec)
	if !strings.Contains(mustJSON(rec.Items), "Alice takes tea") {
		t.Errorf("recall = %s", mustJSON(rec.Items))
	}
	fails(t, cs, "forget", raw(`{"erase_user":null,"extra":1}`), "")
	ok(t, cs, "forget", raw(`{"erase_user":null}`), nil)
}

// TestStrictSchemaNoMap: a map outside an anyOf that offers another
// shape has no strict form, and strictSchema says so.
func TestStrictSchemaNoMap(t *testing.T) {
	s := inferSchema[struct {
		M map[string]string `json:"m"`
	}](nil)
	if _, err := strictSchema(s); err == nil {
		t.Errorf("strictSchema of a map = nil error")
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), "additionalProperties") {
		t.Errorf("the input was changed: %s", b)
	}
}
