package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/backupfile"
	"github.com/engramdb/engram/cmd/engram/internal/inspection"
	"github.com/engramdb/engram/cmd/engram/internal/transfer"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// tokenAdmin is an admin token of tenant acme (adminTokens).
const tokenAdmin = "admin-token-0123456789abcdef"

// adminTokens are the test tokens plus tokenAdmin.
func adminTokens(t testing.TB) *Tokens {
	t.Helper()
	doc := strings.Replace(testTokensJSON, `"tokens": [`, `"tokens": [
	{"token": "`+tokenAdmin+`", "tenant": "acme", "name": "ops", "admin": true},`, 1)
	tok, err := ParseTokens([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// adminServer is a test server over store (closed by the test's cleanup)
// with adminTokens.
func adminServer(t *testing.T, store *memory.Store) *testServer {
	t.Helper()
	h, err := New(store, &Options{Tokens: adminTokens(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		store.Close()
	})
	return &testServer{t: t, url: srv.URL, client: srv.Client(), store: store, h: h, log: &syncBuffer{}}
}

// seedAdmin writes messages and a memory for two tenants through the API.
func seedAdmin(s *testServer, secret string) {
	for _, tok := range []string{tokenAcme, tokenGlobex} {
		s.must(201, "POST", "/v1/users/alice-private/sessions/s1/messages", tok,
			map[string]any{"messages": []map[string]string{{"role": "user", "content": "the vault code is " + secret}}})
		s.must(201, "POST", "/v1/users/alice-private/memories", tok,
			map[string]any{"kind": "fact", "text": "alice likes " + secret})
	}
}

// TestAdminRoutesAuth: the store-wide admin routes need an admin token
// (tenant tokens get 403 admin_required), compact and flush stay open to
// every token, and an admin token still serves its tenant.
func TestAdminRoutesAuth(t *testing.T) {
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := adminServer(t, store)
	for _, path := range []string{"/v1/admin/backup", "/v1/admin/export?tenant=acme", "/v1/admin/stats"} {
		if r := s.call("GET", path, "", nil); r.status != 401 {
			t.Errorf("GET %s without a token = %d, want 401", path, r.status)
		}
		for _, tok := range []string{tokenAcme, tokenGlobex} {
			r := s.call("GET", path, tok, nil)
			if r.status != 403 || r.errorCode() != "admin_required" || !strings.Contains(string(r.body), `\"admin\": true`) {
				t.Errorf("GET %s with a tenant token = %d %s, want 403 admin_required naming \"admin\": true", path, r.status, r.body)
			}
		}
		s.must(200, "GET", path, tokenAdmin, nil)
	}
	s.must(204, "POST", "/v1/admin/compact", tokenAcme, nil)
	s.must(204, "POST", "/v1/admin/flush", tokenGlobex, nil)
	s.must(201, "POST", "/v1/users/bob/memories", tokenAdmin, map[string]any{"kind": "fact", "text": "x"})
	if r := s.must(200, "GET", "/v1/users/bob/memories", tokenAcme, nil); !strings.Contains(string(r.body), `"text":"x"`) {
		t.Errorf("the admin token's write is not in its tenant: %s", r.body)
	}
}

// TestAdminBackupRestore: GET /v1/admin/backup of a running handler is an
// engram backup file that restores into a new store with every tenant's
// data.
func TestAdminBackupRestore(t *testing.T) {
	store, err := memory.Open("", &memory.Options{Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	s := adminServer(t, store)
	seedAdmin(s, "zebra")
	r := s.must(200, "GET", "/v1/admin/backup", tokenAdmin, nil)
	if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := r.header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=engram-") || !strings.HasSuffix(cd, ".backup") {
		t.Errorf("Content-Disposition %q", cd)
	}
	restored := restoreBackup(t, r.body, nil)
	for _, tenant := range []string{"acme", "globex"} {
		want := exportJSONL(t, store, memory.Scope{Tenant: tenant})
		if got := exportJSONL(t, restored, memory.Scope{Tenant: tenant}); got != want || !strings.Contains(got, "zebra") {
			t.Errorf("tenant %s restores as\n%s\nwant\n%s", tenant, got, want)
		}
	}
}

// restoreBackup loads a backup file into a new store, as engram restore
// does, and opens it.
func restoreBackup(t *testing.T, file, key []byte) *memory.Store {
	t.Helper()
	if !bytes.HasPrefix(file, []byte(backupfile.Magic)) {
		t.Fatalf("the backup starts with %q", file[:min(len(file), 20)])
	}
	dir := t.TempDir()
	db, err := engine.Open(dir, &engine.Options{EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Restore(context.Background(), bytes.NewReader(file[len(backupfile.Magic):])); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := memory.Open(dir, &memory.Options{EncryptionKey: key, Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func exportJSONL(t *testing.T, st *memory.Store, scope memory.Scope) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := transfer.ExportJSONL(context.Background(), st, scope, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAdminBackupSealed: the backup of an encrypted store is sealed as
// engram backup seals it: nothing in the clear, and it restores only with
// the store's key.
func TestAdminBackupSealed(t *testing.T) {
	const secret = "zebra-quartz-4417"
	key := bytes.Repeat([]byte{7}, 32)
	store, err := memory.Open(t.TempDir(), &memory.Options{EncryptionKey: key, Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	s := adminServer(t, store)
	seedAdmin(s, secret)
	r := s.must(200, "GET", "/v1/admin/backup", tokenAdmin, nil)
	for _, clear := range []string{secret, "alice-private", "globex"} {
		if bytes.Contains(r.body, []byte(clear)) {
			t.Errorf("the encrypted store's backup holds %q in the clear", clear)
		}
	}
	// Without the key the restore is refused.
	db, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Restore(context.Background(), bytes.NewReader(r.body[len(backupfile.Magic):]))
	db.Close()
	if !errors.Is(err, kv.ErrBackupKey) {
		t.Errorf("restore without the key = %v, want kv.ErrBackupKey", err)
	}
	restored := restoreBackup(t, r.body, key)
	if got := exportJSONL(t, restored, memory.Scope{Tenant: "globex"}); !strings.Contains(got, secret) {
		t.Errorf("the restored store lacks the memory:\n%s", got)
	}
}

// TestAdminExport: GET /v1/admin/export answers the bytes engram export
// writes (both call package transfer on the same store), and refuses bad
// parameters by name.
func TestAdminExport(t *testing.T) {
	store, err := memory.Open("", &memory.Options{Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	s := adminServer(t, store)
	seedAdmin(s, "zebra")
	s.must(201, "POST", "/v1/users/alice-private/relations", tokenAcme,
		map[string]any{"relations": []map[string]string{{"from": "Alice", "to": "Dana", "relationType": "knows"}}})
	ctx := context.Background()
	var nq bytes.Buffer
	if err := transfer.ExportNQuads(ctx, store, memory.Scope{Tenant: "acme", User: "alice-private"}, &nq); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query, want, contentType string
	}{
		{"format=jsonl&tenant=globex", exportJSONL(t, store, memory.Scope{Tenant: "globex"}), "application/x-ndjson"},
		{"tenant=acme", exportJSONL(t, store, memory.Scope{Tenant: "acme"}), "application/x-ndjson"},
		{"tenant=acme&user=alice-private", exportJSONL(t, store, memory.Scope{Tenant: "acme", User: "alice-private"}), "application/x-ndjson"},
		{"format=nquads&tenant=acme&user=alice-private", nq.String(), "application/n-quads"},
	}
	for _, tt := range tests {
		r := s.must(200, "GET", "/v1/admin/export?"+tt.query, tokenAdmin, nil)
		if string(r.body) != tt.want || !strings.Contains(tt.want, "alice") {
			t.Errorf("%s answers\n%s\nwant\n%s", tt.query, r.body, tt.want)
		}
		if ct := r.header.Get("Content-Type"); ct != tt.contentType {
			t.Errorf("%s: Content-Type %q, want %q", tt.query, ct, tt.contentType)
		}
	}
	for query, want := range map[string]string{
		"format=csv&tenant=acme":    "format",
		"format=dir&tenant=acme":    "format",
		"format=jsonl":              "tenant",
		"format=nquads&tenant=acme": "user",
		"tenant=a%2Fb":              "Tenant",
		"tenant=acme&bogus=1":       "bogus",
	} {
		r := s.call("GET", "/v1/admin/export?"+query, tokenAdmin, nil)
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Errorf("%s = %d %s, want 400 naming %s", query, r.status, r.body, want)
		}
	}
}

// TestAdminStats: GET /v1/admin/stats answers inspection.Build's report
// (what engram inspect prints) for the store, a tenant and a user.
func TestAdminStats(t *testing.T) {
	dir := t.TempDir()
	store, err := memory.Open(dir, &memory.Options{Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	s := adminServer(t, store)
	seedAdmin(s, "zebra")
	for _, scope := range []memory.Scope{{}, {Tenant: "acme"}, {Tenant: "globex", User: "alice-private"}} {
		q := ""
		if scope.Tenant != "" {
			q = "?tenant=" + scope.Tenant
		}
		if scope.User != "" {
			q += "&user=" + scope.User
		}
		var got inspection.Report
		s.must(200, "GET", "/v1/admin/stats"+q, tokenAdmin, nil).decode(t, &got)
		want, err := inspection.Build(context.Background(), store, inspection.Options{Scope: scope, Where: dir})
		if err != nil {
			t.Fatal(err)
		}
		if got.DiskBytes <= 0 || got.Dir != dir {
			t.Errorf("%q: dir %q, disk bytes %d", q, got.Dir, got.DiskBytes)
		}
		got.DiskBytes, got.LSMBytes, got.VLogBytes = 0, 0, 0
		if g, w := mustJSON(got), mustJSON(want); g != w {
			t.Errorf("%q: stats\n%s\nwant\n%s", q, g, w)
		}
	}
	if r := s.call("GET", "/v1/admin/stats?user=bob", tokenAdmin, nil); r.status != 400 {
		t.Errorf("user without tenant = %d %s", r.status, r.body)
	}
}

// TestAdminStreamCut: a stream that fails after its first bytes is cut,
// so the client sees a broken transfer rather than a short file that
// looks whole; one that fails before is a JSON error; and a client that
// goes away stops the writer.
func TestAdminStreamCut(t *testing.T) {
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := &syncBuffer{}
	h, err := New(store, &Options{Tokens: testTokens(t), Logger: slogJSON(logs)})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	fills := map[string]func(io.Writer) error{
		"/cut": func(w io.Writer) error {
			w.Write(bytes.Repeat([]byte("x"), 100<<10))
			return errors.New("disk on fire")
		},
		"/early": func(io.Writer) error { return memory.ErrNotFound },
		"/endless": func(w io.Writer) error {
			chunk := bytes.Repeat([]byte("y"), 32<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					stopped <- err
					return err
				}
			}
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.instrument(route{method: "GET", path: r.URL.Path}, w, r, func(w http.ResponseWriter, r *http.Request) error {
			return h.stream(w, r, "application/octet-stream", "f", fills[r.URL.Path])
		})
	}))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/cut")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("a cut stream read whole (%d bytes, status %d): the client cannot tell it is short", n, resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("the access log lacks the error: %s", logs)
	}

	resp, err = srv.Client().Get(srv.URL + "/early")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"not_found"`) {
		t.Errorf("an error before the first byte = %d %s, want a JSON 404", resp.StatusCode, body)
	}

	resp, err = srv.Client().Get(srv.URL + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // goes away mid-stream
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream went on writing after the client went away")
	}
}

// TestAdminClusterBackup: with PostgreSQL behind several nodes, any node's
// backup is of the whole shared store (one snapshot of the table, as
// engram backup --postgres takes), and its export and stats cover the
// partitions other nodes hold.
func TestAdminClusterBackup(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a := newClusterNode(t, dsn, schema, "node-a")
	b := newClusterNode(t, dsn, schema, "node-b")
	ua, ub := userOwnedBy(t, a, a, b), userOwnedBy(t, b, a, b)
	for _, u := range []string{ua, ub} {
		a.must(201, "POST", "/v1/users/"+u+"/memories", tokenAcme, map[string]any{"kind": "fact", "text": "held by the owner of " + u})
	}
	r := b.must(200, "GET", "/v1/admin/backup", tokenAdmin, nil)
	restored := restoreBackup(t, r.body, nil)
	got := exportJSONL(t, restored, memory.Scope{Tenant: "acme"})
	for _, u := range []string{ua, ub} {
		if !strings.Contains(got, "held by the owner of "+u) {
			t.Errorf("node b's backup lacks %s's memory:\n%s", u, got)
		}
	}
	fromA := a.must(200, "GET", "/v1/admin/export?tenant=acme", tokenAdmin, nil)
	fromB := b.must(200, "GET", "/v1/admin/export?tenant=acme", tokenAdmin, nil)
	if !bytes.Equal(fromA.body, fromB.body) || string(fromA.body) != got {
		t.Errorf("exports differ: node a\n%s\nnode b\n%s\nrestored\n%s", fromA.body, fromB.body, got)
	}
	var rep inspection.Report
	a.must(200, "GET", "/v1/admin/stats?tenant=acme", tokenAdmin, nil).decode(t, &rep)
	if len(rep.Users) != 2 || rep.Dir != "postgres" {
		t.Errorf("node a's stats: %+v", rep)
	}
}
