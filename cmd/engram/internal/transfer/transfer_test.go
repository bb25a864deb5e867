package transfer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

var bg = context.Background()

func openStore(t *testing.T) *memory.Store {
	t.Helper()
	st, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		path string
		want Format
		ok   bool
	}{
		{"a.jsonl", FormatJSONL, true}, {"A.NDJSON", FormatJSONL, true}, {"g.nq", FormatNQuads, true},
		{"g.nquads", FormatNQuads, true}, {"a.json", 0, false}, {"noext", 0, false},
	} {
		if got, ok := FormatOf(tt.path); got != tt.want || ok != tt.ok {
			t.Errorf("FormatOf(%q) = %v, %v", tt.path, got, ok)
		}
	}
	for _, f := range []Format{FormatJSONL, FormatNQuads} {
		if got, err := ParseFormat(f.String()); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv) succeeded")
	}
}

func TestPlan(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "b.jsonl"), "")
	write(t, filepath.Join(dir, "x", "a.nq"), "")
	write(t, filepath.Join(dir, "x", "sub", "c.ndjson"), "{}\n")
	write(t, filepath.Join(dir, "x", "README"), "")
	in, err := Plan([]string{filepath.Join(dir, "x")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range in {
		names = append(names, strings.TrimPrefix(i.Name, filepath.Join(dir, "x")+string(filepath.Separator))+":"+i.Format.String())
	}
	if want := []string{"a.nq:nquads", "b.jsonl:jsonl", filepath.Join("sub", "c.ndjson") + ":jsonl"}; !slices.Equal(names, want) {
		t.Errorf("Plan(dir) = %v, want %v", names, want)
	}
	if in[2].Size != 3 {
		t.Errorf("size %d", in[2].Size)
	}
	readme := filepath.Join(dir, "x", "README")
	if _, err := Plan([]string{readme}, 0); err == nil {
		t.Error("Plan of a file without a known extension succeeded")
	}
	if in, err := Plan([]string{readme}, FormatJSONL); err != nil || in[0].Format != FormatJSONL {
		t.Errorf("Plan with a format: %v, %v", in, err)
	}
	if _, err := Plan([]string{t.TempDir()}, 0); err == nil {
		t.Error("Plan of a directory without data files succeeded")
	}
}

func TestUserFileName(t *testing.T) {
	taken := map[string]bool{}
	for _, tt := range []struct{ user, want string }{
		{"alice", "alice"},
		{"Alice", "Alice~2"}, // the same file on a case-insensitive file system
		{"bob.smith", "bob.smith"},
		{".hidden", "%2Ehidden"},
		{"a/b c", "a%2Fb%20c"},
		{"josé", "jos%C3%A9"},
	} {
		if got := userFileName(tt.user, taken); got != tt.want {
			t.Errorf("userFileName(%q) = %q, want %q", tt.user, got, tt.want)
		}
	}
}

func TestReadHeader(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want graphOwner
		err  string
	}{
		{"# engram:user \"alice\"\n<a> <b> <c> .\n", graphOwner{known: true, user: "alice", line: 1}, ""},
		{"\n# exported by engram\n# engram:shared\n", graphOwner{known: true, shared: true, line: 3}, ""},
		{"<a> <b> <c> .\n# engram:user \"late\"\n", graphOwner{}, ""}, // only the opening comments count
		{"", graphOwner{}, ""},
		{"# engram:user alice\n", graphOwner{}, "line 1"},
		{"# engram:user \"\"\n", graphOwner{}, "line 1"},
		{"# engram:user \"a\\u0001\"\n", graphOwner{}, "control character"},
		{"# engram:shared\n# engram:user \"x\"\n", graphOwner{}, "a second"},
		{"# engram:tenant \"x\"\n", graphOwner{}, "unknown directive"},
	} {
		got, err := readHeader(strings.NewReader(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("readHeader(%q) = %v, want an error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("readHeader(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
	var b bytes.Buffer
	if err := writeHeader(&b, `we"ird`); err != nil {
		t.Fatal(err)
	}
	if got, err := readHeader(&b); err != nil || got.user != `we"ird` {
		t.Errorf("header round trip: %+v, %v", got, err)
	}
}

// TestExportDirAtomic: an export that fails leaves no directory and no
// temporary one.
func TestExportDirAtomic(t *testing.T) {
	st := openStore(t)
	if err := st.Session(memory.Scope{Tenant: "t", User: "u", Session: "s"}).Append(bg, memory.Message{Role: memory.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := ExportDir(ctx, st, memory.Scope{Tenant: "t"}, filepath.Join(parent, "out")); !errors.Is(err, context.Canceled) {
		t.Fatalf("ExportDir with a done context: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a failed export left %v", entries)
	}
	c, err := ExportDir(bg, st, memory.Scope{Tenant: "t"}, filepath.Join(parent, "out"))
	if err != nil || c.Messages != 1 || c.Graphs != 0 {
		t.Fatalf("ExportDir: %+v, %v", c, err)
	}
	entries, _ := os.ReadDir(filepath.Join(parent, "out"))
	if len(entries) != 1 || entries[0].Name() != "engram.jsonl" {
		t.Errorf("an export without graphs holds %v", entries)
	}
}

// TestImportUserRules: --user fills lines without a user; memories without
// one are the tenant's shared memories.
func TestImportUserRules(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	in, err := Plan([]string{write(t, filepath.Join(dir, "a.jsonl"),
		`{"type":"memory","text":"shared fact"}`+"\n"+
			`{"type":"memory","user":"u","text":"u's fact"}`+"\n"+
			`{"session":"s","role":"user","content":"hello","user":"u"}`+"\n")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := Import(bg, st, in, ImportOptions{Tenant: "t"})
	if err != nil || stats.Memories.Written != 2 || stats.Messages.Written != 1 || stats.Batches != 3 {
		t.Fatalf("Import: %+v, %v", stats, err)
	}
	shared, _ := st.Memories(bg, memory.Scope{Tenant: "t"}, memory.MemoriesOptions{})
	if len(shared) != 1 || shared[0].Text != "shared fact" {
		t.Errorf("shared memories: %+v", shared)
	}
	// With User, the line without one is u's.
	st2 := openStore(t)
	if _, err := Import(bg, st2, in, ImportOptions{Tenant: "t", User: "u"}); err != nil {
		t.Fatal(err)
	}
	mine, _ := st2.Memories(bg, memory.Scope{Tenant: "t", User: "u"}, memory.MemoriesOptions{})
	if len(mine) != 2 {
		t.Errorf("u's memories: %+v", mine)
	}
	if _, err := Import(bg, st2, in, ImportOptions{Tenant: ""}); err == nil {
		t.Error("Import without a tenant succeeded")
	}
	// Progress ends at the total, in both phases.
	var last = map[string]Progress{}
	if _, err := Import(bg, st2, in, ImportOptions{Tenant: "t", Progress: func(p Progress) { last[p.Phase] = p }}); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"check", "import"} {
		if p := last[phase]; p.Total == 0 || p.Done != p.Total {
			t.Errorf("last %s progress: %+v", phase, p)
		}
	}
}
