package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

func TestRecallCommand(t *testing.T) {
	dir := seedStore(t)
	out := mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--session", "billing",
		"--sources", "memories,episodes,graph", "--top-k", "5", "--trace", "Who", "is", "Alice's", "renewal", "owner?")
	for _, want := range []string{
		`Context for "Who is Alice's renewal owner?": 2 messages`,
		"[system]\nContext recalled from memory",
		"Alice —renewal owner→ Dana",
		"[user]\nSend invoices to billing@alice.example, please.", // the session's window
		"Trace (entities named: Alice;",
		"rank  source", "graph", "yes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("recall output lacks %q:\n%s", want, out)
		}
	}
	// Without --sources, Recall's defaults: episodes too, so the renewal
	// session's message reaches the billing session.
	out = mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--session", "billing", "--trace", "Who owns my renewal?")
	if !strings.Contains(out, "My renewal owner is Dana.") || !strings.Contains(out, "episodes") {
		t.Errorf("recall with the default sources lacks the earlier session's message:\n%s", out)
	}

	// JSON: the messages, then the items and the trace in the shape of
	// wire.Recall, as the HTTP API and the MCP recall tool write them.
	out = mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--json", "account number")
	var res struct {
		Messages []memory.Message `json:"messages"`
		wire.Recall
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("recall --json: %v\n%s", err, out)
	}
	if len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Content, "Alice's account number is 3942") || res.Trace.TokensUsed == 0 {
		t.Errorf("recall --json: %+v", res)
	}
	var kept int
	for _, c := range res.Trace.Candidates {
		if c.Kept {
			kept++
		}
	}
	if len(res.Items) == 0 || kept != len(res.Items) || res.Items[0].Memory == nil {
		t.Errorf("recall --json: %d items (first %+v), %d kept candidates", len(res.Items), res.Items, kept)
	}
	var top, trace map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(top["trace"], &trace); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"messages", "items", "trace"} {
		if top[k] == nil {
			t.Errorf("recall --json lacks %q:\n%s", k, out)
		}
	}
	for _, k := range []string{"entities", "lists", "candidates", "budget", "window_tokens", "summary_tokens",
		"preamble_tokens", "tokens_used", "took_ms", "embed_ms"} {
		if trace[k] == nil {
			t.Errorf("recall --json trace lacks %q:\n%s", k, out)
		}
	}
	// A user with nothing to recall gets an empty context, not an error.
	out = mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "nobody", "anything")
	if !strings.Contains(out, "nothing recalled") {
		t.Errorf("recall for an unknown user:\n%s", out)
	}
}

func TestRecallErrors(t *testing.T) {
	dir := seedStore(t)
	base := []string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no user", []string{"recall", "--dir", dir, "--tenant", "acme", "hi"}, []string{`"user" not set`}},
		{"no text", base, []string{"requires at least 1 arg"}},
		{"blank text", append(base, " "), []string{"the text is empty"}},
		{"bad source", append(base, "--sources", "memories,dreams", "hi"), []string{`unknown source "dreams"`}},
		{"bad budget", append(base, "--max-tokens", "0", "hi"), []string{"--max-tokens 0"}},
		{"bad top-k", append(base, "--top-k", "-1", "hi"), []string{"--top-k -1"}},
		{"budget too small", append(base, "--session", "renewal", "--max-tokens", "10", "hi"), []string{"recall:", "exceed"}},
		{"no store", []string{"recall", "--dir", t.TempDir(), "--tenant", "acme", "--user", "alice", "hi"}, []string{"no store in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.want, tt.args...) })
	}
}

// TestRecallOnlyTenant: without --tenant, recall uses the store's only
// tenant, as ui does; with several it names them and asks for one. Fails
// with --tenant required again.
func TestRecallOnlyTenant(t *testing.T) {
	dir := t.TempDir()
	remember := func(tenant, user, text string) {
		t.Helper()
		st, err := memory.Open(dir, &memory.Options{Extraction: memory.ExtractOff})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Remember(context.Background(), memory.Scope{Tenant: tenant, User: user}, memory.Memory{Kind: memory.KindFact, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	remember("acme", "alice", "Alice's renewal owner is Dana")
	out := mustRun(t, "recall", "--dir", dir, "--user", "alice", "Who owns my renewal?")
	if !strings.Contains(out, "Dana") {
		t.Fatalf("recall without --tenant on a store of one tenant:\n%s", out)
	}
	remember("globex", "bob", "Bob likes tea")
	wantError(t, []string{"several tenants", "acme", "globex", "--tenant"}, "recall", "--dir", dir, "--user", "alice", "hi")
	wantError(t, []string{`User "bad/user"`}, "recall", "--dir", dir, "--user", "bad/user", "hi")
}
