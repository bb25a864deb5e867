package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// frameworksDir holds the agent framework snippets of docs/mcp.md
// ("Agent frameworks"), one program per client library, and the npm
// packages they use, pinned by package.json and package-lock.json.
const frameworksDir = "testdata/frameworks"

// frameworkSnippets are the programs, each with the tenant its token maps
// to in TestFrameworkSnippets.
var frameworkSnippets = []struct{ file, tenant string }{
	{"langchain.mjs", "langchain"},
	{"aisdk.mjs", "aisdk"},
	{"mastra.mjs", "mastra"},
}

// What every snippet stores and must read back over both transports.
const (
	frameworkMemory      = "(preference) Alice wants to be contacted by email, not phone"
	frameworkObservation = "renewal owner is Dana"
)

// TestFrameworkSnippets keeps docs/mcp.md's agent framework snippets
// honest: it installs the pinned LangChain.js MCP adapters, AI SDK and
// Mastra from npm (npm ci, once per lock file, into a folder under the
// temporary directory that later runs reuse), starts a real engram serve
// with one token per snippet, and runs each snippet with node against it,
// over stdio (engram mcp on a directory of the snippet's own) and over
// streamable HTTP (the bearer token and X-Engram-User). Each must list
// the tools, and read back over both transports what it remembered and
// the entity it created; the server must then hold them for user alice of
// the token's tenant, and the stdio directory for user alice, so a header
// the server ignores fails the test. It skips with a message in -short
// mode, without Node.js 20 or later and npm, and when npm cannot reach the
// registry, except under CI=true, where a node on PATH must run it.
func TestFrameworkSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("installs MCP client libraries from npm and runs them with node; skipped with -short")
	}
	modules := frameworkModules(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "engram")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tokens := map[string]string{}
	var entries []string
	for _, s := range frameworkSnippets {
		tokens[s.tenant] = "framework-" + s.tenant + "-0123456789abcdef"
		entries = append(entries, fmt.Sprintf(`{"token":%q,"tenant":%q,"name":%q}`, tokens[s.tenant], s.tenant, s.file))
	}
	tokensFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokensFile, []byte(`{"tokens":[`+strings.Join(entries, ",")+"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startEngramServe(t, bin, "--dir", filepath.Join(dir, "served"), "--tokens", tokensFile, "--addr", "127.0.0.1:0")
	for _, s := range frameworkSnippets {
		t.Run(s.file, func(t *testing.T) {
			t.Parallel()
			stdioDir := filepath.Join(t.TempDir(), "mem")
			out := runFrameworkSnippet(t, modules, s.file,
				"ENGRAM_BIN="+bin, "ENGRAM_DIR="+stdioDir,
				"ENGRAM_URL=http://"+addr+"/mcp", "ENGRAM_TOKEN="+tokens[s.tenant])
			for _, transport := range []string{"stdio", "http"} {
				checkFrameworkOutput(t, out, transport)
			}
			checkServedForAlice(t, addr, tokens[s.tenant])
			recalled, err := exec.Command(bin, "recall", "--dir", stdioDir, "--user", "alice", "phone or email?").CombinedOutput()
			if err != nil || !bytes.Contains(recalled, []byte(frameworkMemory)) {
				t.Errorf("engram recall --user alice on the stdio store (%v):\n%s", err, recalled)
			}
		})
	}
}

// TestFrameworkSnippetsInDocs checks that docs/mcp.md shows each snippet
// exactly as TestFrameworkSnippets runs it, in a js block.
func TestFrameworkSnippetsInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range frameworkSnippets {
		src, err := os.ReadFile(filepath.Join(frameworksDir, s.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, append(append([]byte("```js\n"), src...), "```\n"...)) {
			t.Errorf("docs/mcp.md does not show %s/%s verbatim in a js block", frameworksDir, s.file)
		}
	}
}

