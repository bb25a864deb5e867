package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
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
		if err == nil || !strings.Contains(err.Error(), "--retain-") || !strings.Contains(err.Error(), "negative") {
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

var placeholder = regexp.MustCompile(`\[[A-Z_]+_[0-9]+\]`)

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

	// Issue 26's shapes, each stored verbatim by --redact before: none
	// reaches the answer, in any spelling, and the words around them stay.
	shapes := []string{
		"4111\u00a01111\u00a01111\u00a01111", "gb82west12345698765432", "0044 20 7946 0000", "4155550100",
		"SSN 219099999", "SSN 219 09 9999", "::ffff:192.0.2.128", "10.1.2.0/24", "jörg@bücher.de",
		"\"john doe\"@example.com", "４１１１ １１１１ １１１１ １１１１", "192.168.1.10:8080",
		"http://192.168.1.10/admin", "tel:+14155550100", "+44 20 7946 0958 +44 20 7946 0959",
	}
	secrets := []string{"4111", "gb82", "7946", "4155550100", "219", "192.0.2.128", "10.1.2.0", "jörg", "john doe", "４１１１", "192.168.1.10", "0958", "0959"}
	for _, shape := range shapes {
		body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": "before " + shape + " after"}}})
		do("POST", "/v1/users/alice/sessions/s2/messages", string(body))
	}
	got = do("GET", "/v1/users/alice/sessions/s2/messages", "")
	var page struct{ Messages []struct{ Content string } }
	if err := json.Unmarshal([]byte(got), &page); err != nil || len(page.Messages) != len(shapes) {
		t.Fatalf("messages = %s (%v)", got, err)
	}
	for i, m := range page.Messages {
		if !strings.HasPrefix(m.Content, "before ") || !strings.HasSuffix(m.Content, " after") || !placeholder.MatchString(m.Content) {
			t.Errorf("%q stored as %q", shapes[i], m.Content)
		}
		for _, secret := range secrets {
			if strings.Contains(m.Content, secret) {
				t.Errorf("%q stored as %q, holding %q", shapes[i], m.Content, secret)
			}
		}
	}
}
