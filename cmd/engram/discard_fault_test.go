//go:build !windows

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// damageDiscard writes issue 26's 16 garbage bytes at the start of the
// store's DISCARD file (Badger's value-log GC hints).
func damageDiscard(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "DISCARD"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}, 0); err != nil {
		t.Fatal(err)
	}
}

// TestFaultDamagedDiscardCompactProcess is issue 26's first hang with a
// real process: `engram compact --dir D` on a stopped store whose DISCARD
// was damaged spun at 100% CPU in Badger's value-log GC and ignored
// SIGTERM. It must finish, and the store must read as before.
func TestFaultDamagedDiscardCompactProcess(t *testing.T) {
	dir := seedStore(t)
	want, err := runCLI(t, "inspect", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	damageDiscard(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append(os.Environ(), "ENGRAM_SERVE_HELPER=1", "ENGRAM_SERVE_ARGS="+strings.Join([]string{"compact", "--dir", dir}, "\x1f"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("engram compact: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			t.Fatalf("engram compact ran 60 s (and stopped on SIGTERM)\n%s", out.String())
		case <-time.After(40 * time.Second):
			// Close waits 20 s for a stalled call into Badger.
			cmd.Process.Kill()
			<-exited
			t.Fatalf("engram compact ran 60 s and ignored SIGTERM for 40 s\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "compacted") {
		t.Errorf("engram compact printed:\n%s", out.String())
	}
	got, err := runCLI(t, "inspect", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if counts(got) != counts(want) {
		t.Errorf("inspect after compact:\n%s\nwant:\n%s", got, want)
	}
}

// TestFaultDamagedDiscardServe is issue 26's wedge of a server: on a
// store with a damaged DISCARD, reads worked until a user's DELETE made
// a compaction start, then every request timed out and shutdown never
// finished. Here the DELETE is followed by a forced compaction (the one
// the DELETE schedules runs a minute later, and at shutdown): it must
// answer, reads and writes must go on, and SIGTERM must stop the server.
func TestFaultDamagedDiscardServe(t *testing.T) {
	dir := seedStore(t)
	damageDiscard(t, dir)
	tokens := writeServeTokens(t, 0o600)
	p := startServeProcess(t, "serve", "--dir", dir, "--tokens", tokens, "--addr", "127.0.0.1:0", "--log-format", "json")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	call := func(method, path, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, "http://"+p.addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+serveTestToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v; stderr:\n%s", method, path, err, p.stderr)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := call("GET", "/v1/users/bob/sessions", ""); code != 200 {
		t.Fatalf("list bob's sessions = %d", code)
	}
	if code := call("DELETE", "/v1/users/alice", ""); code/100 != 2 {
		t.Fatalf("DELETE alice = %d", code)
	}
	if code := call("POST", "/v1/admin/compact", ""); code/100 != 2 {
		t.Fatalf("compact after the DELETE = %d; stderr:\n%s", code, p.stderr)
	}
	if code := call("POST", "/v1/users/bob/sessions/after/messages", `{"messages":[{"role":"user","content":"written after the compaction"}]}`); code != 201 {
		t.Fatalf("append after the compaction = %d", code)
	}
	if code := call("GET", "/v1/users/bob/sessions/after/messages", ""); code != 200 {
		t.Fatalf("read after the compaction = %d", code)
	}
	if code := call("DELETE", "/v1/users/bob", ""); code/100 != 2 {
		t.Fatalf("DELETE bob = %d", code)
	}
	// Shutdown runs the compaction the last DELETE left pending.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("serve exited with %v; stderr:\n%s", err, p.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not exit within 60 s of SIGTERM; stderr:\n%s", p.stderr)
	}
}
