package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBodyLimit: a body over MaxBodyBytes is refused with 413, whether its
// length is declared up front or it streams without one, and nothing of it
// is written.
func TestBodyLimit(t *testing.T) {
	s := newTestServer(t, nil, &Options{MaxBodyBytes: 1024})
	path := "/v1/users/alice/sessions/s/messages"
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	small := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 900) + `"}]}`

	t.Run("declared length", func(t *testing.T) {
		r := s.call("POST", path, tokenAcme, big)
		if r.status != http.StatusRequestEntityTooLarge || r.errorCode() != "too_large" {
			t.Fatalf("= %d %s", r.status, r.body)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		// An io.Reader of unknown length is sent chunked, with no
		// Content-Length: the limit applies while the body is read.
		req, _ := http.NewRequest("POST", s.url+path, io.MultiReader(strings.NewReader(big)))
		req.Header.Set("Authorization", "Bearer "+tokenAcme)
		if req.ContentLength != 0 {
			t.Fatalf("ContentLength = %d, want unknown", req.ContentLength)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "too_large") {
			t.Fatalf("= %d %s", resp.StatusCode, body)
		}
	})
	t.Run("under the limit", func(t *testing.T) {
		s.must(201, "POST", path, tokenAcme, small)
	})
	var page messagesResponse
	s.must(200, "GET", path, tokenAcme, nil).decode(t, &page)
	if len(page.Messages) != 1 {
		t.Fatalf("%d messages stored, want only the small one", len(page.Messages))
	}
	t.Run("no token, no reading", func(t *testing.T) {
		// Authentication comes first: an anonymous client learns nothing,
		// not even the limit.
		if r := s.call("POST", path, "", big); r.status != http.StatusUnauthorized {
			t.Fatalf("= %d", r.status)
		}
	})
}
