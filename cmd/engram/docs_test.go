package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// A shell block in the README or a page of docs/ is a fenced block whose
// info string is "sh". TestDocsShellSnippets runs every such block, in
// the order of its page, unless the line before its fence is a
// notRunMarker saying why it cannot run offline (a network, a model
// server, PostgreSQL, the benchmark data, a server that runs until it is
// stopped). A new block is therefore run by default.
const notRunMarker = "<!-- not run: "

// docsPrelude stands in for what a reader's machine has and a test's
// temporary directory does not: the clone (git clone makes an empty
// folder, since the test runs inside the clone it would fetch) and the
// commands go runs in it (go install and go run build and run this
// clone's cmd/engram; go test is the run this test belongs to, so it is
// not started again; any other go command fails the page).
const docsPrelude = `set -euo pipefail
git() {
  if [ "$1" = clone ]; then mkdir -p "$(basename "$2" .git)"; return; fi
  command git "$@"
}
go() {
  case "$1 ${2:-}" in
  "install ./cmd/engram") (cd "$ENGRAM_REPO" && command go build -o "$ENGRAM_GOPATH/bin/engram" ./cmd/engram) ;;
  "run ./cmd/engram") shift 2; engram "$@" ;;
  "env GOPATH") echo "$ENGRAM_GOPATH" ;;
  "test "*) echo "(go test: the run that runs this page)" ;;
  *) echo "docs test: no stand-in for: go $*" >&2; return 1 ;;
  esac
}
`

// docsPages is what each page's blocks must print when they run: the
// walk-through reached what the page says it reaches. A page with shell
// blocks that is not listed fails the test, so that a page is checked for
// what it shows, not only for exit statuses.
var docsPages = map[string][]string{
	"README.md": {
		"Extraction formed from it", // the demo
		"engram ",                   // engram version
		"(preference) Alice wants to be contacted by email, not phone", // the recall
	},
	"docs/install.md": {"engram "},
	"docs/storage.md": {"restored data.backup", "alice"},
	"docs/mcp.md":     {`"serverInfo"`, `"name":"search_nodes"`, `"name":"remember"`},
	"docs/server.md": {
		"Alice —renewal owner→ Dana",
		"(preference) Alice wants to be contacted by email, not phone",
		"Shared memories:", // a recall with "shared": true
	},
	"docs/cli.md": {
		"alice.nq",             // export's users folder
		"Who owns my renewal?", // recall --trace, from the imported copy
		"restored data.backup", // backup and restore
	},
}

// docsBlock is one shell block of a page.
type docsBlock struct {
	line   int    // of its opening fence
	script string // its lines
	skip   string // why it is not run; "" to run it
}

// readDocsBlocks returns the shell blocks of a Markdown file.
func readDocsBlocks(t *testing.T, path string) []docsBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []docsBlock
		cur    *docsBlock
		prev   string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "```sh":
			cur = &docsBlock{line: n}
			if reason, ok := strings.CutPrefix(prev, notRunMarker); ok {
				cur.skip = strings.TrimSuffix(reason, " -->")
			}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a shell block is never closed", path, cur.line)
	}
	return blocks
}

// TestDocsShellSnippets keeps the shell walk-throughs of the README and
// docs/ honest: each page's runnable blocks run in order in one bash, in a
// temporary directory, with a freshly built engram first on PATH and a
// free port in place of 7437, and must exit 0 and print what docsPages
// expects. The README's blocks are what a new user copies, from the
// demo to a recalled memory.
func TestDocsShellSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds engram and runs the docs' commands; skipped with -short")
	}
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the docs' shell snippets need %s on PATH (.ci/run installs it under CI): %v", tool, err)
		}
	}
	repo, pages := docsPagesOf(t)
	gopath := t.TempDir()
	bin := filepath.Join(gopath, "bin", "engram")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, page := range pages {
		rel, _ := filepath.Rel(repo, page)
		blocks := readDocsBlocks(t, page)
		t.Run(rel, func(t *testing.T) { runDocsPage(t, repo, gopath, rel, blocks) })
	}
}

// runDocsPage runs a page's runnable blocks as one script.
func runDocsPage(t *testing.T, repo, gopath, rel string, blocks []docsBlock) {
	var script strings.Builder
	script.WriteString(docsPrelude)
	ran := 0
	for _, b := range blocks {
		if b.skip != "" {
			continue
		}
		fmt.Fprintf(&script, "echo '### %s:%d' >&2\n%s", rel, b.line, b.script)
		ran++
	}
	want, listed := docsPages[rel]
	switch {
	case ran == 0 && !listed:
		return
	case ran == 0:
		t.Fatalf("docsPages expects output from %s, which has no runnable shell block", rel)
	case !listed:
		t.Fatalf("%s has %d runnable shell blocks: add what they must print to docsPages", rel, ran)
	}
	port := freePort(t)
	text := strings.ReplaceAll(script.String(), "127.0.0.1:7437", "127.0.0.1:"+port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(gopath, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ENGRAM_GOPATH="+gopath, "ENGRAM_REPO="+repo)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Files, not pipes: a server a page leaves running in the background
	// keeps its output open, and Wait would wait for it.
	outFile := filepath.Join(t.TempDir(), "stdout")
	errFile := filepath.Join(t.TempDir(), "stderr")
	err := runToFiles(cmd, outFile, errFile)
	// Whatever a page started in the background (serve) ends with it.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	stdout, _ := os.ReadFile(outFile)
	stderr, _ := os.ReadFile(errFile)
	if err != nil {
		t.Fatalf("the shell blocks of %s failed: %v\nstdout:\n%s\nstderr:\n%s", rel, err, stdout, lastLines(string(stderr), 40))
	}
	for _, s := range want {
		if !bytes.Contains(stdout, []byte(s)) {
			t.Errorf("%s's shell blocks did not print %q; stdout:\n%s", rel, s, stdout)
		}
	}
}

// runToFiles runs cmd with its standard output and error going to the
// files named.
func runToFiles(cmd *exec.Cmd, outFile, errFile string) error {
	out, err := os.Create(outFile)
	if err != nil {
		return err
	}
	defer out.Close()
	errOut, err := os.Create(errFile)
	if err != nil {
		return err
	}
	defer errOut.Close()
	cmd.Stdout, cmd.Stderr = out, errOut
	return cmd.Run()
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// docsPagesOf returns the repository's root and its Markdown pages: the
// README, then docs/*.md.
func docsPagesOf(t *testing.T) (repo string, pages []string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return repo, append([]string{filepath.Join(repo, "README.md")}, docs...)
}

// TestDocsLinks checks that every relative link of the README and docs/
// names a file that exists and, with a #fragment, a heading of that file.
func TestDocsLinks(t *testing.T) {
	repo, pages := docsPagesOf(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, page)
		for _, m := range link.FindAllStringSubmatch(stripCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if _, serr := os.Stat(path); serr == nil {
					continue // a folder or an image
				}
				t.Errorf("%s: link %s: %v", rel, target, err)
				continue
			}
			if frag != "" && !hasAnchor(string(body), frag) {
				t.Errorf("%s: link %s: no heading with that anchor in %s", rel, target, file)
			}
		}
	}
}

// stripCode removes fenced code blocks, whose brackets are not links.
func stripCode(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// hasAnchor reports whether a Markdown text has a heading whose GitHub
// anchor is frag: lower case, spaces to hyphens, punctuation but - and _
// dropped.
func hasAnchor(md, frag string) bool {
	for _, line := range strings.Split(stripCode(md), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				a.WriteRune(r)
			}
		}
		if a.String() == frag {
			return true
		}
	}
	return false
}
