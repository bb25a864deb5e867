package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// TestUICommand: engram ui serves the inspector on loopback for the
// store's tenant and prints a token made for the run, which signs in
// through the form and reads the store; the token is not in the URL.
func TestUICommand(t *testing.T) {
	dir := t.TempDir()
	st, err := memory.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remember(context.Background(), memory.Scope{Tenant: "home", User: "me"}, memory.Memory{Kind: memory.KindFact, Text: "likes green tea"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &serveBuffer{}, &serveBuffer{}
	o := uiOptions{serve: serveOptions{dir: dir, addr: "127.0.0.1:0", maxBodyBytes: 1 << 20, shutdownTimeout: 5 * time.Second, metrics: "off", logFormat: "text", durability: "sync"}}
	ready := make(chan net.Addr, 1)
	o.serve.ready = func(a net.Addr) { ready <- a }
	done := make(chan error, 1)
	go func() { done <- runUI(ctx, stdout, stderr, o) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ui: %v\n%s", err, stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("ui did not start")
	}
	out := stdout.String()
	m := regexp.MustCompile(`tenant "home": (http://127\.0\.0\.1:\d+/ui/)\n.*token.*: ([0-9a-f]{64})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ui printed no URL and token:\n%s", out)
	}
	page, token := m[1], m[2]
	if strings.Contains(page, token) {
		t.Fatal("the token is in the URL")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(page+"login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("sign-in = %d with cookie %v", resp.StatusCode, cookie)
	}
	req, _ := http.NewRequest("GET", page+"api/v1/users/me/memories", nil)
	req.AddCookie(cookie)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "likes green tea") {
		t.Fatalf("memories through the inspector = %d %s", resp.StatusCode, body)
	}
	// A DNS-rebinding page names the server by a host of its own.
	req, _ = http.NewRequest("GET", page+"login", nil)
	req.Host = "rebind.example:" + strings.Split(strings.TrimPrefix(page, "http://127.0.0.1:"), "/")[0]
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("the inspector answered another host name: %d", resp.StatusCode)
	}
	// So does every other path (issue 26: only /ui/ was checked).
	base := strings.TrimSuffix(page, "/ui/")
	for _, p := range []string{"/healthz", "/openapi.json", "/metrics", "/v1/users"} {
		req, _ = http.NewRequest("GET", base+p, nil)
		req.Host = "rebind.example:" + strings.TrimPrefix(base, "http://127.0.0.1:")
		if resp, err = client.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET %s for another host name = %d, want 421", p, resp.StatusCode)
		}
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the token is in the log")
	}
}

// TestUICommandRefuses: ui will not listen beyond loopback, and asks which
// tenant when the store holds several.
func TestUICommandRefuses(t *testing.T) {
	ctx := context.Background()
	o := uiOptions{serve: serveOptions{dir: t.TempDir(), addr: "0.0.0.0:0"}}
	if err := runUI(ctx, io.Discard, io.Discard, o); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a wildcard address: %v", err)
	}
	dir := t.TempDir()
	st, err := memory.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"a", "b"} {
		if _, err := st.Remember(ctx, memory.Scope{Tenant: tenant, User: "u"}, memory.Memory{Kind: memory.KindFact, Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	o = uiOptions{serve: serveOptions{dir: dir, addr: "127.0.0.1:0"}}
	if err := runUI(ctx, io.Discard, io.Discard, o); err == nil || !strings.Contains(err.Error(), "--tenant") {
		t.Errorf("several tenants: %v", err)
	}
}

// TestUIRefusesPrivacyFlags: the flags that change what a store keeps are
// refused by ui with a message that says why, before anything opens.
func TestUIRefusesPrivacyFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--redact"}, {"--retain-messages", "24h"}, {"--retain-episodes=24h"}, {"--retain-memories", "1h"},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		_, _, err := runCLIIO(t, strings.NewReader(""), append([]string{"ui", "--dir", dir}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "ui does not take "+strings.SplitN(args[0], "=", 2)[0]) || !strings.Contains(err.Error(), "engram serve") {
			t.Errorf("ui %v: %v", args, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ui %v left %s behind: %v", args, dir, err)
		}
	}
}
