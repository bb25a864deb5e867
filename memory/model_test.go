package memory

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// TestOptionsModel: Options.Model opens a model pulled by name, and recall
// by meaning works with it; a model not pulled fails without a download,
// and Model with an Embedder is refused.
func TestOptionsModel(t *testing.T) {
	t.Setenv(embed.ModelsDirEnv, t.TempDir())
	t.Setenv(embed.HubEndpointEnv, "")
	t.Setenv(embed.HubTokenEnv, "")
	hub := embedtest.NewHub()
	srv := httptest.NewServer(hub)
	defer srv.Close()

	if _, err := Open("", &Options{Model: "acme/tiny"}); !errors.Is(err, embed.ErrModelNotPulled) {
		t.Fatalf("Open with a model not pulled: %v, want ErrModelNotPulled", err)
	}
	if n := len(hub.Requests()); n != 0 {
		t.Fatalf("Open made %d requests to the Hub; it must never download", n)
	}

	src := filepath.Join(t.TempDir(), "model")
	m := embedtest.StaticModel{Dims: 3, Vocab: []string{"[UNK]", "car", "automobile", "piano"},
		Rows: [][]float32{{0, 0, 0}, {1, 0, 0}, {1, 0, 0}, {0, 0, 1}}}
	if err := embedtest.WriteStaticModel(src, m); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	commit := embedtest.Commit("one")
	hub.AddCommit("acme/tiny", commit, files)
	hub.SetBranch("acme/tiny", "main", commit)
	if _, err := embed.Pull(context.Background(), "acme/tiny", &embed.PullOptions{Endpoint: srv.URL}); err != nil {
		t.Fatal(err)
	}

	hashing, err := embed.NewHashing(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open("", &Options{Model: "acme/tiny", Embedder: hashing}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with Model and Embedder: %v, want ErrInvalidOptions", err)
	}
	s, err := Open("", &Options{Model: "acme/tiny", SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	alice := Scope{Tenant: "t", User: "alice"}
	for _, text := range []string{"a piano", "a car"} {
		if _, err := s.Remember(ctx, alice, Memory{Kind: KindFact, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Recall(ctx, Query{Scope: alice, Text: "automobile", Sources: []Source{SourceMemories}, Retrieval: RetrievalVector, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) != 1 || rec.Items[0].Text != "a car" {
		t.Fatalf("recall of automobile by meaning: %+v, want a car", rec.Items)
	}
}
