package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestRoundTrip exports a tenant, imports it into a fresh store and exports
// again: the same bytes, for JSONL, per-user N-Quads and directories.
func TestRoundTrip(t *testing.T) {
	src := seedStore(t)
	tmp := t.TempDir()
	dst := filepath.Join(tmp, "dst")

	jsonl1 := filepath.Join(tmp, "acme1.jsonl")
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--out", jsonl1)
	var graphs1 []string
	for _, u := range []string{"alice", "bob"} {
		nq := filepath.Join(tmp, u+"1.nq")
		mustRun(t, "export", "--dir", src, "--tenant", "acme", "--user", u, "--out", nq)
		graphs1 = append(graphs1, nq)
	}
	out := mustRun(t, append([]string{"import", "--dir", dst, "--tenant", "acme", jsonl1}, graphs1...)...)
	for _, want := range []string{"imported 3 files into tenant acme", "messages  7 written", "memories  5 written", "graph     3 entities and 1 fact written"} {
		if !strings.Contains(out, want) {
			t.Errorf("import output lacks %q:\n%s", want, out)
		}
	}
	jsonl2 := filepath.Join(tmp, "acme2.jsonl")
	mustRun(t, "export", "--dir", dst, "--tenant", "acme", "--out", jsonl2)
	if a, b := readFile(t, jsonl1), readFile(t, jsonl2); a != b {
		t.Fatalf("JSONL round trip differs:\n%s\n---\n%s", a, b)
	}
	for i, u := range []string{"alice", "bob"} {
		nq := filepath.Join(tmp, u+"2.nq")
		mustRun(t, "export", "--dir", dst, "--tenant", "acme", "--user", u, "--out", nq)
		if a, b := readFile(t, graphs1[i]), readFile(t, nq); a != b {
			t.Fatalf("N-Quads round trip of %s differs:\n%s\n---\n%s", u, a, b)
		}
	}

	// The JSONL holds what the formats promise.
	j := readFile(t, jsonl1)
	for _, want := range []string{
		`{"type":"message","user":"alice","session":"billing","id":"`,
		`"tool_calls":[{"id":"call_1","name":"lookup_account","arguments":{"customer":"Alice"}}]`,
		`"tool_call_id":"call_1"`, `"name":"alice"`, `"metadata":{"latency_ms":"12"}`,
		`{"type":"memory","id":"`, `"text":"Acme's office closes at six"`, // shared: no user
		`"superseded_by":"`, `"agent":"crm"`,
	} {
		if !strings.Contains(j, want) {
			t.Errorf("export lacks %s:\n%s", want, j)
		}
	}
	if strings.Contains(j, `"tokens"`) || strings.Contains(j, "carol") {
		t.Errorf("export holds token counts or another tenant:\n%s", j)
	}
	if nq := readFile(t, graphs1[0]); !strings.HasPrefix(nq, "# engram:user \"alice\"\n<urn:engram:entity:") {
		t.Errorf("alice's N-Quads:\n%s", nq)
	}

	// A whole tenant as a directory, shared graph included.
	dir1 := filepath.Join(tmp, "export1")
	out = mustRun(t, "export", "--dir", src, "--tenant", "acme", "--out", dir1+"/")
	if !strings.Contains(out, "exported 7 messages, 5 memories and 3 graphs of tenant acme") {
		t.Errorf("export dir: %s", out)
	}
	for _, f := range []string{"engram.jsonl", "shared.nq", "users/alice.nq", "users/bob.nq"} {
		if _, err := os.Stat(filepath.Join(dir1, f)); err != nil {
			t.Errorf("export dir lacks %s: %v", f, err)
		}
	}
	dst2 := filepath.Join(tmp, "dst2")
	mustRun(t, "import", "--dir", dst2, "--tenant", "acme", dir1)
	dir2 := filepath.Join(tmp, "export2")
	mustRun(t, "export", "--dir", dst2, "--tenant", "acme", "--out", dir2, "--format", "dir")
	for _, f := range []string{"engram.jsonl", "shared.nq", "users/alice.nq", "users/bob.nq"} {
		if a, b := readFile(t, filepath.Join(dir1, f)), readFile(t, filepath.Join(dir2, f)); a != b {
			t.Errorf("directory round trip: %s differs", f)
		}
	}

	// Importing again changes nothing.
	out = mustRun(t, "import", "--dir", dst2, "--tenant", "acme", dir1)
	if !strings.Contains(out, "messages  0 written, 7 already there") || !strings.Contains(out, "memories  0 written, 5 already there") {
		t.Errorf("second import:\n%s", out)
	}

	// Into another tenant, one user's data: --user fills lines without one.
	aliceJSONL := filepath.Join(tmp, "alice.jsonl")
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--user", "alice", "--out", aliceJSONL)
	mustRun(t, "import", "--dir", dst2, "--tenant", "initech", "--user", "alice", aliceJSONL, graphs1[0])
	out = mustRun(t, "inspect", "--dir", dst2, "--tenant", "initech", "--json")
	if !strings.Contains(out, `"id": "alice"`) || !strings.Contains(out, `"messages": 6`) {
		t.Errorf("inspect after import into initech:\n%s", out)
	}
}

