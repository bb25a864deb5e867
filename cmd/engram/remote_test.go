package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/backupfile"
	"github.com/engramdb/engram/cmd/engram/internal/inspection"
)

const (
	remoteAdminToken  = "remote-admin-token-0123456789"
	remoteTenantToken = "remote-tenant-token-0123456789"
)

// serveForRemote serves the seeded store with an admin and a tenant token
// (in $ENGRAM_TEST_ADMIN and $ENGRAM_TEST_TENANT), extraction off so the
// store holds still. It returns the store's directory, the server's URL
// and a func that stops it.
func serveForRemote(t *testing.T) (dir, url string, stop func()) {
	t.Helper()
	o := serveTestOptions(t)
	o.dir = seedStore(t)
	o.extract.mode = "off"
	o.tokens = filepath.Join(t.TempDir(), "tokens.json")
	doc := `{"tokens":[{"token":"` + remoteAdminToken + `","tenant":"acme","admin":true},{"token":"` + remoteTenantToken + `","tenant":"acme"}]}`
	if err := os.WriteFile(o.tokens, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ENGRAM_TEST_ADMIN", remoteAdminToken)
	t.Setenv("ENGRAM_TEST_TENANT", remoteTenantToken)
	s := startServe(t, o)
	return o.dir, "http://" + s.addr, func() {
		s.cancel()
		<-s.done
		if s.err != nil {
			t.Fatal(s.err)
		}
	}
}

// TestBackupURL: engram backup, export and inspect --url read a running
// engram serve through its admin routes: the backup restores to the same
// data, the export is the bytes export --dir writes, and inspect reports
// the figures inspect --dir does; a tenant's token is refused with what
// to do.
func TestBackupURL(t *testing.T) {
	src, url, stop := serveForRemote(t)
	tmp := t.TempDir()
	bak := filepath.Join(tmp, "remote.backup")
	admin := []string{"--url", url, "--token-env", "ENGRAM_TEST_ADMIN"}
	if out := mustRun(t, append([]string{"backup", "--out", bak}, admin...)...); !strings.Contains(out, "backed up "+url+" to "+bak) {
		t.Errorf("backup --url: %s", out)
	}
	jsonl := stdoutOf(t, append([]string{"export", "--tenant", "acme"}, admin...)...)
	nq := stdoutOf(t, append([]string{"export", "--tenant", "acme", "--user", "alice", "--format", "nquads"}, admin...)...)
	inspectStore := mustRun(t, append([]string{"inspect", "--json"}, admin...)...)
	inspectUser := mustRun(t, append([]string{"inspect", "--json", "--tenant", "acme", "--user", "alice"}, admin...)...)
	inspectText := mustRun(t, append([]string{"inspect", "--tenant", "acme"}, admin...)...)

	for _, args := range [][]string{
		{"backup", "--out", filepath.Join(tmp, "refused.backup")},
		{"export", "--tenant", "acme", "--out", filepath.Join(tmp, "refused.jsonl")},
		{"inspect"},
	} {
		wantError(t, []string{`the token is not an admin token: mark it "admin": true in the tokens file`},
			append(args, "--url", url, "--token-env", "ENGRAM_TEST_TENANT")...)
		t.Setenv("ENGRAM_TEST_WRONG", "not-a-token-of-this-server")
		wantError(t, []string{"refused the token", "401"}, append(args, "--url", url, "--token-env", "ENGRAM_TEST_WRONG")...)
		wantError(t, []string{"$ENGRAM_TEST_UNSET is empty"}, append(args, "--url", url, "--token-env", "ENGRAM_TEST_UNSET")...)
		wantError(t, []string{"--dir does not go with it"}, append(args, "--url", url, "--token-env", "ENGRAM_TEST_ADMIN", "--dir", src)...)
		wantError(t, []string{"--token-env needs --url"}, append(args, "--token-env", "ENGRAM_TEST_ADMIN", "--dir", src)...)
	}
	if _, err := os.Stat(filepath.Join(tmp, "refused.backup")); !os.IsNotExist(err) {
		t.Errorf("a refused backup left a file: %v", err)
	}
	stop()

	if fi, err := os.Stat(bak); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the backup file: %v, mode %v", err, fi.Mode())
	}
	dst := filepath.Join(tmp, "restored")
	mustRun(t, "restore", "--dir", dst, "--in", bak)
	want := stdoutOf(t, "export", "--dir", src, "--tenant", "acme")
	if got := stdoutOf(t, "export", "--dir", dst, "--tenant", "acme"); got != want || !strings.Contains(want, "Dana") {
		t.Errorf("the restored store exports\n%s\nwant\n%s", got, want)
	}
	if jsonl != want {
		t.Errorf("export --url wrote\n%s\nexport --dir\n%s", jsonl, want)
	}
	if wantNQ := stdoutOf(t, "export", "--dir", src, "--tenant", "acme", "--user", "alice", "--format", "nquads"); nq != wantNQ || nq == "" {
		t.Errorf("export --url --format nquads wrote\n%s\nexport --dir\n%s", nq, wantNQ)
	}
	sameReport(t, inspectStore, mustRun(t, "inspect", "--json", "--dir", src))
	sameReport(t, inspectUser, mustRun(t, "inspect", "--json", "--dir", src, "--tenant", "acme", "--user", "alice"))
	for _, row := range []string{"alice", "(shared)", "total", "Extraction queue"} {
		if !strings.Contains(inspectText, row) {
			t.Errorf("inspect --url --tenant lacks %q:\n%s", row, inspectText)
		}
	}
}

