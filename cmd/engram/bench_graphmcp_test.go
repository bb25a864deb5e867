package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchGraphMCP runs bench graph-mcp at a tiny size against the
// reference server from npm: both servers take the writes and answer
// every timed call (the driver checks what each returns), and the table
// has its rows. It skips in -short mode, and with the command's own
// message without Node.js and npm or when npm cannot reach the registry.
func TestBenchGraphMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference memory server from npm; skipped with -short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipped: node is not installed")
	}
	bin := filepath.Join(t.TempDir(), "engram")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out, log bytes.Buffer
	err := runBenchGraphMCP(t.Context(), &out, &log, benchGraphMCPOptions{entities: 60, queries: 3, batch: 50, engram: bin})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if s := out.String(); strings.HasPrefix(s, "skipped:") {
		t.Skip(s)
	}
	for _, row := range []string{"| writes (entities/s) |", "| search_nodes p50 (ms) |", "| search_nodes p99 (ms) |", "| open_nodes p50 (ms) |", "| open_nodes p99 (ms) |", "| ping p50 (ms)", "60 entities", "58 relations"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no %q in:\n%s", row, out.String())
		}
	}
}

// TestBenchGraphMCPWithoutNode: without Node.js the command says so and
// succeeds.
func TestBenchGraphMCPWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out bytes.Buffer
	if err := runBenchGraphMCP(t.Context(), &out, &out, benchGraphMCPOptions{entities: 10, queries: 1, batch: 5}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "skipped: node is not installed") {
		t.Fatalf("output %q", out.String())
	}
}
