package main

import (
	"strings"
	"testing"
)

// TestCompletion checks cobra's completion command for every shell, and
// the completions of the flags that take fixed values.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "# bash completion V2 for engram",
		"zsh":        "#compdef engram",
		"fish":       "# fish completion for engram",
		"powershell": "# powershell completion for engram",
	} {
		if out := mustRun(t, "completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	out := mustRun(t, "__complete", "recall", "--sources", "")
	if !strings.Contains(out, "memories\nshared\nepisodes\ngraph\n") {
		t.Errorf("completion of --sources:\n%s", out)
	}
	out = mustRun(t, "__complete", "export", "--format", "")
	if !strings.Contains(out, "jsonl\nnquads\ndir\n") {
		t.Errorf("completion of --format:\n%s", out)
	}
	out = mustRun(t, "__complete", "")
	for _, cmd := range []string{"import", "export", "recall", "inspect", "backup", "restore", "completion"} {
		if !strings.Contains(out, cmd+"\t") {
			t.Errorf("command completion lacks %s:\n%s", cmd, out)
		}
	}
}
