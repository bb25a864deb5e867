package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Helpers shared by the tests of the commands that open a store.

// runCLIIO runs the command line with stdin, and returns what it wrote to
// standard output and standard error apart.
func runCLIIO(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetIn(stdin)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// mustRun runs the command line and fails the test on an error.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("engram %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// wantError runs the command line and fails the test unless it fails with
// an error that holds every one of want.
func wantError(t *testing.T, want []string, args ...string) {
	t.Helper()
	out, err := runCLI(t, args...)
	if err == nil {
		t.Fatalf("engram %s succeeded, want an error:\n%s", strings.Join(args, " "), out)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("engram %s: error %q lacks %q", strings.Join(args, " "), err, w)
		}
	}
}

// seedStore builds a store in a new directory: tenant acme with alice (two
// sessions, one with tool calls; memories, one updated; a graph), bob (a
// session and a memory) and a shared memory and graph; tenant globex with
// carol. It returns the directory, closed.
func seedStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	// Extraction off: the counts the tests check are of what is written
	// here, not of what an extractor would add (and when).
	st, err := memory.Open(dir, &memory.Options{SingleValued: []string{"renewal_owner"}, Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	alice := memory.Scope{Tenant: "acme", User: "alice"}
	renewal := memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"}
	var b memory.Batch
	b.Append(renewal,
		memory.Message{Role: memory.RoleSystem, Content: "You are Acme's support agent."},
		memory.Message{Role: memory.RoleUser, Content: "My name is Alice. My renewal owner is Dana.", Name: "alice"},
	)
	b.Relate(renewal, memory.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	b.Append(renewal,
		memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "call_1", Name: "lookup_account", Arguments: json.RawMessage(`{"customer": "Alice"}`)}}},
		memory.Message{Role: memory.RoleTool, ToolCallID: "call_1", Name: "lookup_account", Content: `{"account":"3942"}`, Metadata: map[string]string{"latency_ms": "12"}},
		memory.Message{Role: memory.RoleAssistant, Content: "Account 3942 renews on 1 December 2026."},
	)
	if _, err := st.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := st.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "billing"}).Append(ctx,
		memory.Message{Role: memory.RoleUser, Content: "Send invoices to billing@alice.example, please."}); err != nil {
		t.Fatal(err)
	}
	id, err := st.Remember(ctx, alice, memory.Memory{Kind: memory.KindPreference, Text: "Alice wants invoices sent to alice@example.com", Tags: []string{"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateMemory(ctx, alice, id, memory.Memory{Text: "Alice wants invoices sent to billing@alice.example", Tags: []string{"billing"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remember(ctx, memory.Scope{Tenant: "acme", User: "alice", Agent: "crm"}, memory.Memory{Text: "Alice's account number is 3942", Importance: 0.9, Metadata: map[string]string{"source": "crm"}}); err != nil {
		t.Fatal(err)
	}
	bob := memory.Scope{Tenant: "acme", User: "bob"}
	if err := st.Session(memory.Scope{Tenant: "acme", User: "bob", Session: "b1"}).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "Hi, Bob here."}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remember(ctx, bob, memory.Memory{Kind: memory.KindObservation, Text: "Bob asks for short answers"}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateGraph(ctx, bob, func(g *graph.Tx) error {
		_, err := g.CreateEntities([]graph.Entity{{Name: "Bob", Type: "person", Observations: []string{"likes \"quotes\"\nand new lines"}}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	shared := memory.Scope{Tenant: "acme"}
	if _, err := st.Remember(ctx, shared, memory.Memory{Text: "Acme's office closes at six"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Relate(ctx, shared, memory.Fact{Subject: "Acme", Predicate: "located_in", Object: "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Session(memory.Scope{Tenant: "globex", User: "carol", Session: "c1"}).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "Carol here."}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
