package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/inspection"
	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]openAPISchema    `json:"schemas"`
		Parameters map[string]openAPIParameter `json:"parameters"`
		Responses  map[string]json.RawMessage  `json:"responses"`
		Security   map[string]json.RawMessage  `json:"securitySchemes"`
		Other      map[string]json.RawMessage  `json:"-"`
	} `json:"components"`
}

type openAPISchema struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

type openAPIParameter struct {
	Ref      string `json:"$ref"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

type openAPIOperation struct {
	OperationID string             `json:"operationId"`
	Parameters  []openAPIParameter `json:"parameters"`
	RequestBody json.RawMessage    `json:"requestBody"`
	Responses   map[string]any     `json:"responses"`
	Security    *[]any             `json:"security"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	return doc
}

// allRoutes is a handler with every optional route on.
func allRoutes(t *testing.T) *Handler {
	t.Helper()
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h, err := New(store, &Options{Tokens: testTokens(t), MCP: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOpenAPIMatchesRoutes: the document describes exactly the routes the
// handler registers, with the path parameters of each, and the security of
// each matches its authentication.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	h := allRoutes(t)

	var registered, documented []string
	routeAccess := map[string]access{}
	routeQuery := map[string][]string{}
	for _, rt := range h.routes {
		key := rt.method + " " + rt.path
		registered = append(registered, key)
		routeAccess[key] = rt.access
		routeQuery[key] = slices.Sorted(slices.Values(rt.query))
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	if !slices.Equal(registered, documented) {
		t.Fatalf("routes and openapi.json differ:\nonly registered: %v\nonly documented: %v",
			minus(registered, documented), minus(documented, registered))
	}

	wildcard := regexp.MustCompile(`\{([a-z_]+)\}`)
	ids := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			key := strings.ToUpper(method) + " " + path
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: operationId %q is empty or repeated", key, op.OperationID)
			}
			ids[op.OperationID] = true
			if len(op.Responses) == 0 {
				t.Errorf("%s: no responses", key)
			}
			// Every wildcard of the path is a required path parameter, and
			// there are no others.
			var want, got, query []string
			for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
				want = append(want, m[1])
			}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					name := strings.TrimPrefix(p.Ref, "#/components/parameters/")
					var ok bool
					if p, ok = doc.Components.Parameters[name]; !ok {
						t.Errorf("%s: parameter %s is not defined", key, p.Ref)
						continue
					}
				}
				if p.In == "path" {
					if !p.Required {
						t.Errorf("%s: path parameter %s is not required", key, p.Name)
					}
					got = append(got, p.Name)
				}
				if p.In == "query" {
					query = append(query, p.Name)
				}
			}
			// The query parameters documented are the ones the route
			// takes; the handler refuses others.
			if slices.Sort(query); !slices.Equal(query, routeQuery[key]) {
				t.Errorf("%s: query parameters %v documented, %v taken", key, query, routeQuery[key])
			}
			sort.Strings(want)
			sort.Strings(got)
			if !slices.Equal(want, got) {
				t.Errorf("%s: path parameters %v, want %v", key, got, want)
			}
			// security: [] marks the public routes.
			// (/metrics is public by default; its description covers
			// the token and off settings.)
			documentedPublic := op.Security != nil && len(*op.Security) == 0
			if handlerPublic := routeAccess[key] == public; documentedPublic != handlerPublic {
				t.Errorf("%s: public in openapi.json = %v, in the handler = %v", key, documentedPublic, handlerPublic)
			}
			// The admin routes, and they alone, document the 403
			// admin_required answer.
			r403, _ := op.Responses["403"].(map[string]any)
			documentedAdmin := r403["$ref"] == "#/components/responses/AdminRequired"
			if handlerAdmin := routeAccess[key] == admin; documentedAdmin != handlerAdmin {
				t.Errorf("%s: 403 admin_required in openapi.json = %v, admin in the handler = %v", key, documentedAdmin, handlerAdmin)
			}
		}
	}
}

