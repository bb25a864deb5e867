package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installMain is the program of TestInstallWithReplace: it opens an
// in-memory store, appends a message in one session and recalls it from
// another.
const installMain = `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/engramdb/engram/memory"
)

func main() {
	ctx := context.Background()
	store, err := memory.Open("", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	monday := memory.Scope{Tenant: "acme", User: "alice", Session: "monday"}
	err = store.Session(monday).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "My renewal owner is Dana."})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	rec, err := store.Recall(ctx, memory.Query{
		Scope: memory.Scope{Tenant: "acme", User: "alice", Session: "friday"},
		Text:  "Who owns my renewal?",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range rec.Items {
		fmt.Printf("%s\t%s\n", it.Source, it.Text)
	}
}
`

// offlineMarkers are in go's output when it could not fetch a module: the
// build then skips rather than fails, since it needs the network or a
// module cache holding Engram's dependencies.
var offlineMarkers = regexp.MustCompile(`dial tcp|no such host|connection refused|i/o timeout|GOPROXY=off|module lookup disabled|TLS handshake|network is unreachable`)

// TestInstallWithReplace builds and runs a module outside the repository
// that uses the library through exactly the lines the install section
// gives, until the module is published:
//
//	require github.com/engramdb/engram v0.0.0
//	replace github.com/engramdb/engram => /path/to/clone
//
// The go.sum is the repository's own, so that with Engram's dependencies
// in the module cache the build needs no network.
func TestInstallWithReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program against the library; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH to build the throwaway module with")
	}
	clone, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rootMod, err := os.ReadFile(filepath.Join(clone, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(rootMod)
	if goLine == nil {
		t.Fatal("the repository's go.mod has no go line")
	}
	dir := t.TempDir()
	gomod := "module example.com/engramtry\n\n" + string(goLine) + "\n\n" +
		"require github.com/engramdb/engram v0.0.0\n\n" +
		"replace github.com/engramdb/engram => " + clone + "\n"
	sum, err := os.ReadFile(filepath.Join(clone, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "main.go": installMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "engramtry")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		if offlineMarkers.Match(out) {
			t.Skipf("cannot resolve Engram's dependencies without the network (GOPROXY=%s) and the module cache lacks some: %v\n%s", os.Getenv("GOPROXY"), err, out)
		}
		t.Fatalf("go build of a module with\n%s\n%v\n%s", gomod, err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("running the throwaway module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "My renewal owner is Dana.") {
		t.Fatalf("the throwaway module did not recall the message:\n%s", out)
	}
}
