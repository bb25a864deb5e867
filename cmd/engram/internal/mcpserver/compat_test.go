package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// compatScript is testdata/compat_script.json.
type compatScript struct {
	// Reference is the npm package (pinned, so that a new release cannot
	// change the test's outcome; ENGRAM_COMPAT_REFERENCE overrides it).
	Reference string `json:"reference"`
	Steps     []struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		// Error is "" when the call must succeed, "exact" when it must fail
		// with the reference's message, "any" when it must fail (the two
		// SDKs word validation errors differently).
		Error string `json:"error"`
	} `json:"steps"`
}

// memoryTools are the reference server's tools.
var memoryTools = []string{
	"create_entities", "create_relations", "add_observations", "delete_entities",
	"delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
}

// TestCompatibility runs testdata/compat_script.json against Engram and
// against the reference memory server (@modelcontextprotocol/server-memory,
// run with npx), and requires the same answer to every call: the same
// structured content and the same text (up to the order of entities and
// relations in a graph, which the reference keeps in insertion order and
// Engram in name order), the same tool errors. It also compares the nine
// tools' definitions: titles, annotations, and input and output schemas,
// which must be equal except for read_graph's paging additions.
func TestCompatibility(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "compat_script.json"))
	if err != nil {
		t.Fatal(err)
	}
	var script compatScript
	if err := json.Unmarshal(b, &script); err != nil {
		t.Fatalf("compat_script.json: %v", err)
	}
	ref := startReference(t, script.Reference)
	eng := connect(t, NewServer(openStore(t), fixed(testScope)))

	t.Run("tools", func(t *testing.T) { compareTools(t, ref, eng) })

	var graphs, exact int
	for i, step := range script.Steps {
		t.Run(fmt.Sprintf("%02d_%s", i+1, step.Tool), func(t *testing.T) {
			want := call(t, ref, step.Tool, step.Arguments)
			got := call(t, eng, step.Tool, step.Arguments)
			switch {
			case want.IsError != (step.Error != ""):
				t.Fatalf("the reference answered error=%v (%s): the script expects error %q", want.IsError, text(want), step.Error)
			case got.IsError != want.IsError:
				t.Fatalf("Engram answered error=%v (%s), the reference error=%v (%s)", got.IsError, text(got), want.IsError, text(want))
			case want.IsError:
				if step.Error == "exact" && text(got) != text(want) {
					t.Errorf("error %q, the reference's %q", text(got), text(want))
				}
				return
			}
			if g, w := canonical(t, got.StructuredContent), canonical(t, want.StructuredContent); g != w {
				t.Errorf("structured content differs:\nEngram    %s\nreference %s", g, w)
			}
			same := text(got) == text(want)
			if !same && textCanonical(t, got) != textCanonical(t, want) {
				t.Errorf("text differs:\nEngram    %s\nreference %s", text(got), text(want))
			}
			if same {
				exact++
			}
			if step.Tool == "read_graph" || step.Tool == "search_nodes" || step.Tool == "open_nodes" {
				graphs++
				var g testGraph
				_ = remarshal(got.StructuredContent, &g)
				t.Logf("%s(%s): %d entities, %d relations, equal (text byte-identical: %v)",
					step.Tool, step.Arguments, len(g.Entities), len(g.Relations), same)
			}
		})
	}
	t.Logf("%d calls against %s: every result equal; %d graph reads compared; %d texts byte-identical",
		len(script.Steps), script.Reference, graphs, exact)
}