// frameworkModules returns a node_modules folder with the pinned packages
// of testdata/frameworks, installed with npm ci into a folder named for
// the hash of package.json and package-lock.json under the temporary
// directory, which later runs reuse without reaching the registry.
func frameworkModules(t *testing.T) string {
	t.Helper()
	underCI := os.Getenv("CI") == "true"
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not installed (%v); install Node.js 20 or later to run docs/mcp.md's agent framework snippets", tool, err)
		}
	}
	skip := t.Skipf
	if underCI {
		skip = t.Fatalf // node is on PATH: under CI the snippets must run
	}
	if v, err := exec.Command("node", "-p", "process.versions.node").Output(); err != nil {
		skip("node -p process.versions.node: %v", err)
	} else if major, _, _ := strings.Cut(strings.TrimSpace(string(v)), "."); atoi(major) < 20 {
		skip("node %s: the agent framework snippets need Node.js 20 or later", bytes.TrimSpace(v))
	}
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(frameworksDir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache := filepath.Join(os.TempDir(), "engram-frameworks-"+hex.EncodeToString(h.Sum(nil))[:16])
	modules := filepath.Join(cache, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		return modules
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "npm", "view", "@langchain/mcp-adapters@1.1.4", "version").CombinedOutput(); err != nil {
		skip("skipped: npm cannot reach the registry within 30s (%v): %s", err, bytes.TrimSpace(out))
	}
	// npm ci into a folder of this run's own, renamed into place when
	// complete, so that a run that stops half-way or runs beside another
	// leaves no half-installed cache.
	tmp, err := os.MkdirTemp(os.TempDir(), "engram-frameworks-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(frameworksDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = tmp
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	start := time.Now()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", frameworksDir, err, out)
	}
	t.Logf("npm ci: %s, cached in %s", time.Since(start).Round(time.Second), cache)
	if err := os.Rename(tmp, cache); err != nil {
		if _, serr := os.Stat(modules); serr != nil {
			t.Fatalf("cache the packages: %v", err)
		}
		// Another run cached the same packages first.
	}
	return modules
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// runFrameworkSnippet runs a snippet with node, from a folder whose
// node_modules links to the installed packages, and returns its standard
// output; the test fails when it exits non-zero or runs for two minutes.
func runFrameworkSnippet(t *testing.T, modules, file string, env ...string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(frameworksDir, file))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, file), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", file)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), env...)
	// The group ends with node: the engram mcp it started included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", file, err, stdout.String(), lastLines(stderr.String(), 40))
	}
	t.Logf("node %s: %s", file, time.Since(start).Round(100*time.Millisecond))
	return stdout.String()
}

// checkFrameworkOutput checks what a snippet printed for one transport:
// the tools it used among those listed, the remembered preference in the
// recalled context, and the entity search_nodes found.
func checkFrameworkOutput(t *testing.T, out, transport string) {
	t.Helper()
	// section is what follows "TRANSPORT LABEL: " up to the end of its
	// line, or with until, up to the line that starts with until.
	section := func(label, until string) string {
		_, rest, ok := strings.Cut(out, transport+" "+label+": ")
		if !ok {
			t.Errorf("no %q line for %s; output:\n%s", label, transport, out)
			return ""
		}
		text, _, _ := strings.Cut(rest, "\n"+until)
		return text
	}
	tools := section("tools", "")
	for _, name := range []string{"remember", "recall", "create_entities", "search_nodes"} {
		if !strings.Contains(", "+tools+",", " "+name+",") {
			t.Errorf("%s tools: %s, without %s", transport, tools, name)
		}
	}
	if recalled := section("recall", transport+" search_nodes: "); !strings.Contains(recalled, frameworkMemory) {
		t.Errorf("%s recall: %q, without %q", transport, recalled, frameworkMemory)
	}
	if found := section("search_nodes", ""); !strings.Contains(found, frameworkObservation) {
		t.Errorf("%s search_nodes: %q, without %q", transport, found, frameworkObservation)
	}
}

// checkServedForAlice checks, over the HTTP API, that the server holds the
// snippet's memory and entity for user alice of the token's tenant.
func checkServedForAlice(t *testing.T, addr, token string) {
	t.Helper()
	for path, want := range map[string]string{
		"/v1/users/alice/memories": strings.TrimPrefix(frameworkMemory, "(preference) "),
		"/v1/users/alice/graph":    frameworkObservation,
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(want)) {
			t.Errorf("GET %s: %s (%v) %s, without %q", path, resp.Status, err, body, want)
		}
	}
}

// startEngramServe starts the engram binary bin with args (serve and its
// flags), waits until it prints the address it serves on and returns it.
// A cleanup stops the server.
func startEngramServe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addrCh := make(chan string, 1)
	go func() {
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		addrCh <- serveReadAddr(lines)
		for range lines {
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case addr := <-addrCh:
		if addr == "" {
			<-exited
			t.Fatalf("engram serve exited without serving:\n%s", stderr)
		}
		return addr
	case <-time.After(60 * time.Second):
		t.Fatal("engram serve printed no address within 60 s")
		return ""
	}
}
