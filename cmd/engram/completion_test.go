package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// TestCompletionFlagValues: every command that has a flag of the table
// completes it with the table's values, and the flags the issue names are
// found on the commands that take them (a row that matched nothing would
// pass the loop silently).
func TestCompletionFlagValues(t *testing.T) {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, v := range flagValues() {
			if c.Flags().Lookup(v.flag) == nil || v.cmd != "" && v.cmd != c.Name() {
				continue
			}
			path := strings.Fields(c.CommandPath())[1:] // without "engram"
			args := append(append([]string{"__complete"}, path...), "--"+v.flag, "")
			out := mustRun(t, args...)
			if want := strings.Join(v.values, "\n") + "\n:4\n"; !strings.HasPrefix(out, want) {
				t.Errorf("engram %s --%s completes:\n%s\nwant:\n%s", strings.Join(path, " "), v.flag, out, want)
			}
			seen[c.Name()+" --"+v.flag] = true
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, want := range []string{
		"serve --embedder", "mcp --embedder", "ui --embedder", "import --embedder", "recall --embedder",
		"serve --synonyms", "recall --synonyms", "serve --extract", "mcp --extract", "locomo --extract",
		"serve --durability", "import --format", "export --format", "recall --sources", "serve --metrics",
	} {
		if !seen[want] {
			t.Errorf("%s: not completed", want)
		}
	}
}