// TestOpenAPIRefs: every $ref in the document resolves.
func TestOpenAPIRefs(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				var node any = doc
				for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, _ := node.(map[string]any)
					node = m[part]
				}
				if node == nil {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

// TestOpenAPISchemasMatchTypes: each schema has exactly the JSON fields of
// the Go type that reads or writes it, and lists as required every field a
// response always carries.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	types := map[string]struct {
		v        any
		response bool // a response: fields without omitempty are always present
	}{
		"Error":                     {errorBody{}, true},
		"ToolCall":                  {memory.ToolCall{}, false},
		"MessageInput":              {messageInput{}, false},
		"Message":                   {memory.Message{}, true},
		"FactInput":                 {factInput{}, false},
		"Fact":                      {memory.Fact{}, true},
		"AppendRequest":             {appendRequest{}, false},
		"AppendResponse":            {appendResponse{}, true},
		"MessagesResponse":          {messagesResponse{}, true},
		"WindowResponse":            {windowResponse{}, true},
		"SessionInfo":               {sessionInfo{}, true},
		"SessionsResponse":          {sessionsResponse{}, true},
		"Usage":                     {memory.Usage{}, true},
		"UserUsage":                 {memory.UserUsage{}, true},
		"UsersResponse":             {usersResponse{}, true},
		"MemoryInput":               {memoryInput{}, false},
		"Memory":                    {memory.Memory{}, true},
		"MemoriesResponse":          {memoriesResponse{}, true},
		"FactsResponse":             {factsResponse{}, true},
		"TraverseRequest":           {traverseRequest{}, false},
		"Step":                      {graph.Step{}, true},
		"Traversal":                 {traversalResponse{}, true},
		"EntityInput":               {entityInput{}, false},
		"Entity":                    {graph.Entity{}, true},
		"EntitiesRequest":           {entitiesRequest{}, false},
		"EntitiesResponse":          {entitiesResponse{}, true},
		"DeleteEntitiesRequest":     {deleteEntitiesRequest{}, false},
		"Relation":                  {graph.Relation{}, true},
		"RelationsRequest":          {relationsRequest{}, false},
		"RelationsResponse":         {relationsResponse{}, true},
		"ObservationSet":            {graph.ObservationSet{}, true},
		"ObservationInput":          {observationInput{}, false},
		"AddObservationsRequest":    {addObservationsRequest{}, false},
		"AddedObservations":         {addedObservations{}, true},
		"ObservationsResponse":      {observationsResponse{}, true},
		"DeleteObservationsRequest": {deleteObservationsRequest{}, false},
		"OpenNodesRequest":          {openNodesRequest{}, false},
		"Graph":                     {graphResponse{}, true},
		"RecallRequest":             {recallRequest{}, false},
		"RecallResponse":            {recallResponse{}, true},
		"RecallItem":                {wire.Item{}, true},
		"RecallTrace":               {wire.Trace{}, true},
		"RecallCandidate":           {wire.Candidate{}, true},
		"StatsReport":               {inspection.Report{}, true},
		"StatsRow":                  {inspection.Row{}, true},
		"StatsSession":              {inspection.Session{}, true},
		"StatsQueue":                {inspection.Queue{}, true},
		"StatsParked":               {inspection.Parked{}, true},
	}
	for name := range doc.Components.Schemas {
		if _, ok := types[name]; !ok && name != "Health" {
			t.Errorf("schema %s has no Go type in this test", name)
		}
	}
	for name, tt := range types {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		fields, always := jsonFields(reflect.TypeOf(tt.v))
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		sort.Strings(fields)
		sort.Strings(props)
		if !slices.Equal(fields, props) {
			t.Errorf("schema %s: properties %v, Go fields %v", name, props, fields)
		}
		if tt.response {
			for _, f := range always {
				if !slices.Contains(schema.Required, f) {
					t.Errorf("schema %s: %s is always present but not required", name, f)
				}
			}
		}
		for _, r := range schema.Required {
			if !slices.Contains(fields, r) {
				t.Errorf("schema %s: required %s is not a field", name, r)
			}
		}
	}
}

// jsonFields returns the JSON names of t's fields, embedded structs
// flattened, and those without omitempty or omitzero.
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			a, b := jsonFields(f.Type)
			all, always = append(all, a...), append(always, b...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	return all, always
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestOpenAPIRecallSources checks every enum of recall sources in the
// document against memory.Sources, so a new source (a row of memory's
// source table) cannot leave the API's description behind.
func TestOpenAPIRecallSources(t *testing.T) {
	var doc any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range memory.Sources() {
		want = append(want, string(s))
	}
	found := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if enum, ok := v["enum"].([]any); ok && slices.Contains(enum, any(string(memory.SourceGraph))) {
				found++
				var got []string
				for _, e := range enum {
					s, _ := e.(string)
					got = append(got, s)
				}
				if !slices.Equal(got, want) {
					t.Errorf("source enum %v, want %v (memory.Sources)", got, want)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	if found < 3 {
		t.Errorf("found %d source enums, want the query's and both item schemas'", found)
	}
}
