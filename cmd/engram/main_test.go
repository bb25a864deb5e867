package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestErrorLineOnePrefix: what engram prints for a failed command starts
// with one "engram: " and repeats it nowhere, however the error was
// wrapped on its way up. Before, a locked store printed "engram: mcp:
// engram: store is locked by another process".
func TestErrorLineOnePrefix(t *testing.T) {
	dir := t.TempDir()
	st, err := memory.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, lockedErr := runMCPCLI(t, strings.NewReader(""), "mcp", "--dir", dir)
	if !errors.Is(lockedErr, memory.ErrLocked) {
		t.Fatalf("engram mcp on a held store: %v", lockedErr)
	}
	_, scopeErr := runCLI(t, "export", "--dir", dir, "--tenant", "acme", "--user", "..")
	if !errors.Is(scopeErr, memory.ErrInvalidScope) {
		t.Fatalf("export --user ..: %v", scopeErr)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"locked store through mcp", lockedErr, "engram: mcp: store is locked"},
		{"invalid scope", scopeErr, "engram: invalid scope: User"},
		{"plain", errors.New("--dir is required"), "engram: --dir is required"},
		{"joined", errors.Join(fmt.Errorf("a: %w", memory.ErrInvalidScope), fmt.Errorf("b: %w", memory.ErrClosed)),
			"engram: a: invalid scope\nb: closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorLine(tc.err)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("errorLine = %q, want it to start with %q", got, tc.want)
			}
			if n := strings.Count(got, "engram:"); n != 1 {
				t.Errorf("errorLine = %q: %d prefixes", got, n)
			}
		})
	}
}