// stdoutOf runs the command line and returns its standard output alone
// (the data; summaries go to stderr), failing the test on an error.
func stdoutOf(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := runCLIIO(t, strings.NewReader(""), args...)
	if err != nil {
		t.Fatalf("engram %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// sameReport compares two inspect --json reports but for the disk sizes,
// which differ between a running store and a closed one.
func sameReport(t *testing.T, remote, local string) {
	t.Helper()
	var r, l inspection.Report
	if err := json.Unmarshal([]byte(remote), &r); err != nil {
		t.Fatalf("%v: %s", err, remote)
	}
	if err := json.Unmarshal([]byte(local), &l); err != nil {
		t.Fatalf("%v: %s", err, local)
	}
	if r.DiskBytes <= 0 {
		t.Errorf("inspect --url reports %d bytes on disk", r.DiskBytes)
	}
	for _, p := range []*inspection.Report{&r, &l} {
		p.DiskBytes, p.LSMBytes, p.VLogBytes = 0, 0, 0
	}
	rb, _ := json.Marshal(r)
	lb, _ := json.Marshal(l)
	if !bytes.Equal(rb, lb) || (r.TotalUsage == nil || r.TotalUsage.Messages == 0) && r.User == nil {
		t.Errorf("inspect --url reports\n%s\ninspect --dir\n%s", rb, lb)
	}
}

// TestBackupURLAtomic: a transfer that breaks off leaves no file (and no
// temporary file) behind, and an answer that is not a backup is refused.
func TestBackupURLAtomic(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+remoteAdminToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v1/admin/backup" {
			io.WriteString(w, backupfile.Magic)
		}
		w.Write(bytes.Repeat([]byte("x"), 256<<10))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the server cuts the stream
	}))
	defer srv.Close()
	notBackup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>a proxy's login page</html>")
	}))
	defer notBackup.Close()
	t.Setenv("ENGRAM_TEST_ADMIN", remoteAdminToken)
	tmp := t.TempDir()
	admin := []string{"--token-env", "ENGRAM_TEST_ADMIN", "--url"}
	wantError(t, []string{"broke off"}, append([]string{"backup", "--out", filepath.Join(tmp, "cut.backup")}, append(admin, srv.URL)...)...)
	wantError(t, []string{"broke off"}, append([]string{"export", "--tenant", "acme", "--out", filepath.Join(tmp, "cut.jsonl")}, append(admin, srv.URL)...)...)
	wantError(t, []string{"not an engram backup"}, append([]string{"backup", "--out", filepath.Join(tmp, "page.backup")}, append(admin, notBackup.URL)...)...)
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("failed transfers left %v", entries)
	}
}

// TestServeDefaultTokenIsAdmin: the token serve generates on a first run
// is the operator's own, marked admin, so engram inspect (and backup,
// export) --url work with it at once; engram ui's token is not.
func TestServeDefaultTokenIsAdmin(t *testing.T) {
	o := serveTestOptions(t)
	o.tokens = ""
	s := startServe(t, o)
	var file struct {
		Tokens []struct {
			Token string
			Admin bool
		}
	}
	data, err := os.ReadFile(filepath.Join(o.dir, defaultTokensFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &file); err != nil || len(file.Tokens) != 1 || !file.Tokens[0].Admin {
		t.Fatalf("generated tokens file %s: %v", data, err)
	}
	t.Setenv("ENGRAM_TEST_ADMIN", file.Tokens[0].Token)
	if out := mustRun(t, "inspect", "--url", "http://"+s.addr, "--token-env", "ENGRAM_TEST_ADMIN"); !strings.Contains(out, "Extraction queue") {
		t.Errorf("inspect --url with the generated token:\n%s", out)
	}
	_, uiDoc, err := newTokensFile("acme", "engram ui", tenantToken)
	if err != nil || bytes.Contains(uiDoc, []byte(`"admin"`)) {
		t.Errorf("engram ui's token file %s (%v) marks it admin", uiDoc, err)
	}
}
