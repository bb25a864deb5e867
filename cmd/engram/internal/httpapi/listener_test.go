package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestListenerJSONErrors: the errors net/http answers by itself, before
// any handler runs, reach the client in the API's JSON error shape: 431
// for headers past MaxHeaderBytes, 400 for a request it cannot parse.
// Before, they came as text/plain.
func TestListenerJSONErrors(t *testing.T) {
	s := newTestServer(t, nil, nil) // for its handler
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.h, MaxHeaderBytes: 1 << 10}
	go srv.Serve(Listener(ln))
	t.Cleanup(func() { srv.Close() })

	for _, tc := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"headers too large", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "headers_too_large"},
		{"malformed request line", "NOT A REQUEST\r\n\r\n", 400, "bad_request"},
		{"no Host header", "GET /healthz HTTP/1.1\r\n\r\n", 400, "bad_request"},
		{"unknown transfer coding", "POST /v1/recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", 501, "not_implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var e errorBody
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != tc.code || e.Error.Message == "" {
				t.Errorf("body %q (%v), want code %s", body, err, tc.code)
			}
		})
	}
	// Requests that parse are untouched.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz = %v, %v", resp, err)
	}
	resp.Body.Close()
}
