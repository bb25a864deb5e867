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
	// The test binary is stamped by nothing: "devel", and no commit.
	if !strings.HasPrefix(out, "engram devel ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version = %q", out)
	}
	// engram --version prints the same line.
	if flag, err := runCLI(t, "--version"); err != nil || flag != out {
		t.Fatalf("--version = %q, %v; version = %q", flag, err, out)
	}
	if strings.Contains(out, "Princeton") {
		t.Fatalf("version prints the notices unasked:\n%s", out)
	}
	// WordNet's licence asks for its notice on every copy.
	out, err = runCLI(t, "version", "--notices")
	if err != nil || !strings.Contains(out, "WordNet 3.0 Copyright 2006 by Princeton University") {
		t.Fatalf("version --notices: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "version", "extra"); err == nil {
		t.Fatal("version with an argument should fail")
	}
}
