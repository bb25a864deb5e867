package embed

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadLock: any bytes in a model's lock file are read without a panic,
// and a lock readLock accepts names every file [NewStatic] needs.
func FuzzReadLock(f *testing.F) {
	f.Add([]byte(`{"format":"engram-model-lock","version":1,"name":"a/b","repo":"a/b","revision":"main","commit":"0123456789abcdef0123456789abcdef01234567","files":[` +
		`{"path":"config.json","size":2,"sha256":"` + sha64 + `","git_sha1":""},` +
		`{"path":"tokenizer.json","size":2,"sha256":"` + sha64 + `","git_sha1":""},` +
		`{"path":"model.safetensors","size":2,"sha256":"` + sha64 + `","git_sha1":""}]}`))
	f.Add([]byte(`{"format":"engram-model-lock","version":2}`))
	f.Add([]byte(`{"files":[{"path":"../x","size":-1}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, lockFileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := readLock(dir)
		if err != nil {
			return
		}
		for _, p := range pullFiles {
			if l.file(p) == nil {
				t.Fatalf("accepted a lock without %s", p)
			}
		}
		for _, fl := range l.Files {
			if filepath.Base(fl.Path) != fl.Path || fl.Size < 0 {
				t.Fatalf("accepted entry %+v", fl)
			}
		}
		_ = l.missing(dir)
		_, _ = listedModel(dir)
	})
}

const sha64 = "0000000000000000000000000000000000000000000000000000000000000000"
