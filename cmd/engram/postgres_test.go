package main

import (
	"strings"
	"testing"
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
		{"restore postgres", []string{"restore", "--postgres", dsn, "--in", "-"}, "not supported"},
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
