package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Strict tool schemas (issue 28, section 4).
//
// OpenAI's strict function calling and Gemini's function declarations
// take a subset of JSON Schema: OpenAI wants every property listed in
// required (an optional one nullable instead) and additionalProperties
// false on every object; Gemini refuses a type list such as
// ["null","array"] and an object with no properties (a free-form map).
// Engram's own tools advertise, in tools/list, a strict form of their
// input schema that keeps to both: every property required, the
// optional ones as anyOf [the schema, {"type":"null"}], every object
// closed, metadata as a list of {key, value} pairs. A null argument is
// read as one left out (nullsAsAbsent), so a strict client's call means
// what a lenient one's does.
//
// The server stays lenient: it validates calls with the schema the tool
// was registered with, where optional properties may be left out and
// metadata may also be the object of before. strictListing puts the
// strict form in the tools/list answer only. The nine graph tools are
// left as they are, byte for byte the reference server's.
//
// No shape fits every Gemini path: its older `parameters` field (an
// OpenAPI 3.0 subset) has no additionalProperties at all, which OpenAI's
// strict mode requires. The schemas here fit `parametersJsonSchema`,
// which Google's own MCP bridge (mcpToTool in @google/genai) sends.

// strictSchemas are the strict input schemas of Engram's own tools, by
// tool name, built once from the registered ones.
var strictSchemas = func() map[string]*jsonschema.Schema {
	t := &engramTools
	out := map[string]*jsonschema.Schema{}
	for _, tool := range []*mcp.Tool{t.remember, t.recall, t.appendMessage, t.getWindow, t.forget} {
		s, err := strictSchema(tool.InputSchema.(*jsonschema.Schema))
		if err != nil {
			// The schemas are this package's: a bug every test catches.
			panic(fmt.Sprintf("mcpserver: strict schema of %s: %v", tool.Name, err))
		}
		out[tool.Name] = s
	}
	return out
}()

// strictListing is a receiving middleware that answers tools/list with
// the strict input schemas of Engram's own tools in place of the ones
// they validate calls with. The server's tools are not changed: the
// answer holds copies.
func strictListing(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		out := *list
		out.Tools = make([]*mcp.Tool, len(list.Tools))
		for i, t := range list.Tools {
			out.Tools[i] = t
			if s, ok := strictSchemas[t.Name]; ok {
				c := *t
				c.InputSchema = s
				out.Tools[i] = &c
			}
		}
		return &out, nil
	}
}

// errNoStrictForm is the error of strictSchema for a schema with no
// strict form: a map (an object whose additionalProperties is a schema)
// outside an anyOf that offers another shape.
var errNoStrictForm = errors.New("a map has no strict form")

// strictSchema returns the strict form of s, a copy: every object closed
// with all its properties required, those s does not require made
// nullable; a type list with null reduced to its other type (the null
// is the wrapper's); an anyOf with its map alternatives left out, and
// replaced by its one remaining alternative.
func strictSchema(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	c := s.CloneSchemas()
	if err := strictify(c); err != nil {
		return nil, err
	}
	return c, nil
}

func strictify(s *jsonschema.Schema) error {
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	if len(s.AnyOf) > 0 {
		var keep []*jsonschema.Schema
		for _, a := range s.AnyOf {
			if !isMap(a) {
				keep = append(keep, a)
			}
		}
		if len(keep) == 1 {
			desc := s.Description
			*s = *keep[0]
			if desc != "" {
				s.Description = desc
			}
			return strictify(s)
		}
		s.AnyOf = keep
		for _, a := range keep {
			if err := strictify(a); err != nil {
				return err
			}
		}
	}
	if isMap(s) {
		return errNoStrictForm
	}
	if s.Items != nil {
		if err := strictify(s.Items); err != nil {
			return err
		}
	}
	if s.Type != "object" {
		return nil
	}
	names := slices.Clone(s.PropertyOrder)
	for name := range s.Properties {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		p := s.Properties[name]
		if err := strictify(p); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !slices.Contains(s.Required, name) {
			s.Properties[name] = nullable(p)
		}
	}
	s.Required = names
	s.AdditionalProperties = closed()
	return nil
}

// isMap reports whether s is a free-form map: an object whose
// additionalProperties is a schema other than false.
func isMap(s *jsonschema.Schema) bool {
	return s.Type == "object" && s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties)
}

// closed is the schema false: additionalProperties of a closed object.
func closed() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

func isFalse(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}

// nullable returns s or null: anyOf [s, {"type":"null"}], s's description
// moved to the wrapper, where clients show it.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	inner := *s
	inner.Description = ""
	return &jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{&inner, {Type: "null"}}}
}
