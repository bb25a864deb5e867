package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// pullModel returns the files of a small Model2Vec model (a few KB, so a
// download can be cut in its middle), and its folder.
func pullModel(t *testing.T, seed uint64) (map[string][]byte, string) {
	t.Helper()
	m := embedtest.StaticModel{Dims: 16, Seed: seed, Vocab: []string{"[UNK]", "car", "automobile", "piano"}}
	for i := range 200 {
		m.Vocab = append(m.Vocab, fmt.Sprintf("w%d", i))
	}
	dir := filepath.Join(t.TempDir(), "model")
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	files["README.md"] = []byte("not downloaded\n")
	return files, dir
}

// hubFixture is a fake Hub serving the model "acme/tiny" at one commit,
// with main at it, and a models folder in $ENGRAM_MODEL_DIR.
type hubFixture struct {
	hub    *embedtest.Hub
	url    string
	root   string
	commit string
	files  map[string][]byte
	src    string // the model's folder, for embed.NewStatic
}

const tinyRepo = "acme/tiny"

func newHubFixture(t *testing.T) *hubFixture {
	t.Helper()
	f := &hubFixture{hub: embedtest.NewHub(), commit: embedtest.Commit("one"), root: t.TempDir()}
	f.files, f.src = pullModel(t, 1)
	f.hub.AddCommit(tinyRepo, f.commit, f.files)
	f.hub.SetBranch(tinyRepo, "main", f.commit)
	srv := httptest.NewServer(f.hub)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	t.Setenv(embed.ModelsDirEnv, f.root)
	t.Setenv(embed.HubEndpointEnv, "")
	t.Setenv(embed.HubTokenEnv, "")
	return f
}

func (f *hubFixture) pull(t *testing.T, name string) (*embed.ModelInfo, error) {
	t.Helper()
	return embed.Pull(context.Background(), name, &embed.PullOptions{Endpoint: f.url})
}

// downloads returns the files the Hub was asked for since request from,
// each with its Range header.
func (f *hubFixture) downloads(from int) []string {
	var out []string
	for _, r := range f.hub.Requests()[from:] {
		if i := strings.Index(r.Path, "/resolve/"); i >= 0 {
			out = append(out, r.Path[strings.LastIndexByte(r.Path, '/')+1:]+" "+r.Range)
		}
	}
	return out
}

// sameVectors checks that the pulled model embeds like the model it was
// made from.
func sameVectors(t *testing.T, pulled *embed.Static, src string) {
	t.Helper()
	orig, err := embed.NewStatic(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"car", "w3 w17 piano", "automobile w199"}
	a, err := pulled.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := orig.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("%q embeds differently from the pulled model", texts[i])
		}
	}
	if pulled.Identity() != orig.Identity() {
		t.Fatalf("identity %v, want %v", pulled.Identity(), orig.Identity())
	}
}

