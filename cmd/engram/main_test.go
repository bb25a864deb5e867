package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestErrorChainsOnce: the errors of the embedder flags, as engram prints
// them, name each package prefix and each path once, and name the flag to
// fix. Before, a missing model file printed "engram: --embedder static:
// embed: model file nope/config.json: embed: invalid model: open
// nope/config.json: no such file or directory", and --embedder ollama
// without --embed-model "embed: invalid options: Model is required".
func TestErrorChainsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if st, err := memory.Open(dir, nil); err != nil {
		t.Fatal(err)
	} else if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	notJSON := t.TempDir()
	if err := os.WriteFile(filepath.Join(notJSON, "config.json"), []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	t.Setenv(apiKeyEnv, "")
	// An Ollama server without the model answers 404.
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"model \"nomic\" not found, try pulling it first"}`, http.StatusNotFound)
	}))
	defer ollama.Close()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"ollama without the model", []string{"--embedder", "ollama", "--embed-url", ollama.URL + "/api", "--embed-model", "nomic"},
			[]string{`embed ollama: text 0: unknown model: the server has no model "nomic" (ollama pull nomic)`, "check --embed-model nomic"}},
		{"missing model file", []string{"--embedder", "static", "--model-dir", missing},
			[]string{"engram: --embedder static: embed: model file " + filepath.Join(missing, "config.json") + ": invalid model: no such file"}},
		{"malformed model file", []string{"--embedder", "static", "--model-dir", notJSON},
			[]string{"model file " + filepath.Join(notJSON, "config.json") + ": not a JSON object: invalid model"}},
		{"ollama without a model", []string{"--embedder", "ollama"}, []string{"--embedder ollama needs --embed-model"}},
		{"openai without a model", []string{"--embedder", "openai"}, []string{"--embedder openai needs --embed-model"}},
		{"openai without a key", []string{"--embedder", "openai", "--embed-model", "m"}, []string{"--embedder openai needs $" + apiKeyEnv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "x"}, tc.args...)
			_, err := runCLI(t, args...)
			if err == nil {
				t.Fatal("no error")
			}
			line := errorLine(err)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
			for _, p := range []string{"engram: ", "embed: ", "memory: ", "engine: ", "kv: "} {
				if n := strings.Count(line, p); n > 1 {
					t.Errorf("%q names %q %d times", line, p, n)
				}
			}
			for _, path := range []string{missing, notJSON} {
				if n := strings.Count(line, path); n > 1 {
					t.Errorf("%q names %s %d times", line, path, n)
				}
			}
		})
	}
}
