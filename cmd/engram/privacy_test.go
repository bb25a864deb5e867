package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/memory"
)

func TestPrivacyFlags(t *testing.T) {
	var f privacyFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--redact", "--retain-messages", "2160h", "--retain-episodes", "720h", "--retain-memories", "8760h"}); err != nil {
		t.Fatal(err)
	}
	var o memory.Options
	f.apply(&o)
	if o.Redactor == nil {
		t.Error("--redact set no Redactor")
	}
	want := memory.Retention{Messages: 2160 * time.Hour, Episodes: 720 * time.Hour, Memories: 8760 * time.Hour}
	if o.Retention != want {
		t.Errorf("Retention = %+v, want %+v", o.Retention, want)
	}

	// Off by default: no flag, no Redactor and no retention.
	var g privacyFlags
	g.register(pflag.NewFlagSet("t", pflag.ContinueOnError))
	var d memory.Options
	g.apply(&d)
	if d.Redactor != nil || d.Retention != (memory.Retention{}) {
		t.Errorf("defaults = %v %+v", d.Redactor, d.Retention)
	}
}

// TestPrivacyFlagsRefused: a negative age is refused by the store, and the
// command says which one, for serve and mcp alike. Neither can hang when
// the flags fail to reach the store: serve runs on a cancelled context and
// mcp on an empty stdin, so both return at once.
func TestPrivacyFlagsRefused(t *testing.T) {
	check := func(name string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "Retention.") || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%s: err = %v, want the negative retention named", name, err)
		}
	}
	o := serveTestOptions(t)
	o.privacy.retention.Messages = -time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check("serve", runServe(ctx, io.Discard, io.Discard, o))

	_, _, err := runCLIIO(t, strings.NewReader(""), "mcp", "--dir", t.TempDir(), "--retain-memories", "-1h")
	check("mcp", err)
}

// TestServeRedact: with --redact, an e-mail address in an appended message
// is stored, and answered, as its placeholder.
func TestServeRedact(t *testing.T) {
	o := serveTestOptions(t)
	o.privacy.redact = true
	s := startServe(t, o)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	do := func(method, path, body string) string {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+serveTestToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	do("POST", "/v1/users/alice/sessions/s1/messages", `{"messages":[{"role":"user","content":"Write to dana.k@example.com please"}]}`)
	got := do("GET", "/v1/users/alice/sessions/s1/messages", "")
	if strings.Contains(got, "dana.k@example.com") || !strings.Contains(got, "[EMAIL_1]") {
		t.Errorf("messages = %s, want the address replaced by [EMAIL_1]", got)
	}
}
