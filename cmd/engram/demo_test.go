package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestDemo(t *testing.T) {
	out, err := runCLI(t, "demo")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"✓  4  user",                   // the Dana message is in the default window
		"My renewal owner is Dana.",    // with its text
		"[trimmed, oldest first]",      // the budget trimmed the oldest turns
		"[dropped with its tool pair]", // the tight window shows the pairing rule
		"[system, always kept]",
		`"Who owns my renewal?" is answered inside the window`,
		// Extraction, not the demo, formed the fact and the memories, each
		// from its message.
		"no Remember or Relate",
		"entity  Dana [person]",
		"fact    alice —renewal_owner→ Dana",
		"from message #4 ",
		"memory  (preference) alice prefers email over phone calls",
		"memory  (episode) alice met Dana at the Lisbon office",
		"from message #12 ",
		// Recall in a new session, with its default sources, brings the
		// fact back through the user's own entity ("my"), with a trace.
		`A new session, "follow-up"`,
		"- alice —renewal owner→ Dana",
		"(preference) alice prefers email over phone calls",
		"My name is Alice. My renewal owner is Dana.",
		"Trace (entities named: alice;",
		"no: in window",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestDemoKeepsDir(t *testing.T) {
	dir := t.TempDir()
	for range 2 { // a second run over the same directory starts afresh
		if out, err := runCLI(t, "demo", "--dir", dir); err != nil {
			t.Fatalf("demo --dir: %v\n%s", err, out)
		}
	}
	st, err := memory.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.Session(demoScope).Messages(context.Background(), memory.MessagesOptions{})
	if err != nil || len(msgs) != len(demoConversation()) {
		t.Fatalf("kept store holds %d messages, %v; want %d", len(msgs), err, len(demoConversation()))
	}
}

func TestDemoTinyBudget(t *testing.T) {
	out, err := runCLI(t, "demo", "--max-tokens", "60")
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if !strings.Contains(out, "the Dana message was trimmed") {
		t.Errorf("a tiny budget should report the Dana message trimmed:\n%s", out)
	}
	if _, err := runCLI(t, "demo", "--max-tokens", "5"); err == nil {
		t.Error("a budget below the system prompt should fail")
	}
}
