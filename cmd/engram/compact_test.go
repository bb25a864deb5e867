package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// filesHolding returns the files under dir that hold needle; it fails the
// test on any error walking or reading.
func filesHolding(t *testing.T, dir, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestFaultErasureCompactCommand forgets a user, with no background
// compaction, and checks that engram compact takes the bytes out of every
// file.
func TestFaultErasureCompactCommand(t *testing.T) {
	const secret = "zqxwvkjqpfh"
	dir := filepath.Join(t.TempDir(), "store")
	st, err := memory.Open(dir, &memory.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gone := memory.Scope{Tenant: "acme", User: "bob", Session: "s1"}
	kept := memory.Scope{Tenant: "acme", User: "alice", Session: "s1"}
	for i := range 20 {
		if err := st.Session(gone).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "the code word is " + secret + strings.Repeat(" again", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Remember(ctx, gone, memory.Memory{Kind: memory.KindFact, Text: "bob's code word is " + secret}); err != nil {
		t.Fatal(err)
	}
	if err := st.Session(kept).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "keep me"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Forget(ctx, memory.Scope{Tenant: "acme", User: "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(filesHolding(t, dir, secret)) == 0 {
		t.Fatal("the secret is in no file after Forget alone: the check proves nothing")
	}
	out := mustRun(t, "compact", "--dir", dir)
	if !strings.Contains(out, "compacted "+dir) {
		t.Errorf("compact: %s", out)
	}
	if hits := filesHolding(t, dir, secret); len(hits) > 0 {
		t.Errorf("after engram compact the secret is still in %v", hits)
	}
	if got := mustRun(t, "export", "--dir", dir, "--tenant", "acme"); !strings.Contains(got, "keep me") || strings.Contains(got, secret) {
		t.Errorf("export after compact:\n%s", got)
	}
	if _, err := runCLI(t, "compact", "--dir", filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("compact of a missing store succeeded")
	}
}
