package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/memory"
)

func Example() {
	store, err := memory.Open("", nil) // in memory
	if err != nil {
		panic(err)
	}
	defer store.Close()
	tokens, err := httpapi.ParseTokens([]byte(`{"tokens":[{"token":"example-token-0123456789","tenant":"acme"}]}`))
	if err != nil {
		panic(err)
	}
	h, err := httpapi.New(store, &httpapi.Options{Tokens: tokens})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	call := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer example-token-0123456789")
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	status, _ := call("POST", "/v1/users/alice/sessions/renewal/messages", `{"messages":[
		{"role":"system","content":"You are Acme's support agent."},
		{"role":"user","content":"My renewal owner is Dana."}]}`)
	fmt.Println("append:", status)

	status, body := call("GET", "/v1/users/alice/sessions/renewal/window?max_tokens=2000", "")
	var win struct {
		Messages []memory.Message `json:"messages"`
		Tokens   int              `json:"tokens"`
	}
	if err := json.Unmarshal(body, &win); err != nil {
		panic(err)
	}
	fmt.Println("window:", status)
	for _, m := range win.Messages {
		fmt.Printf("  %s: %s\n", m.Role, m.Content)
	}

	status, body = call("POST", "/v1/users/alice/memories", `{"text":"Alice prefers email","colour":"blue"}`)
	fmt.Println("remember:", status, string(body))

	// Output:
	// append: 201
	// window: 200
	//   system: You are Acme's support agent.
	//   user: My renewal owner is Dana.
	// remember: 400 {"error":{"code":"invalid_json","message":"json: unknown field \"colour\""}}
}

// The tenant of every request comes from its bearer token; a handler mounted
// with Options.MCP reads it with Tenant.
func ExampleTenant() {
	store, err := memory.Open("", nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	tokens, err := httpapi.ParseTokens([]byte(`{"tokens":[
		{"token":"acme-token-0123456789","tenant":"acme"},
		{"token":"globex-token-0123456789","tenant":"globex"}]}`))
	if err != nil {
		panic(err)
	}
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tenant: ", httpapi.Tenant(r.Context()))
	})
	h, err := httpapi.New(store, &httpapi.Options{Tokens: tokens, MCP: mcp})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, tok := range []string{"acme-token-0123456789", "globex-token-0123456789", "nobody"} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			continue
		}
		fmt.Println(string(b))
	}
	// Output:
	// tenant: acme
	// tenant: globex
	// 401 Bearer realm="engram", error="invalid_token"
}
