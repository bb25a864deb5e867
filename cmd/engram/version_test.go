package main

import (
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	out, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "engram ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version = %q", out)
	}
	if _, err := runCLI(t, "version", "extra"); err == nil {
		t.Fatal("version with an argument should fail")
	}
}
