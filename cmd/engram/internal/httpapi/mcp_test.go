package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPMount: Options.MCP is served at /mcp behind bearer authentication
// and the body limit, and sees the token's tenant through Tenant.
func TestMCPMount(t *testing.T) {
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Panic") != "" {
			panic("mcp handler bug")
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.Method+" tenant="+Tenant(r.Context())+" body="+string(body))
	})
	s := newTestServer(t, nil, &Options{MCP: mcp, MaxBodyBytes: 64})

	for tok, tenant := range map[string]string{tokenAcme: "acme", tokenGlobex: "globex"} {
		r := s.must(200, "POST", "/mcp", tok, `{"jsonrpc":"2.0"}`)
		if want := `POST tenant=` + tenant + ` body={"jsonrpc":"2.0"}`; string(r.body) != want {
			t.Errorf("/mcp = %q, want %q", r.body, want)
		}
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := s.must(200, m, "/mcp", tokenAcme, nil); !strings.HasPrefix(string(r.body), m+" tenant=acme") {
			t.Errorf("%s /mcp = %q", m, r.body)
		}
	}
	r := s.must(401, "POST", "/mcp", "", `{}`)
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without a challenge")
	}
	s.must(413, "POST", "/mcp", tokenAcme, strings.Repeat("x", 100))
	s.must(405, "PUT", "/mcp", tokenAcme, `{}`)

	// A panicking handler answers a JSON 500 and keeps the server up.
	req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set("X-Panic", "1")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"code":"internal"`) || strings.Contains(string(body), "mcp handler bug") {
		t.Errorf("panic = %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(s.log.String(), "panic: mcp handler bug") {
		t.Errorf("the log lacks the panic:\n%s", s.log.String())
	}
	s.must(200, "GET", "/healthz", "", nil)

	if Tenant(t.Context()) != "" {
		t.Error("Tenant of a bare context is not empty")
	}
}

func TestMCPNotMounted(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(404, "POST", "/mcp", tokenAcme, `{}`)
}
