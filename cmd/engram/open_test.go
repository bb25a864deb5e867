package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engramdb/engram/embed/embedtest"
)

// writeKey writes a key file with mode perm and returns its path.
func writeKey(t *testing.T, content []byte, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, content, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func TestReadKeyFile(t *testing.T) {
	raw := bytes.Repeat([]byte{0xA7}, 32)
	for name, c := range map[string]struct {
		content []byte
		perm    os.FileMode
		want    []byte
		err     string
	}{
		"hex 32":        {content: []byte(hex.EncodeToString(raw) + "\n"), perm: 0o600, want: raw},
		"hex 16":        {content: []byte(hex.EncodeToString(raw[:16])), perm: 0o600, want: raw[:16]},
		"raw 24":        {content: raw[:24], perm: 0o400, want: raw[:24]},
		"short":         {content: []byte("0123456789"), perm: 0o600, err: "want 16, 24 or 32 bytes"},
		"hex 20":        {content: []byte(hex.EncodeToString(raw[:20])), perm: 0o600, err: "want 16, 24 or 32 bytes"},
		"world-read":    {content: []byte(hex.EncodeToString(raw)), perm: 0o644, err: "chmod 600"},
		"group-write":   {content: []byte(hex.EncodeToString(raw)), perm: 0o620, err: "chmod 600"},
		"not hex, 32":   {content: bytes.Repeat([]byte("z"), 32), perm: 0o600, want: bytes.Repeat([]byte("z"), 32)},
		"newline in 16": {content: []byte("0123456\n89abcdef"), perm: 0o600, want: []byte("0123456\n89abcdef")},
		"raw 16 + nl":   {content: []byte("0123456789abcdef\n"), perm: 0o600, err: "want 16, 24 or 32 bytes"},
	} {
		got, err := readKeyFile(writeKey(t, c.content, c.perm))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", name, err, c.err)
		case c.err == "" && (err != nil || !bytes.Equal(got, c.want)):
			t.Errorf("%s: %x, %v; want %x", name, got, err, c.want)
		}
	}
	if _, err := readKeyFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing key file read without an error")
	}
}

