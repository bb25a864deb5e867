package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/engramdb/engram/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testScope = memory.Scope{Tenant: "acme", User: "alice", Session: "s1"}

// openStore opens an in-memory store closed at the end of the test.
func openStore(t testing.TB) *memory.Store {
	t.Helper()
	st, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func fixed(sc memory.Scope) func(context.Context) (memory.Scope, error) {
	return func(context.Context) (memory.Scope, error) { return sc, nil }
}

// connect serves srv over the SDK's in-memory transport and returns a
// client session closed at the end of the test.
func connect(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "engram-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and fails the test on a protocol error (a tool error
// is returned, in the result).
func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured content
// into out (when out is not nil).
func ok(t testing.TB, cs *mcp.ClientSession, name string, args, out any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%s): tool error: %s", name, mustJSON(args), text(res))
	}
	if out != nil {
		if err := remarshal(res.StructuredContent, out); err != nil {
			t.Fatalf("%s: structured content: %v", name, err)
		}
	}
	return res
}

// fails calls a tool that must fail with a tool error whose text holds
// want, and returns the text.
func fails(t testing.TB, cs *mcp.ClientSession, name string, args any, want string) string {
	t.Helper()
	res := call(t, cs, name, args)
	msg := text(res)
	if !res.IsError {
		t.Fatalf("%s(%s) succeeded, want a tool error: %s", name, mustJSON(args), msg)
	}
	if !strings.Contains(msg, want) {
		t.Fatalf("%s(%s) error %q, want it to contain %q", name, mustJSON(args), msg, want)
	}
	return msg
}

// text returns the text of a result's content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func remarshal(in, out any) error {
	if in == nil {
		return errors.New("none")
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
