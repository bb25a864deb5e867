package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engramdb/engram/kv/kvtest"
	"github.com/engramdb/engram/memory"
)

// typoCase is one command line with one bad flag (or none, for a
// command that must not create a store); STORE stands for the store's
// flags (--dir DIR, or --postgres DSN --postgres-schema S).
type typoCase struct {
	name string
	args []string
	// readOnly: the line is good but for the store, which the command
	// must find rather than create.
	readOnly bool
}

// typoCases are the command lines of TestTypoLeavesNothing. in is a good
// input file, out a path nothing may be written to.
func typoCases(in, out string) []typoCase {
	bad := map[string][][]string{
		"serve":  {{"--embedder", "foo"}, {"--synonyms", "yes"}, {"--extract", "maybe"}, {"--durability", "fast"}, {"--retain-messages", "-1h"}, {"--extract-model", "m"}, {"--metrics", "nope"}, {"--log-format", "xml"}, {"--addr", "nohost"}, {"--embedder", "ollama"}},
		"mcp":    {{"--embedder", "foo"}, {"--synonyms", "yes"}, {"--extract", "maybe"}, {"--retain-memories", "-1h"}},
		"ui":     {{"--embedder", "foo"}, {"--synonyms", "yes"}},
		"import": {{"--embedder", "foo"}, {"--synonyms", "yes"}, {"--format", "xml"}},
		"recall": {{"--embedder", "foo"}, {"--synonyms", "yes"}, {"--sources", "nope"}},
		"export": {{"--format", "xml"}},
	}
	base := map[string][]string{
		"serve":   {"serve", "STORE", "--addr", "127.0.0.1:0"},
		"mcp":     {"mcp", "STORE", "--tenant", "t", "--user", "u"},
		"ui":      {"ui", "STORE"},
		"import":  {"import", "STORE", "--tenant", "t", in},
		"recall":  {"recall", "STORE", "--tenant", "t", "--user", "u", "hello"},
		"export":  {"export", "STORE", "--tenant", "t", "--out", out},
		"inspect": {"inspect", "STORE"},
		"backup":  {"backup", "STORE", "--out", out},
		"compact": {"compact", "STORE"},
		"extract": {"extract", "retry", "STORE"},
	}
	var cases []typoCase
	for _, cmd := range []string{"serve", "mcp", "ui", "import", "recall", "export", "inspect", "backup", "compact", "extract"} {
		for _, b := range bad[cmd] {
			cases = append(cases, typoCase{name: cmd + " " + strings.Join(b, " "), args: append(append([]string{}, base[cmd]...), b...)})
		}
		switch cmd {
		case "ui", "recall", "export", "inspect", "backup", "compact", "extract":
			cases = append(cases, typoCase{name: cmd + " no store", args: base[cmd], readOnly: true})
		}
	}
	return cases
}

// runTypo runs args in process, with STORE replaced by store, and
// returns its error; a command that runs longer than a few seconds (a
// server that started) is stopped and reported.
func runTypo(t *testing.T, args, store []string) error {
	t.Helper()
	var full []string
	for _, a := range args {
		if a == "STORE" {
			full = append(full, store...)
		} else {
			full = append(full, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := newRootCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(full)
	err := cmd.ExecuteContext(ctx)
	if ctx.Err() != nil {
		t.Fatalf("engram %s ran until stopped", strings.Join(full, " "))
	}
	return err
}

// listing names every file under dir with its size, "" when dir does not
// exist.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d\n", p, info.Mode(), info.Size())
		return nil
	})
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestTypoLeavesNothing: every command checks all its flags before it
// touches the disk, and the commands that read a store (ui, recall,
// export, inspect, backup, compact, extract retry) never create one: each
// command line with a bad flag, or a read-only one with a store that does
// not exist, fails and leaves the directory as it was: missing, empty, or
// a store, file for file. Before, serve --embedder foo wrote
// DIR/tokens.json and ui --dir created a store for tenant "default".
func TestTypoLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	in := writeFile(t, filepath.Join(tmp, "in.jsonl"),
		`{"type":"memory","user":"u","id":"01JQ0000000000000000000001","kind":"fact","text":"x","created_at":"2026-01-02T03:04:05Z"}`+"\n")
	out := filepath.Join(tmp, "out.jsonl")
	store := filepath.Join(tmp, "store")
	st, err := memory.Open(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range typoCases(in, out) {
		t.Run(tc.name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "typo")
			empty := t.TempDir()
			dirs := []string{missing, empty}
			if !tc.readOnly {
				dirs = append(dirs, store)
			}
			for _, dir := range dirs {
				before := listing(t, dir)
				err := runTypo(t, tc.args, []string{"--dir", dir})
				if err == nil {
					t.Errorf("--dir %s: no error", dir)
				} else if tc.readOnly && !strings.Contains(err.Error(), "no store in "+dir) {
					t.Errorf("--dir %s: %v, want no store in %s", dir, err, dir)
				}
				if after := listing(t, dir); after != before {
					t.Errorf("--dir %s changed:\nbefore:\n%s\nafter:\n%s", dir, before, after)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("--dir %s: %s was written", dir, out)
					os.Remove(out)
				}
			}
		})
	}
}

// TestTypoLeavesNoSchema: with PostgreSQL, the same command lines create
// no schema. Before, inspect --postgres-schema restored created it and
// its tables.
func TestTypoLeavesNoSchema(t *testing.T) {
	dsn, schema := kvtest.PostgresSchema(t, "typo_")
	tmp := t.TempDir()
	in := writeFile(t, filepath.Join(tmp, "in.jsonl"),
		`{"type":"memory","user":"u","id":"01JQ0000000000000000000001","kind":"fact","text":"x","created_at":"2026-01-02T03:04:05Z"}`+"\n")
	out := filepath.Join(tmp, "out.jsonl")
	tokens := writeServeTokens(t, 0o600)
	t.Setenv(postgresEnv, "")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tc := range typoCases(in, out) {
		if strings.HasPrefix(tc.name, "ui ") {
			continue // ui takes no --postgres
		}
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args[0] == "serve" {
				args = append(append([]string{}, args...), "--tokens", tokens)
			}
			err := runTypo(t, args, []string{"--postgres", dsn, "--postgres-schema", schema})
			if err == nil {
				t.Error("no error")
			} else if tc.readOnly && !strings.Contains(err.Error(), "no store in postgres schema "+schema) {
				t.Errorf("%v, want no store in postgres schema %s", err, schema)
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("schema %s was created", schema)
				if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
