package embed_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

func ExamplePull() {
	// A fake Hub with a small model, for the example; a real pull needs no
	// Endpoint, and with no Dir it stores models in embed.ModelsDir().
	tmp, err := os.MkdirTemp("", "pull-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := embedtest.WriteStaticModel(src, embedtest.StaticModel{Dims: 4, Vocab: []string{"[UNK]", "car"}}); err != nil {
		fmt.Println(err)
		return
	}
	files := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		if files[f], err = os.ReadFile(filepath.Join(src, f)); err != nil {
			fmt.Println(err)
			return
		}
	}
	hub := embedtest.NewHub()
	hub.AddCommit("acme/tiny", embedtest.Commit("1"), files)
	hub.SetBranch("acme/tiny", "main", embedtest.Commit("1"))
	srv := httptest.NewServer(hub)
	defer srv.Close()

	m, err := embed.Pull(context.Background(), "acme/tiny", &embed.PullOptions{Dir: filepath.Join(tmp, "models"), Endpoint: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Name, m.Revision, m.Commit == embedtest.Commit("1"), m.Complete)
	for _, f := range m.Files {
		fmt.Println(f.Path, len(f.SHA256))
	}
	// With the default folder, embed.OpenModel("acme/tiny", nil) does this.
	s, err := embed.NewStatic(m.Dir, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dimensions:", s.Dimensions())
	// Output:
	// acme/tiny main true true
	// config.json 64
	// tokenizer.json 64
	// model.safetensors 64
	// dimensions: 4
}