// TestEncryptedStoreAcrossCommands: a store created encrypted by import is
// read by export, recall, inspect and backup with the key, refused without
// it (with a hint), never holds the text in the clear, and restores into an
// encrypted store.
func TestEncryptedStoreAcrossCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	key := writeKey(t, []byte(hex.EncodeToString(bytes.Repeat([]byte{7}, 32))), 0o600)
	secret := "the vault code is zebra-quartz-4417"
	in := filepath.Join(t.TempDir(), "in.jsonl")
	line := `{"type":"memory","user":"alice","id":"01JQ0000000000000000000001","kind":"fact","text":"` + secret + `","created_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", "--dir", dir, "--tenant", "acme", "--encryption-key-file", key, in)

	out := mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--encryption-key-file", key, "vault code")
	if !strings.Contains(out, secret) {
		t.Fatalf("recall with the key does not find the memory:\n%s", out)
	}
	mustRun(t, "inspect", "--dir", dir, "--encryption-key-file", key)
	wantError(t, []string{"--encryption-key-file"}, "inspect", "--dir", dir)
	wantError(t, []string{"--encryption-key-file"}, "export", "--dir", dir, "--tenant", "acme")

	// Nothing of the text is in the files.
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("zebra-quartz")) {
			t.Errorf("%s holds the memory's text in the clear", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	backup := filepath.Join(t.TempDir(), "data.backup")
	mustRun(t, "backup", "--dir", dir, "--out", backup, "--encryption-key-file", key)
	restored := filepath.Join(t.TempDir(), "restored")
	mustRun(t, "restore", "--dir", restored, "--in", backup, "--encryption-key-file", key)
	wantError(t, []string{"--encryption-key-file"}, "inspect", "--dir", restored)
	out = mustRun(t, "recall", "--dir", restored, "--tenant", "acme", "--user", "alice", "--encryption-key-file", key, "vault code")
	if !strings.Contains(out, secret) {
		t.Fatalf("recall in the restored store does not find the memory:\n%s", out)
	}
}

// fakeOpenAI serves /v1/embeddings as an OpenAI-compatible server does,
// with a vector derived from the text's words, and counts its requests.
func fakeOpenAI(t *testing.T, wantKey string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer "+wantKey {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		var req struct {
			Input any    `json:"input"`
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "test-embed" {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		var texts []string
		switch in := req.Input.(type) {
		case string:
			texts = []string{in}
		case []any:
			for _, s := range in {
				texts = append(texts, s.(string))
			}
		}
		var data []any
		for i, text := range texts {
			v := make([]float32, 8)
			for _, word := range strings.Fields(strings.ToLower(text)) {
				h := fnv.New32a()
				h.Write([]byte(word))
				v[h.Sum32()%8]++
			}
			v[0] += 0.01 // never the zero vector
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestEmbedderFlags: --embedder openai sends the texts import writes and
// the queries recall asks to the configured server, with the key from the
// environment; bad combinations are refused before anything opens.
func TestEmbedderFlags(t *testing.T) {
	t.Setenv(apiKeyEnv, "sk-test-embed")
	srv, calls := fakeOpenAI(t, "sk-test-embed")
	dir := filepath.Join(t.TempDir(), "data")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	line := `{"type":"memory","user":"alice","id":"01JQ0000000000000000000001","kind":"preference","text":"Alice prefers email to phone calls","created_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	provider := []string{"--embedder", "openai", "--embed-url", srv.URL + "/v1", "--embed-model", "test-embed", "--embed-dimensions", "8"}
	mustRun(t, append([]string{"import", "--dir", dir, "--tenant", "acme", in}, provider...)...)
	if calls.Load() == 0 {
		t.Fatal("import did not embed with the configured provider")
	}
	before := calls.Load()
	out := mustRun(t, append([]string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "how to contact Alice"}, provider...)...)
	if !strings.Contains(out, "Alice prefers email") {
		t.Fatalf("recall with the provider:\n%s", out)
	}
	if calls.Load() == before {
		t.Fatal("recall did not embed its query with the configured provider")
	}

	wantError(t, []string{"--embedder ollama or openai"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embed-model", "m", "x")
	wantError(t, []string{"--embedder openai needs --embed-model"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "openai", "x")
	wantError(t, []string{`--embedder "word2vec"`}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "word2vec", "x")
}

// TestServeEncrypted: engram serve opens a store with
// --encryption-key-file, writes through it encrypted, and refuses a wrong
// key with the hint.
func TestServeEncrypted(t *testing.T) {
	o := serveTestOptions(t)
	o.open.keyFile = writeKey(t, []byte(hex.EncodeToString(bytes.Repeat([]byte{9}, 16))), 0o600)
	s := startServe(t, o)
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/v1/users/alice/memories",
		strings.NewReader(`{"text":"the alarm code is walrus-7781"}`))
	req.Header.Set("Authorization", "Bearer "+serveTestToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("remember = %d", resp.StatusCode)
	}
	s.cancel()
	<-s.done

	wrong := o
	wrong.open.keyFile = writeKey(t, []byte(hex.EncodeToString(bytes.Repeat([]byte{8}, 16))), 0o600)
	err = runServe(t.Context(), &serveBuffer{}, &serveBuffer{}, wrong)
	if err == nil || !strings.Contains(err.Error(), "--encryption-key-file") {
		t.Fatalf("serve with a wrong key: %v", err)
	}
	wantError(t, []string{"--encryption-key-file"}, "inspect", "--dir", o.dir)
	mustRun(t, "inspect", "--dir", o.dir, "--encryption-key-file", o.open.keyFile)
}

// writeCarModel writes into dir a small static model where "car" and
// "automobile" share a row, and "alice", "owns" and "piano" have their own.
func writeCarModel(t *testing.T, dir string) {
	t.Helper()
	m := embedtest.StaticModel{Dims: 4}
	for _, w := range []struct {
		word string
		row  []float32
	}{
		{"[UNK]", []float32{0, 0, 0, 0}},
		{"car", []float32{1, 0, 0, 0}},
		{"automobile", []float32{1, 0, 0, 0}},
		{"alice", []float32{0, 1, 0, 0}},
		{"owns", []float32{0, 0, 1, 0}},
		{"a", []float32{0, 0, 0, 0.1}},
		{"piano", []float32{0, 0, 0, 1}},
	} {
		m.Vocab = append(m.Vocab, w.word)
		m.Rows = append(m.Rows, w.row)
	}
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestStaticEmbedderFlags: --embedder static --model-dir loads a local
// Model2Vec model for import and recall, which then find a memory by a word
// it does not contain; the store remembers its embedder, so a command with
// the default one cannot write vectors of another model into it, and
// inspect names it.
func TestStaticEmbedderFlags(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model")
	writeCarModel(t, model)
	dir := filepath.Join(t.TempDir(), "data")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	lines := `{"type":"memory","user":"alice","id":"01JQ0000000000000000000001","kind":"fact","text":"Alice owns a car","created_at":"2026-01-02T03:04:05Z"}` + "\n" +
		`{"type":"memory","user":"alice","id":"01JQ0000000000000000000002","kind":"fact","text":"a piano","created_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(in, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	static := []string{"--embedder", "static", "--model-dir", model}
	mustRun(t, append([]string{"import", "--dir", dir, "--tenant", "acme", in}, static...)...)
	out := mustRun(t, append([]string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "automobile"}, static...)...)
	if !strings.Contains(out, "Alice owns a car") {
		t.Fatalf("recall by meaning with the static model:\n%s", out)
	}
	if out := mustRun(t, "inspect", "--dir", dir); !strings.Contains(out, "vectors from static/4-") {
		t.Fatalf("inspect does not name the embedder:\n%s", out)
	}
	wantError(t, []string{"vectors come from static/4-", "open it with that embedder"}, "import", "--dir", dir, "--tenant", "acme", in)
	// Named, another embedder is refused at open, with the hint.
	wantError(t, []string{"vectors come from static/4-", "--embedder flags"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "hashing", "car")

	wantError(t, []string{"--embedder static needs --model NAME", "engram model pull NAME", "or --model-dir"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "static", "x")
	wantError(t, []string{"--model-dir needs --embedder static"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--model-dir", model, "x")
	wantError(t, []string{"--embedder static", "config.json"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "static", "--model-dir", t.TempDir(), "x")
}

// TestSynonymsFlag: --synonyms on lets recall find a memory by a synonym
// with the default embedder; off (the default) does not.
func TestSynonymsFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	line := `{"type":"memory","user":"alice","id":"01JQ0000000000000000000001","kind":"fact","text":"Alice drives a red car","created_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", "--dir", dir, "--tenant", "acme", in)
	recall := []string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "What automobile does she own?"}
	if out := mustRun(t, recall...); strings.Contains(out, "red car") {
		t.Fatalf("recalled by a synonym with --synonyms off:\n%s", out)
	}
	if out := mustRun(t, append(recall, "--synonyms", "on")...); !strings.Contains(out, "red car") {
		t.Fatalf("not recalled with --synonyms on:\n%s", out)
	}
	wantError(t, []string{`--synonyms "maybe"`}, append(recall, "--synonyms", "maybe")...)
}
