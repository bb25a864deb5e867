package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestPostgresFlags: the bad combinations of --dir, --postgres and the
// cluster flags are refused, before any database is reached, with an
// error naming the flags.
func TestPostgresFlags(t *testing.T) {
	t.Setenv(postgresEnv, "")
	tokens := writeServeTokens(t, 0o600)
	dsn := "host=127.0.0.1 port=1 user=nobody password=sekrit dbname=none connect_timeout=1"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"serve dir and postgres", []string{"serve", "--dir", t.TempDir(), "--postgres", dsn, "--tokens", tokens}, "mutually exclusive"},
		{"serve postgres without tokens", []string{"serve", "--postgres", dsn}, "--postgres needs --tokens"},
		{"serve empty postgres", []string{"serve", "--postgres", "", "--tokens", tokens}, "--postgres is empty"},
		{"serve schema with dir", []string{"serve", "--dir", t.TempDir(), "--postgres-schema", "x", "--tokens", tokens}, "--postgres-schema needs --postgres"},
		{"serve node-id without postgres", []string{"serve", "--dir", t.TempDir(), "--node-id", "a", "--tokens", tokens}, "--node-id needs --postgres"},
		{"serve advertise without postgres", []string{"serve", "--dir", t.TempDir(), "--advertise", "10.0.0.1:7437", "--tokens", tokens}, "--advertise needs --postgres"},
		{"serve lease-ttl without postgres", []string{"serve", "--dir", t.TempDir(), "--lease-ttl", "5s", "--tokens", tokens}, "--lease-ttl needs --postgres"},
		{"serve short lease", []string{"serve", "--postgres", dsn, "--tokens", tokens, "--lease-ttl", "100ms"}, "--lease-ttl"},
		{"serve wildcard advertise", []string{"serve", "--postgres", dsn, "--tokens", tokens, "--advertise", "0.0.0.0:7437"}, "--advertise"},
		{"serve advertise without port", []string{"serve", "--postgres", dsn, "--tokens", tokens, "--advertise", "node1"}, "--advertise"},
		{"serve wildcard addr without advertise", []string{"serve", "--postgres", dsn, "--tokens", tokens, "--addr", ":0"}, "--advertise is required"},
		{"serve nothing", []string{"serve", "--tokens", tokens}, "--postgres"},
		{"mcp dir and postgres", []string{"mcp", "--dir", t.TempDir(), "--postgres", dsn}, "mutually exclusive"},
		{"mcp nothing", []string{"mcp"}, "--postgres DSN"},
		{"import dir and postgres", []string{"import", "--dir", t.TempDir(), "--postgres", dsn, "--tenant", "t", "-"}, "mutually exclusive"},
		{"export nothing", []string{"export", "--tenant", "t"}, `required flag(s) "dir" not set`},
		{"inspect dir and postgres", []string{"inspect", "--dir", t.TempDir(), "--postgres", dsn}, "mutually exclusive"},
		{"restore postgres", []string{"restore", "--postgres", dsn, "--in", "-"}, "unknown flag: --postgres"},
		{"unreachable database", []string{"inspect", "--postgres", dsn}, "postgres schema engram"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, out)
			}
			if strings.Contains(err.Error(), "sekrit") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestPostgresEnvDSN: without --dir and --postgres, $ENGRAM_POSTGRES names
// the database; --dir still wins over it.
func TestPostgresEnvDSN(t *testing.T) {
	f := postgresFlags{}
	t.Setenv(postgresEnv, "postgres://x@h/db")
	if dsn, err := f.dsn(""); err != nil || dsn != "postgres://x@h/db" {
		t.Fatalf("dsn = %q, %v", dsn, err)
	}
	if dsn, err := f.dsn("/some/dir"); err != nil || dsn != "" {
		t.Fatalf("with --dir: dsn = %q, %v", dsn, err)
	}
}