// TestImportStdin pipes an export into an import.
func TestImportStdin(t *testing.T) {
	src := seedStore(t)
	exported, stderr, err := runCLIIO(t, strings.NewReader(""), "export", "--dir", src, "--tenant", "globex")
	if err != nil || !strings.Contains(stderr, "exported 1 message and 0 memories of tenant globex to standard output") {
		t.Fatalf("export to stdout: %v, %s", err, stderr)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	out, _, err := runCLIIO(t, strings.NewReader(exported), "import", "--dir", dst, "--tenant", "globex", "-")
	if err != nil || !strings.Contains(out, "messages  1 written") {
		t.Fatalf("import from stdin: %v\n%s", err, out)
	}
}

func TestImportProgress(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, `{"type":"message","user":"u","session":"s","role":"user","content":"message %d"}`+"\n", i)
	}
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), b.String())
	_, stderr, err := runCLIIO(t, strings.NewReader(""), "import", "--dir", filepath.Join(dir, "st"), "--tenant", "t", "--progress", "--batch-size", "50", in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "importing") || !strings.Contains(stderr, "100%") {
		t.Errorf("--progress drew no bar:\n%q", stderr)
	}
	// Not a terminal, no --progress: no bar.
	_, stderr, err = runCLIIO(t, strings.NewReader(""), "import", "--dir", filepath.Join(dir, "st"), "--tenant", "t", in)
	if err != nil || stderr != "" {
		t.Errorf("no bar wanted: %v, %q", err, stderr)
	}
}

