package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// modelHub serves, from a fake Hugging Face Hub, the model "acme/tiny" with
// main at one commit: a small model where "car" and "automobile" share a
// row. The models folder and the Hub are set in the environment as a user
// would. It returns the Hub and the commit.
func modelHub(t *testing.T) (*embedtest.Hub, string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "model")
	writeCarModel(t, src)
	files := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	hub := embedtest.NewHub()
	commit := embedtest.Commit("tiny")
	hub.AddCommit("acme/tiny", commit, files)
	hub.SetBranch("acme/tiny", "main", commit)
	srv := httptest.NewServer(hub)
	t.Cleanup(srv.Close)
	t.Setenv(embed.ModelsDirEnv, filepath.Join(t.TempDir(), "models"))
	t.Setenv(embed.HubEndpointEnv, srv.URL)
	t.Setenv(embed.HubTokenEnv, "")
	return hub, commit
}

// TestModelPullThenUse: before a pull, --model NAME fails naming the pull
// command and sends nothing to the Hub; engram model pull (progress on
// standard error, resumed after a cut) makes the model usable by name for
// import and recall, which then touch no network; model list shows it.
func TestModelPullThenUse(t *testing.T) {
	hub, commit := modelHub(t)
	dir := filepath.Join(t.TempDir(), "data")
	in := writeFile(t, filepath.Join(t.TempDir(), "in.jsonl"),
		`{"type":"memory","user":"alice","id":"01JQ0000000000000000000001","kind":"fact","text":"Alice owns a car","created_at":"2026-01-02T03:04:05Z"}`+"\n"+
			`{"type":"memory","user":"alice","id":"01JQ0000000000000000000002","kind":"fact","text":"a piano","created_at":"2026-01-02T03:04:05Z"}`+"\n")
	static := []string{"--embedder", "static", "--model", "acme/tiny"}

	wantError(t, []string{"--model acme/tiny", "model not pulled", "engram model pull acme/tiny"},
		append([]string{"import", "--dir", dir, "--tenant", "acme", in}, static...)...)
	if out := mustRun(t, "model", "list"); !strings.Contains(out, "no models in") {
		t.Fatalf("model list before a pull:\n%s", out)
	}
	if n := len(hub.Requests()); n != 0 {
		t.Fatalf("%d requests to the Hub without engram model pull", n)
	}

	hub.CutNext("model.safetensors", 40)
	if _, _, err := runCLIIO(t, nil, "model", "pull", "acme/tiny"); err == nil || !strings.Contains(err.Error(), "pull again to resume") {
		t.Fatalf("cut pull: %v", err)
	}
	if out := mustRun(t, "model", "list"); !strings.Contains(out, "acme/tiny (incomplete)") {
		t.Fatalf("model list after a cut pull:\n%s", out)
	}
	stdout, stderr, err := runCLIIO(t, nil, "model", "pull", "acme/tiny")
	if err != nil {
		t.Fatalf("model pull: %v\n%s", err, stderr)
	}
	for _, want := range []string{"config.json: ", "in place", "model.safetensors: resuming at 40 B of ", "(100%)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "pulled acme/tiny (acme/tiny@main ("+commit+")") || !strings.Contains(stdout, "--embedder static --model acme/tiny") {
		t.Errorf("model pull output:\n%s", stdout)
	}

	out := mustRun(t, "model", "list")
	modelDir := filepath.Join(os.Getenv(embed.ModelsDirEnv), "acme--tiny")
	for _, want := range []string{"NAME", "SOURCE", "SIZE", "PATH", "acme/tiny  ", "acme/tiny@main (" + commit + ")", " B  ", modelDir} {
		if !strings.Contains(out, want) {
			t.Errorf("model list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "incomplete") {
		t.Errorf("model list after the pull:\n%s", out)
	}

	n := len(hub.Requests())
	mustRun(t, append([]string{"import", "--dir", dir, "--tenant", "acme", in}, static...)...)
	out = mustRun(t, append([]string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "automobile"}, static...)...)
	if !strings.Contains(out, "Alice owns a car") {
		t.Fatalf("recall by meaning with the pulled model:\n%s", out)
	}
	// The same model by folder is the same embedder.
	mustRun(t, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "static", "--model-dir", modelDir, "car")
	if got := len(hub.Requests()); got != n {
		t.Fatalf("import and recall sent %d requests to the Hub", got-n)
	}

	wantError(t, []string{"--model or --model-dir, not both"}, append([]string{"recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--model-dir", modelDir, "car"}, static...)...)
	wantError(t, []string{"--model needs --embedder static"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--model", "acme/tiny", "car")
	wantError(t, []string{"unknown model"}, "recall", "--dir", dir, "--tenant", "acme", "--user", "alice", "--embedder", "static", "--model", "nope", "car")
}

// TestModelPullEndpointFlag: --endpoint overrides $HF_ENDPOINT, and a
// failed pull says why.
func TestModelPullEndpointFlag(t *testing.T) {
	hub, _ := modelHub(t)
	url := os.Getenv(embed.HubEndpointEnv)
	t.Setenv(embed.HubEndpointEnv, "http://127.0.0.1:1")
	mustRun(t, "model", "pull", "--endpoint", url, "acme/tiny@main")
	if len(hub.Requests()) == 0 {
		t.Fatal("no request reached the --endpoint Hub")
	}
	wantError(t, []string{"model pull", "hub request failed", "404"}, "model", "pull", "--endpoint", url, "acme/none")
	wantError(t, []string{"unknown model", "potion-base-8M"}, "model", "pull", "nope")
	wantError(t, []string{"accepts 1 arg"}, "model", "pull")
}
