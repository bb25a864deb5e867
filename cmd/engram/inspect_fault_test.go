package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestFaultInspectCorruptStore damages a store's tables: inspect must fail
// with the corrupt-data error naming the file, not print counts read from
// damaged data (it printed "-600 messages").
func TestFaultInspectCorruptStore(t *testing.T) {
	dir := seedStore(t)
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no tables in %s (%v)", dir, err)
	}
	for _, p := range ssts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/3] ^= 0x5a
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, "inspect", "--dir", dir)
	if err == nil {
		t.Fatalf("inspect of a damaged store succeeded:\n%s", out)
	}
	if !regexp.MustCompile(`corrupt.*\d{6}\.sst`).MatchString(err.Error()) {
		t.Errorf("inspect error %q does not say corrupt and name the table", err)
	}
	if regexp.MustCompile(`\s-\d`).MatchString(out) {
		t.Errorf("inspect printed negative counts:\n%s", out)
	}
}
