package httpapi

import (
	"bytes"
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// slowExtractor takes a while over every message and counts them.
type slowExtractor struct{ done atomic.Int32 }

func (x *slowExtractor) Extract(ctx context.Context, _ *memory.ExtractInput) (*memory.Extraction, error) {
	select {
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	x.done.Add(1)
	return &memory.Extraction{}, nil
}

// TestAdminFlush appends messages, which returns before they are
// extracted, then waits for their extraction with POST /v1/admin/flush.
func TestAdminFlush(t *testing.T) {
	x := &slowExtractor{}
	s := newTestServer(t, &memory.Options{Extractor: x, SweepInterval: -1}, nil)
	s.must(201, "POST", "/v1/users/alice/sessions/s1/messages", tokenAcme, map[string]any{"messages": []map[string]string{
		{"role": "user", "content": "My renewal owner is Dana."},
		{"role": "assistant", "content": "Noted."},
		{"role": "user", "content": "I prefer email over phone calls."},
	}})
	s.must(401, "POST", "/v1/admin/flush", "", nil)
	s.must(204, "POST", "/v1/admin/flush", tokenAcme, nil)
	if n := x.done.Load(); n != 3 {
		t.Errorf("after POST /v1/admin/flush, %d of 3 messages were extracted", n)
	}
	s.must(204, "POST", "/v1/admin/flush", tokenGlobex, nil) // nothing left: at once
}

// blockedExtractor holds every message until its context ends.
type blockedExtractor struct{}

func (blockedExtractor) Extract(ctx context.Context, _ *memory.ExtractInput) (*memory.Extraction, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestAdminFlushDeadline: a flush that cannot finish within
// Options.FlushTimeout answers 503 extraction_pending with Retry-After and
// the count of messages still queued, rather than waiting without end
// (issue 26).
func TestAdminFlushDeadline(t *testing.T) {
	s := newTestServer(t, &memory.Options{Extractor: blockedExtractor{}, SweepInterval: -1}, &Options{FlushTimeout: 200 * time.Millisecond})
	s.must(201, "POST", "/v1/users/alice/sessions/s1/messages", tokenAcme, map[string]any{"messages": []map[string]string{
		{"role": "user", "content": "My renewal owner is Dana."},
		{"role": "user", "content": "I prefer email."},
	}})
	start := time.Now()
	r := s.must(503, "POST", "/v1/admin/flush", tokenAcme, nil)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the flush answered after %s, with a 200 ms deadline", took)
	}
	if b := string(r.body); !strings.Contains(b, `"code":"extraction_pending"`) || !strings.Contains(b, "2 messages still waiting") {
		t.Errorf("body = %s", r.body)
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After: %v", r.header)
	}
	if _, err := New(s.store, &Options{Tokens: testTokens(t), FlushTimeout: -time.Second}); err == nil {
		t.Error("a negative FlushTimeout is accepted")
	}
}