// startReference starts the reference server with npx, on a memory file in
// a temporary directory. It skips the test in -short mode, without Node.js,
// and when npm cannot reach the registry within 30 seconds.
func startReference(t *testing.T, pkg string) *mcp.ClientSession {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: runs the reference memory server from npm")
	}
	if p := os.Getenv("ENGRAM_COMPAT_REFERENCE"); p != "" {
		pkg = p
	}
	for _, bin := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipped: %s is not installed (%v); install Node.js to compare with %s", bin, err, pkg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "npm", "view", pkg, "version").CombinedOutput(); err != nil {
		t.Skipf("skipped: npm cannot reach the registry for %s within 30s (%v): %s", pkg, err, bytes.TrimSpace(out))
	}

	cmd := exec.Command("npx", "-y", pkg)
	cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute) // a first run downloads the package
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "engram-compat", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start %s: %v\n%s", pkg, err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// syncBuffer is a bytes.Buffer safe to write from the goroutine exec copies
// stderr in, and read from the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// canonical returns v as JSON with map keys sorted and the entities and
// relations of every graph in name order.
func canonical(t *testing.T, v any) string {
	t.Helper()
	var generic any
	if err := remarshal(v, &generic); err != nil {
		t.Fatalf("canonical %v: %v", v, err)
	}
	sortGraphs(generic)
	b, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// textCanonical is canonical of a result's text when it is JSON, and the
// text itself otherwise.
func textCanonical(t *testing.T, res *mcp.CallToolResult) string {
	var v any
	if err := json.Unmarshal([]byte(text(res)), &v); err != nil {
		return text(res)
	}
	return canonical(t, v)
}

func sortGraphs(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			sortGraphs(x)
			list, ok := x.([]any)
			if !ok {
				continue
			}
			switch k {
			case "entities":
				slices.SortStableFunc(list, func(a, b any) int { return cmp.Compare(field(a, "name"), field(b, "name")) })
			case "relations":
				slices.SortStableFunc(list, func(a, b any) int {
					return cmp.Or(cmp.Compare(field(a, "from"), field(b, "from")),
						cmp.Compare(field(a, "relationType"), field(b, "relationType")),
						cmp.Compare(field(a, "to"), field(b, "to")))
				})
			}
		}
	case []any:
		for _, x := range v {
			sortGraphs(x)
		}
	}
}

func field(v any, name string) string {
	m, _ := v.(map[string]any)
	s, _ := m[name].(string)
	return s
}

// compareTools compares the definitions of the nine tools.
func compareTools(t *testing.T, ref, eng *mcp.ClientSession) {
	list := func(cs *mcp.ClientSession) map[string]*mcp.Tool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			m[tool.Name] = tool
		}
		return m
	}
	refTools, engTools := list(ref), list(eng)
	for _, name := range memoryTools {
		r, e := refTools[name], engTools[name]
		if r == nil || e == nil {
			t.Errorf("%s: reference has it: %v, Engram: %v", name, r != nil, e != nil)
			continue
		}
		if e.Title != r.Title || !strings.HasPrefix(e.Description, r.Description) {
			t.Errorf("%s: title %q, description %q; the reference's %q, %q", name, e.Title, e.Description, r.Title, r.Description)
		}
		if g, w := canonical(t, e.Annotations), canonical(t, r.Annotations); g != w {
			t.Errorf("%s: annotations %s, the reference's %s", name, g, w)
		}
		for _, s := range []struct {
			what     string
			got      any
			want     any
			paging   []string // Engram's additions to read_graph
			required bool
		}{
			{what: "input schema", got: e.InputSchema, want: r.InputSchema, paging: []string{"cursor", "limit"}},
			{what: "output schema", got: e.OutputSchema, want: r.OutputSchema, paging: []string{"nextCursor"}},
		} {
			var got, want map[string]any
			if err := remarshal(s.got, &got); err != nil {
				t.Fatalf("%s %s: %v", name, s.what, err)
			}
			if err := remarshal(s.want, &want); err != nil {
				t.Fatalf("%s %s: %v", name, s.what, err)
			}
			delete(want, "$schema")
			if name == "read_graph" {
				props, _ := got["properties"].(map[string]any)
				for _, p := range s.paging {
					if _, ok := props[p]; !ok {
						t.Errorf("read_graph %s lacks %q", s.what, p)
					}
					delete(props, p)
				}
			}
			if g, w := canonical(t, got), canonical(t, want); g != w {
				t.Errorf("%s %s differs:\nEngram    %s\nreference %s", name, s.what, g, w)
			}
		}
	}
}
