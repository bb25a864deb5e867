package httpapi

import (
	"bytes"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestFaultErasureAdminCompact forgets a user through the API of a store
// with no background compaction, then forces one through
// POST /v1/admin/compact, and scans every file of the store.
func TestFaultErasureAdminCompact(t *testing.T) {
	const secret = "zqxwvkjqpfh"
	dir := t.TempDir()
	store, err := memory.Open(dir, &memory.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := New(store, &Options{Tokens: testTokens(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := &testServer{t: t, url: srv.URL, client: srv.Client(), store: store, h: h, log: &syncBuffer{}}
	for range 5 {
		s.must(201, "POST", "/v1/users/bob/sessions/s1/messages", tokenAcme,
			map[string]any{"messages": []map[string]string{{"role": "user", "content": "the code word is " + secret}}})
	}
	s.must(204, "DELETE", "/v1/users/bob", tokenAcme, nil)
	if len(holding(t, dir, secret)) == 0 {
		t.Fatal("the secret is in no file after the delete alone: the scan proves nothing")
	}
	s.must(401, "POST", "/v1/admin/compact", "", nil)
	s.must(204, "POST", "/v1/admin/compact", tokenAcme, nil)
	if hits := holding(t, dir, secret); len(hits) > 0 {
		t.Errorf("after POST /v1/admin/compact the secret is in %v", hits)
	}
}

// holding returns the files under dir that hold needle.
func holding(t *testing.T, dir, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
