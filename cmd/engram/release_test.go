package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"text/template"
)

// goreleaserConfig is the release configuration at the repository root,
// seen from this package's directory.
const goreleaserConfig = "../../.goreleaser.yaml"

// TestGoreleaserCheck validates .goreleaser.yaml with goreleaser itself
// when it is installed (go install github.com/goreleaser/goreleaser/v2@latest).
func TestGoreleaserCheck(t *testing.T) {
	bin, err := exec.LookPath("goreleaser")
	if err != nil {
		t.Skip("goreleaser is not on PATH: .goreleaser.yaml is not checked (go install github.com/goreleaser/goreleaser/v2@latest to check it)")
	}
	cmd := exec.Command(bin, "check", "--config", filepath.Base(goreleaserConfig))
	cmd.Dir = filepath.Dir(goreleaserConfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// TestVersionStamped builds the binary with the ldflags of
// .goreleaser.yaml, filled in as goreleaser fills them for the tag v1.2.3,
// and checks what engram --version and engram version print.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the engram binary; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH to build the binary with")
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	ldflags := releaseLdflags(t, map[string]string{
		"Version": "1.2.3", "Tag": "v1.2.3", "RawVersion": "1.2.3",
		"FullCommit": commit, "Commit": commit, "ShortCommit": commit[:7],
		"Date": "2026-11-28T12:00:00Z", "CommitDate": "2026-11-28T12:00:00Z",
	})
	bin := filepath.Join(t.TempDir(), "engram")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command(goBin, "build", "-ldflags", ldflags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	want := "engram v1.2.3 (commit 0123456789ab) " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("engram %s = %q, %v; want %q", strings.Join(args, " "), out, err, want)
		}
	}
	// The MCP server reports the same version in its serverInfo.
	mcp := exec.Command(bin, "mcp", "--dir", filepath.Join(t.TempDir(), "store"))
	mcp.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n")
	out, err := mcp.Output()
	if err != nil || !strings.Contains(string(out), `"serverInfo":{"name":"engram","title":"Engram","version":"v1.2.3"}`) {
		t.Errorf("engram mcp initialize = %s, %v; want serverInfo version v1.2.3", out, err)
	}
}

// releaseLdflags returns the ldflags list of .goreleaser.yaml joined by
// spaces, its templates executed over fields.
func releaseLdflags(t *testing.T, fields map[string]string) string {
	t.Helper()
	f, err := os.Open(goreleaserConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var flags []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "ldflags:":
			in = true
		case in && strings.HasPrefix(line, "- "):
			flags = append(flags, strings.Trim(strings.TrimPrefix(line, "- "), `"'`))
		case in:
			in = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(flags) == 0 {
		t.Fatalf("%s has no ldflags list", goreleaserConfig)
	}
	tmpl, err := template.New("ldflags").Option("missingkey=error").Parse(strings.Join(flags, " "))
	if err != nil {
		t.Fatalf("ldflags of %s: %v", goreleaserConfig, err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, fields); err != nil {
		t.Fatalf("ldflags of %s: %v", goreleaserConfig, err)
	}
	return b.String()
}