// TestImportBigBatch writes more records than one transaction holds: the
// batch is split, and every record arrives.
func TestImportBigBatch(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, `{"user":"u","session":"s","role":"user","content":"message number %d"}`+"\n", i)
	}
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), b.String())
	out := mustRun(t, "import", "--dir", filepath.Join(dir, "st"), "--tenant", "t", "--batch-size", "100000", in)
	if !strings.Contains(out, "messages  2000 written") {
		t.Fatalf("big batch:\n%s", out)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "st")
	good := writeFile(t, filepath.Join(dir, "good.jsonl"), `{"type":"message","user":"u","session":"s","role":"user","content":"hi"}`+"\n")
	// One malformed line in the second file: nothing of either is written.
	bad := writeFile(t, filepath.Join(dir, "bad.jsonl"), `{"type":"memory","user":"u","text":"ok"}`+"\n\n"+`{"type":"memory","user":"u","txet":"typo"}`+"\n")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no dir", []string{"import", "--tenant", "t", good}, []string{`required flag(s) "dir" not set`}},
		{"no tenant", []string{"import", "--dir", st, good}, []string{`"tenant" not set`}},
		{"no files", []string{"import", "--dir", st, "--tenant", "t"}, []string{"requires at least 1 arg"}},
		{"missing file", []string{"import", "--dir", st, "--tenant", "t", filepath.Join(dir, "nope.jsonl")}, []string{"nope.jsonl", "no such file"}},
		{"unknown extension", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "x.txt"), "")}, []string{"x.txt", "cannot tell the format"}},
		{"bad format", []string{"import", "--dir", st, "--tenant", "t", "--format", "csv", good}, []string{"--format", `unknown format "csv"`}},
		{"bad tenant", []string{"import", "--dir", st, "--tenant", "a\x01b", good}, []string{"invalid scope", "Tenant"}},
		{"bad batch size", []string{"import", "--dir", st, "--tenant", "t", "--batch-size", "0", good}, []string{"--batch-size 0"}},
		{"malformed line", []string{"import", "--dir", st, "--tenant", "t", good, bad}, []string{"bad.jsonl: line 3", `unknown field "txet"`}},
		{"not json", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "nj.jsonl"), "{\"role\":\"user\",\n")}, []string{"nj.jsonl: line 1", "not JSON"}},
		{"unknown type", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "ty.jsonl"), `{"type":"fact"}`)}, []string{"line 1", `unknown type "fact"`}},
		{"message without session", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "ns.jsonl"), `{"user":"u","role":"user","content":"x"}`)}, []string{"line 1", `needs "session"`}},
		{"message without user", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "nu.jsonl"), `{"session":"s","role":"user","content":"x"}`)}, []string{"line 1", `needs "user"`}},
		{"bad role", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "br.jsonl"), `{"user":"u","session":"s","role":"robot","content":"x"}`)}, []string{"line 1", `unknown role "robot"`}},
		{"bad id", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "bi.jsonl"), `{"user":"u","session":"s","id":"42","role":"user","content":"x"}`)}, []string{"line 1", `id "42" is not a ULID`}},
		{"other user", []string{"import", "--dir", st, "--tenant", "t", "--user", "v", good}, []string{"good.jsonl: line 1", `for user "u", but the import is for user "v"`}},
		{"nquads without owner", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "g.nq"), "<a> <b> <c> .\n")}, []string{"g.nq", "does not say whose graph"}},
		{"nquads of another user", []string{"import", "--dir", st, "--tenant", "t", "--user", "v", writeFile(t, filepath.Join(dir, "g2.nq"), "# engram:user \"u\"\n<a> <b> <c> .\n")}, []string{"g2.nq", `graph of user "u"`}},
		{"bad nquads", []string{"import", "--dir", st, "--tenant", "t", "--user", "u", writeFile(t, filepath.Join(dir, "g3.nq"), "<a> <b> <c> .\n<a> <b>\n")}, []string{"g3.nq", "line 2"}},
		{"bad header", []string{"import", "--dir", st, "--tenant", "t", writeFile(t, filepath.Join(dir, "g4.nq"), "# engram:user alice\n")}, []string{"g4.nq", "line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.want, tt.args...) })
	}
	// None of them wrote anything.
	if _, err := os.Stat(st); err == nil {
		out := mustRun(t, "inspect", "--dir", st)
		if !strings.Contains(out, "No tenants.") {
			t.Errorf("failed imports wrote data:\n%s", out)
		}
	}
}

// TestImportResume: a record the store refuses fails its batch, earlier
// batches stay, and running the fixed file again completes the import.
func TestImportResume(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "st")
	const id = "01JH0000000000000000000%03d"
	var lines []string
	for i := range 6 {
		lines = append(lines, fmt.Sprintf(`{"user":"u","session":"s","id":"`+id+`","role":"user","content":"m%d"}`, i+1, i))
	}
	// Line 5 answers a tool call that was never made: the store refuses it.
	broken := append([]string{}, lines...)
	broken[4] = fmt.Sprintf(`{"user":"u","session":"s","id":"`+id+`","role":"tool","tool_call_id":"nope","content":"r"}`, 5)
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), strings.Join(broken, "\n")+"\n")
	out, err := runCLI(t, "import", "--dir", st, "--tenant", "t", "--batch-size", "2", in)
	if err == nil {
		t.Fatalf("import of a refused record succeeded:\n%s", out)
	}
	for _, want := range []string{"in.jsonl: line 5", "tool result answers no earlier tool call", "lines 5-6, was not imported"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out, "messages  4 written") {
		t.Errorf("the batches before the error should be reported:\n%s", out)
	}
	// Fix the line and run again: the first four are skipped, the rest
	// written.
	writeFile(t, in, strings.Join(lines, "\n")+"\n")
	out = mustRun(t, "import", "--dir", st, "--tenant", "t", "--batch-size", "2", in)
	if !strings.Contains(out, "messages  2 written, 4 already there") {
		t.Errorf("resumed import:\n%s", out)
	}
	s, err := memory.Open(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs, err := s.Session(memory.Scope{Tenant: "t", User: "u", Session: "s"}).Messages(context.Background(), memory.MessagesOptions{})
	if err != nil || len(msgs) != 6 || msgs[4].Content != "m4" {
		t.Fatalf("after the resumed import: %+v, %v", msgs, err)
	}
}