func TestAdvertiseAddr(t *testing.T) {
	for _, tc := range []struct{ flag, bound, want string }{
		{"", "127.0.0.1:7437", "127.0.0.1:7437"},
		{"node1:80", "0.0.0.0:7437", "node1:80"},
		{"", "[::]:7437", ""},
		{"", "0.0.0.0:7437", ""},
		{"[::]:80", "127.0.0.1:1", ""},
	} {
		got, err := advertiseAddr(tc.flag, fakeAddr(tc.bound))
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("advertiseAddr(%q, %s) = %q, %v; want %q", tc.flag, tc.bound, got, err, tc.want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

// testPostgres returns ENGRAM_TEST_POSTGRES and a fresh schema dropped at
// cleanup, or skips.
func testPostgres(t *testing.T) (dsn, schema string) {
	t.Helper()
	return kvtest.PostgresSchema(t, "c_")
}

// TestPostgresCommands: export a tenant from a directory, import it into
// PostgreSQL (the DSN from $ENGRAM_POSTGRES), export it from there: the same
// bytes; inspect reads it.
func TestPostgresCommands(t *testing.T) {
	dsn, schema := testPostgres(t)
	t.Setenv(postgresEnv, dsn)
	src := seedStore(t)
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a.jsonl"), filepath.Join(tmp, "b.jsonl")
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--out", a)
	mustRun(t, "import", "--postgres-schema", schema, "--tenant", "acme", a)
	mustRun(t, "export", "--postgres", dsn, "--postgres-schema", schema, "--tenant", "acme", "--out", b)
	if x, y := readFile(t, a), readFile(t, b); x != y {
		t.Fatalf("through PostgreSQL the export differs:\n%s\n---\n%s", x, y)
	}
	out := mustRun(t, "inspect", "--postgres-schema", schema, "--tenant", "acme")
	if !strings.Contains(out, "postgres schema "+schema) || strings.Contains(out, "engram dbname") {
		t.Fatalf("inspect:\n%s", out)
	}
}

// TestServePostgres: two serve nodes on one schema; writes through one are
// read through the other, whichever owns the partition; /healthz of each
// names it and both nodes. The nodes run with --ui-host: clients name
// memory.example, and the forwards between nodes, which name the
// advertised address, are answered too.
func TestServePostgres(t *testing.T) {
	dsn, schema := testPostgres(t)
	node := func(id string) *serveInProcess {
		o := serveTestOptions(t)
		o.dir = ""
		o.pg = postgresFlags{url: dsn, schema: schema}
		o.nodeID, o.leaseTTL = id, 3*time.Second
		o.uiHosts = []string{"memory.example"}
		return startServe(t, o)
	}
	a, b := node("a"), node("b")
	if !strings.Contains(a.stdout.String(), "node a, advertised "+a.addr) {
		t.Fatalf("stdout: %s", a.stdout)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, url, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Host = "memory.example"
		req.Header.Set("Authorization", "Bearer "+serveTestToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	for i := 0; i < 8; i++ {
		u := fmt.Sprintf("u%d", i)
		if st, body := do("POST", "http://"+a.addr+"/v1/users/"+u+"/memories", `{"text":"memory of `+u+`"}`); st != 201 {
			t.Fatalf("remember %s through a: %d %s", u, st, body)
		}
		if st, body := do("GET", "http://"+b.addr+"/v1/users/"+u+"/memories", ""); st != 200 || !strings.Contains(body, "memory of "+u) {
			t.Fatalf("list %s through b: %d %s", u, st, body)
		}
	}
	for _, n := range []*serveInProcess{a, b} {
		st, body := do("GET", "http://"+n.addr+"/healthz", "")
		if st != 200 || !strings.Contains(body, `"database":"ok"`) || !strings.Contains(body, `{"id":"a"`) || !strings.Contains(body, `{"id":"b"`) {
			t.Fatalf("healthz of %s: %d %s", n.addr, st, body)
		}
	}
}

// FuzzAdvertiseAddr: --advertise is accepted only as host:port with a
// host other nodes can reach (not a wildcard) and a port other than 0.
func FuzzAdvertiseAddr(f *testing.F) {
	for _, s := range []string{"node1:7437", ":7437", "0.0.0.0:1", "[::]:1", "[fe80::1]:80", "h:0", "h", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := advertiseAddr(s, nil)
		if err != nil || s == "" {
			return
		}
		host, port, serr := net.SplitHostPort(got)
		if serr != nil || got != s || isWildcard(host) || port == "" || port == "0" {
			t.Fatalf("advertiseAddr(%q) = %q accepted", s, got)
		}
	})
}

// TestPostgresEncryptionKey: --encryption-key-file seals a store in
// PostgreSQL as it does a directory: opened without the key it is refused
// with the hint.
func TestPostgresEncryptionKey(t *testing.T) {
	dsn, schema := testPostgres(t)
	t.Setenv(postgresEnv, dsn)
	src := seedStore(t)
	tmp := t.TempDir()
	key := filepath.Join(tmp, "key")
	if err := os.WriteFile(key, []byte("00112233445566778899aabbccddeeff"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(tmp, "a.jsonl")
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--out", a)
	mustRun(t, "import", "--postgres-schema", schema, "--encryption-key-file", key, "--tenant", "acme", a)
	mustRun(t, "export", "--postgres-schema", schema, "--encryption-key-file", key, "--tenant", "acme", "--out", filepath.Join(tmp, "b.jsonl"))
	_, err := runCLI(t, "export", "--postgres-schema", schema, "--tenant", "acme", "--out", filepath.Join(tmp, "c.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "--encryption-key-file") {
		t.Fatalf("opened without the key: %v", err)
	}
}
