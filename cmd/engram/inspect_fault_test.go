package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFaultInspectCorruptStore damages a store's tables: inspect must fail
// with the corrupt-data error naming the file, not print counts read from
// damaged data (it printed "-600 messages").
//
// A flipped byte in a Snappy-compressed table can decode to the same
// block, which is no damage (see memory's TestFaultCorruptTable): such a
// try must print what the pristine store prints, and one of a few tries
// at other offsets must fail.
func TestFaultInspectCorruptStore(t *testing.T) {
	pristine := seedStore(t)
	want, err := runCLI(t, "inspect", "--dir", pristine)
	if err != nil {
		t.Fatal(err)
	}
	for try := range 8 {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(pristine)); err != nil {
			t.Fatal(err)
		}
		ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil || len(ssts) == 0 {
			t.Fatalf("no tables in %s (%v)", dir, err)
		}
		for _, p := range ssts {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[(len(b)/3+101*try)%len(b)] ^= 0x5a
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, err := runCLI(t, "inspect", "--dir", dir)
		if err == nil {
			// The first line has sizes on disk, which a copy changes.
			if counts(out) != counts(want) {
				t.Fatalf("try %d: inspect of a damaged store succeeded with other counts:\n%s\nwant:\n%s", try, out, want)
			}
			continue // the flip decoded to the same data
		}
		if !regexp.MustCompile(`corrupt.*\d{6}\.sst`).MatchString(err.Error()) {
			t.Errorf("inspect error %q does not say corrupt and name the table", err)
		}
		if regexp.MustCompile(`\s-\d`).MatchString(out) {
			t.Errorf("inspect printed negative counts:\n%s", out)
		}
		return
	}
	t.Fatal("8 flips at different offsets all read back intact: the damage is never seen")
}

// counts drops inspect's first line, the store's sizes on disk.
func counts(out string) string {
	_, rest, _ := strings.Cut(out, "\n")
	return rest
}