// TestPullThenOpen: a pull resolves main to its commit, downloads the three
// files a Model2Vec folder needs (not the rest), records them in the lock,
// and the model then opens by name, embedding as the original; a second
// pull of the same revision downloads nothing.
func TestPullThenOpen(t *testing.T) {
	f := newHubFixture(t)
	if _, err := embed.ModelDir(tinyRepo); !errors.Is(err, embed.ErrModelNotPulled) || !strings.Contains(err.Error(), "engram model pull acme/tiny") {
		t.Fatalf("ModelDir before a pull: %v, want ErrModelNotPulled naming the command", err)
	}
	var progress []embed.PullProgress
	m, err := embed.Pull(context.Background(), tinyRepo, &embed.PullOptions{Endpoint: f.url, Progress: func(p embed.PullProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(f.root, "acme--tiny")
	if m.Name != tinyRepo || m.Repo != tinyRepo || m.Revision != "main" || m.Commit != f.commit || m.Dir != wantDir || !m.Complete || len(m.Files) != 3 {
		t.Fatalf("pulled %+v", m)
	}
	var size int64
	for _, file := range m.Files {
		size += file.Size
	}
	if m.Size != size || size != int64(len(f.files["config.json"])+len(f.files["tokenizer.json"])+len(f.files["model.safetensors"])) {
		t.Fatalf("size %d, files %d", m.Size, size)
	}
	if got := f.downloads(0); !slices.Equal(got, []string{"config.json ", "tokenizer.json ", "model.safetensors "}) {
		t.Fatalf("downloads %q", got)
	}
	if last := progress[len(progress)-1]; last.File != "model.safetensors" || last.Done != last.Total || last.Total != int64(len(f.files["model.safetensors"])) {
		t.Fatalf("last progress %+v", last)
	}

	checkLockFile(t, wantDir, f.commit)

	s, err := embed.OpenModel(tinyRepo, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, s, f.src)
	for _, name := range []string{tinyRepo + "@main", tinyRepo + "@" + f.commit} {
		if dir, err := embed.ModelDir(name); err != nil || dir != wantDir {
			t.Errorf("ModelDir(%s) = %q, %v", name, dir, err)
		}
	}
	if _, err := embed.ModelDir(tinyRepo + "@v2"); !errors.Is(err, embed.ErrModelNotPulled) {
		t.Errorf("ModelDir of another revision: %v", err)
	}

	n := len(f.hub.Requests())
	if _, err := f.pull(t, tinyRepo); err != nil {
		t.Fatal(err)
	}
	if got := f.downloads(n); len(got) != 0 {
		t.Fatalf("a second pull of the same revision downloaded %q", got)
	}
}

// checkLockFile checks the lock file in dir records the pull of main at
// commit.
func checkLockFile(t *testing.T, dir, commit string) {
	t.Helper()
	var lock struct {
		Repo, Revision, Commit string
		Files                  []struct {
			Path   string
			Size   int64
			SHA256 string
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "engram-model.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if lock.Repo != tinyRepo || lock.Revision != "main" || lock.Commit != commit || len(lock.Files) != 3 || len(lock.Files[2].SHA256) != 64 {
		t.Fatalf("lock file:\n%s", b)
	}

}

// TestPullWrongChecksum: a file whose bytes differ from what the Hub
// reports (in LFS: its SHA-256; not in LFS: its git blob id), or that the
// Hub reports with a wrong SHA-256, fails with ErrChecksum and leaves
// nothing usable: no file, no partial download, no lock.
func TestPullWrongChecksum(t *testing.T) {
	for name, c := range map[string]struct {
		file  string
		spoil func(f *hubFixture, b []byte)
	}{
		"lfs content": {"model.safetensors", func(f *hubFixture, b []byte) {
			b[len(b)-1] ^= 1
			f.hub.Tamper(tinyRepo, f.commit, "model.safetensors", b)
		}},
		"git content": {"tokenizer.json", func(f *hubFixture, b []byte) {
			b[len(b)/2] ^= 1
			f.hub.Tamper(tinyRepo, f.commit, "tokenizer.json", b)
		}},
		"reported sha256": {"model.safetensors", func(f *hubFixture, _ []byte) {
			f.hub.Report(tinyRepo, f.commit, "model.safetensors", strings.Repeat("ab", 32))
		}},
		"longer": {"config.json", func(f *hubFixture, b []byte) {
			f.hub.Tamper(tinyRepo, f.commit, "config.json", append(b, ' '))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newHubFixture(t)
			c.spoil(f, slices.Clone(f.files[c.file]))
			_, err := f.pull(t, tinyRepo)
			if !errors.Is(err, embed.ErrChecksum) || !strings.Contains(err.Error(), c.file) {
				t.Fatalf("pull: %v, want ErrChecksum naming %s", err, c.file)
			}
			dir := filepath.Join(f.root, "acme--tiny")
			for _, p := range []string{c.file + "*", "model.safetensors", "tokenizer.json", "config.json", "engram-model.lock"} {
				if m, _ := filepath.Glob(filepath.Join(dir, p)); len(m) != 0 {
					t.Errorf("left %v", m)
				}
			}
			if _, err := embed.OpenModel(tinyRepo, nil); !errors.Is(err, embed.ErrModelNotPulled) {
				t.Errorf("OpenModel after a bad pull: %v", err)
			}
		})
	}
}

// TestPullResume: a download cut midway keeps its bytes, the model is not
// pulled, and the next pull asks for the rest with a Range request and
// completes with the right checksum, without downloading again the files
// the first pull finished. A server that ignores the Range and sends the
// whole file is written from the start.
func TestPullResume(t *testing.T) {
	for _, ignoreRange := range []bool{false, true} {
		t.Run(fmt.Sprint("ignore range ", ignoreRange), func(t *testing.T) {
			f := newHubFixture(t)
			size := int64(len(f.files["model.safetensors"]))
			f.hub.CutNext("model.safetensors", size/2)
			_, err := f.pull(t, tinyRepo)
			if err == nil || errors.Is(err, embed.ErrChecksum) || !strings.Contains(err.Error(), "pull again to resume") {
				t.Fatalf("cut download: %v", err)
			}
			dir := filepath.Join(f.root, "acme--tiny")
			partials, _ := filepath.Glob(filepath.Join(dir, "model.safetensors.*.partial"))
			if len(partials) != 1 {
				t.Fatalf("partial downloads %v", partials)
			}
			fi, err := os.Stat(partials[0])
			if err != nil || fi.Size() != size/2 {
				t.Fatalf("partial %v, %v; want %d bytes", fi, err, size/2)
			}
			if _, err := embed.ModelDir(tinyRepo); !errors.Is(err, embed.ErrModelNotPulled) {
				t.Fatalf("ModelDir after a cut pull: %v", err)
			}
			if l, err := embed.ListModels(""); err != nil || len(l) != 1 || l[0].Complete || l[0].Name != tinyRepo {
				t.Fatalf("ListModels after a cut pull: %+v, %v", l, err)
			}

			if ignoreRange {
				f.hub.IgnoreRange()
			}
			n := len(f.hub.Requests())
			m, err := f.pull(t, tinyRepo)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("model.safetensors bytes=%d-", size/2)
			if got := f.downloads(n); !slices.Equal(got, []string{want}) {
				t.Fatalf("resumed pull downloaded %q, want %q", got, want)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*.partial")); len(left) != 0 || !m.Complete {
				t.Fatalf("after the resumed pull: %v left, %+v", left, m)
			}
			s, err := embed.OpenModel(tinyRepo, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameVectors(t, s, f.src)
		})
	}
}

// TestPullLockMismatch: once a revision is pulled, a later pull of it must
// find the Hub reporting the same files; otherwise it fails with
// ErrLockMismatch before downloading, and the model stays as pulled.
func TestPullLockMismatch(t *testing.T) {
	for _, file := range []string{"model.safetensors", "tokenizer.json"} {
		t.Run(file, func(t *testing.T) {
			f := newHubFixture(t)
			if _, err := f.pull(t, tinyRepo+"@"+f.commit); err != nil {
				t.Fatal(err)
			}
			changed := map[string][]byte{}
			for k, v := range f.files {
				changed[k] = v
			}
			b := slices.Clone(f.files[file])
			b[len(b)-2] ^= 1
			changed[file] = b
			f.hub.AddCommit(tinyRepo, f.commit, changed) // the same commit, rewritten
			n := len(f.hub.Requests())
			_, err := f.pull(t, tinyRepo+"@"+f.commit)
			if !errors.Is(err, embed.ErrLockMismatch) || !strings.Contains(err.Error(), "engram-model.lock") {
				t.Fatalf("pull of a changed revision: %v, want ErrLockMismatch", err)
			}
			if got := f.downloads(n); len(got) != 0 {
				t.Fatalf("downloaded %q despite the mismatch", got)
			}
			s, err := embed.OpenModel(tinyRepo, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameVectors(t, s, f.src)
		})
	}
}

// TestPullBranchMoves: pulling a branch again after it moved pulls the new
// commit (a new lock), downloads only the changed file, and the model
// embeds as the new one.
func TestPullBranchMoves(t *testing.T) {
	f := newHubFixture(t)
	if _, err := f.pull(t, tinyRepo); err != nil {
		t.Fatal(err)
	}
	files2, src2 := pullModel(t, 2) // other rows, same vocabulary
	c2 := embedtest.Commit("two")
	f.hub.AddCommit(tinyRepo, c2, files2)
	f.hub.SetBranch(tinyRepo, "main", c2)
	// Cut: the model pulled before stays as it was, usable.
	f.hub.CutNext("model.safetensors", 100)
	if _, err := f.pull(t, tinyRepo); err == nil {
		t.Fatal("cut pull succeeded")
	}
	s, err := embed.OpenModel(tinyRepo, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, s, f.src)

	n := len(f.hub.Requests())
	m, err := f.pull(t, tinyRepo)
	if err != nil {
		t.Fatal(err)
	}
	if m.Commit != c2 || m.Revision != "main" {
		t.Fatalf("pulled %+v, want commit %s", m, c2)
	}
	if got := f.downloads(n); !slices.Equal(got, []string{"model.safetensors bytes=100-"}) {
		t.Fatalf("downloads %q, want only the rest of the changed table", got)
	}
	s, err = embed.OpenModel(tinyRepo, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, s, src2)
}

// TestPullPinned: potion-base-8M's files must have the published sizes and
// SHA-256 whatever the Hub says: a Hub reporting other sizes is refused
// before any download, and a file of the right size but other bytes (the
// Hub reporting only its git blob id) fails its pinned SHA-256.
func TestPullPinned(t *testing.T) {
	f := newHubFixture(t)
	const repo, commit = "minishlab/potion-base-8M", "bf8b056651a2c21b8d2565580b8569da283cab23"
	f.hub.AddCommit(repo, commit, f.files)
	_, err := f.pull(t, "potion-base-8M")
	if !errors.Is(err, embed.ErrLockMismatch) || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("pull of a Hub that disagrees with the pin: %v", err)
	}
	if got := f.downloads(0); len(got) != 0 {
		t.Fatalf("downloaded %q", got)
	}

	cfg := []byte(`{"model_type": "model2vec", "normalize": true}`)
	cfg = append(cfg, strings.Repeat(" ", 202-len(cfg))...) // the published size
	f.hub.AddCommit(repo, commit, map[string][]byte{"config.json": cfg, "tokenizer.json": f.files["tokenizer.json"], "model.safetensors": f.files["model.safetensors"]})
	_, err = f.pull(t, "potion-base-8M")
	if !errors.Is(err, embed.ErrChecksum) || !strings.Contains(err.Error(), "2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553") {
		t.Fatalf("pull of a config.json of the pinned size but other bytes: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(f.root, "potion-base-8M", "config.json*")); len(m) != 0 {
		t.Fatalf("left %v", m)
	}
}

// TestPullToken: $HF_TOKEN goes to the Hub as a bearer token, on every
// request; without it a gated model's 401 names the variable.
func TestPullToken(t *testing.T) {
	f := newHubFixture(t)
	f.hub.RequireToken("s3cret")
	_, err := f.pull(t, tinyRepo)
	if !errors.Is(err, embed.ErrHub) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("pull without a token: %v", err)
	}
	t.Setenv(embed.HubTokenEnv, "s3cret")
	n := len(f.hub.Requests())
	if _, err := f.pull(t, tinyRepo); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.hub.Requests()[n:] {
		if r.Authorization != "Bearer s3cret" {
			t.Fatalf("request %s without the token", r.Path)
		}
	}
}

// TestPullEndpointEnv: with no endpoint option, $HF_ENDPOINT names the Hub.
func TestPullEndpointEnv(t *testing.T) {
	f := newHubFixture(t)
	t.Setenv(embed.HubEndpointEnv, f.url+"/")
	if _, err := embed.Pull(context.Background(), tinyRepo, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.hub.Requests()) == 0 {
		t.Fatal("the Hub at $HF_ENDPOINT got no request")
	}
}

// TestPullBadNames: names that are neither known nor a repository, a known
// name with a revision, a missing repository or revision, and bad options
// fail with their errors; the bad names send no request.
func TestPullBadNames(t *testing.T) {
	f := newHubFixture(t)
	for _, name := range []string{"", "nope", "potion-base-8M@main", "a/b/c", "../x", "a/..", "a--b/c", "a/b@", "a/b@../main", "-a/b"} {
		if _, err := f.pull(t, name); !errors.Is(err, embed.ErrUnknownModel) {
			t.Errorf("Pull(%q): %v, want ErrUnknownModel", name, err)
		}
		if _, err := embed.ModelDir(name); !errors.Is(err, embed.ErrUnknownModel) {
			t.Errorf("ModelDir(%q): %v, want ErrUnknownModel", name, err)
		}
	}
	if n := len(f.hub.Requests()); n != 0 {
		t.Fatalf("bad names sent %d requests", n)
	}
	for _, name := range []string{"acme/none", tinyRepo + "@v9"} {
		if _, err := f.pull(t, name); !errors.Is(err, embed.ErrHub) || !strings.Contains(err.Error(), "404") {
			t.Errorf("Pull(%q): %v, want ErrHub 404", name, err)
		}
	}
	if _, err := embed.Pull(context.Background(), tinyRepo, &embed.PullOptions{Endpoint: "ftp://x"}); !errors.Is(err, embed.ErrInvalidOptions) {
		t.Errorf("ftp endpoint: %v", err)
	}
}

// TestListModels: every pulled model, by name, with its size and commit.
func TestListModels(t *testing.T) {
	f := newHubFixture(t)
	if l, err := embed.ListModels(""); err != nil || len(l) != 0 {
		t.Fatalf("empty folder: %v, %v", l, err)
	}
	files2, _ := pullModel(t, 2)
	f.hub.AddCommit("acme/other", embedtest.Commit("o"), files2)
	for _, name := range []string{tinyRepo, "acme/other@" + embedtest.Commit("o")} {
		if _, err := f.pull(t, name); err != nil {
			t.Fatal(err)
		}
	}
	l, err := embed.ListModels(f.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 2 || l[0].Name != "acme/other" || l[1].Name != tinyRepo || !l[0].Complete || l[0].Revision != embedtest.Commit("o") || l[1].Commit != f.commit || l[1].Size == 0 {
		t.Fatalf("ListModels: %+v", l)
	}
	if err := os.Remove(filepath.Join(f.root, "acme--tiny", "config.json")); err != nil {
		t.Fatal(err)
	}
	if l, _ := embed.ListModels(f.root); l[1].Complete {
		t.Fatal("a model with a file missing listed as complete")
	}
	if _, err := embed.ModelDir(tinyRepo); !errors.Is(err, embed.ErrModelNotPulled) || !strings.Contains(err.Error(), "config.json is missing") {
		t.Fatalf("ModelDir of an incomplete model: %v", err)
	}
}

// TestPullStall: a download that stops receiving bytes is given up after
// the stall timeout, keeping what it received, and the next pull resumes
// it.
func TestPullStall(t *testing.T) {
	f := newHubFixture(t)
	f.hub.StallNext("model.safetensors", 64)
	o := &embed.PullOptions{Endpoint: f.url}
	embed.SetStallTimeout(o, 50*time.Millisecond)
	_, err := embed.Pull(context.Background(), tinyRepo, o)
	if err == nil || !strings.Contains(err.Error(), "no data received") || !strings.Contains(err.Error(), "64 of") {
		t.Fatalf("stalled pull: %v", err)
	}
	n := len(f.hub.Requests())
	if _, err := f.pull(t, tinyRepo); err != nil {
		t.Fatal(err)
	}
	if got := f.downloads(n); !slices.Equal(got, []string{"model.safetensors bytes=64-"}) {
		t.Fatalf("after the stall, downloads %q", got)
	}
}

// TestModelDirKnownName: a known name finds the model pulled under it
// whatever commit its lock records (a later Engram may pin another), so a
// store filled with it keeps opening.
func TestModelDirKnownName(t *testing.T) {
	f := newHubFixture(t)
	if _, err := f.pull(t, tinyRepo); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, "potion-base-32M")
	if err := os.Rename(filepath.Join(f.root, "acme--tiny"), dir); err != nil {
		t.Fatal(err)
	}
	if got, err := embed.ModelDir("potion-base-32M"); err != nil || got != dir {
		t.Fatalf("ModelDir(potion-base-32M) = %q, %v; want %s", got, err, dir)
	}
}
