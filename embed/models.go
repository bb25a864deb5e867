package embed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ModelsDirEnv is the environment variable that overrides the folder
// [Pull] stores models in and [ModelDir] looks them up in.
const ModelsDirEnv = "ENGRAM_MODEL_DIR"

// lockFileName is the file beside a pulled model's files that records what
// was pulled: the repository, the revision and its commit, and each file's
// size and checksums.
const lockFileName = "engram-model.lock"

// partialSuffix ends the name of a file being downloaded.
const partialSuffix = ".partial"

// pullFiles are the files of a Model2Vec folder that [Pull] downloads, the
// small ones first so that a bad revision fails before the big download.
// They are what [NewStatic] reads; the rest of a model repository
// (README.md, modules.json for sentence-transformers, ONNX exports) is not
// needed.
var pullFiles = []string{"config.json", "tokenizer.json", "model.safetensors"}

// pinnedFile is a file's size and SHA-256 as published, checked before and
// after download.
type pinnedFile struct {
	size   int64
	sha256 string
}

// knownModel is a model [Pull] knows by a short name.
type knownModel struct {
	repo     string
	revision string                // a commit
	files    map[string]pinnedFile // nil: the Hub's checksums, then the lock's
}

// lookupKnownModel returns the model [Pull] knows by name, if any.
//
// potion-base-8M's checksums are the published ones (the model's Hub page
// at that commit; the same values are pinned by many projects that use
// it); tokenizer.json's was checked against a byte-identical copy. The
// other models' commits are those public projects pin; their checksums
// come from the Hub at the first pull and are then held by the lock file.
func lookupKnownModel(name string) (knownModel, bool) {
	switch name {
	case "potion-base-8M":
		return knownModel{
			repo:     "minishlab/potion-base-8M",
			revision: "bf8b056651a2c21b8d2565580b8569da283cab23",
			files: map[string]pinnedFile{
				"config.json":       {202, "2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553"},
				"tokenizer.json":    {683666, "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"},
				"model.safetensors": {30236760, "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"},
			},
		}, true
	case "potion-base-32M":
		return knownModel{repo: "minishlab/potion-base-32M", revision: "1e5a03f8eeb2c98b928fbbd846f22f816360919f"}, true
	case "potion-retrieval-32M":
		return knownModel{repo: "minishlab/potion-retrieval-32M", revision: "6fc8051fab2a1e0ee76689cf08c853792ac285e7"}, true
	case "potion-multilingual-128M":
		return knownModel{repo: "minishlab/potion-multilingual-128M", revision: "a28f4eebecd4dc585034f605e52d414878a0417c"}, true
	}
	return knownModel{}, false
}

// knownModelNames lists the names [lookupKnownModel] knows, for messages.
const knownModelNames = "potion-base-8M, potion-base-32M, potion-retrieval-32M, potion-multilingual-128M"

// modelRef is what a model name resolves to.
type modelRef struct {
	name     string // the known name, or the repository "org/name"
	repo     string
	revision string // as asked; "" when a lookup gave none
	pinned   map[string]pinnedFile
}

// folder is the name of the model's folder under the models folder: the
// known name, or the repository with "--" for its "/" (a Hub repository
// name never holds "--").
func (r modelRef) folder() string { return strings.Replace(r.name, "/", "--", 1) }

var (
	// A Hub repository part: huggingface_hub's validate_repo_id allows
	// letters, digits, '-', '_' and '.', and neither "--" nor "..".
	repoPartRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	// A revision: a commit or a branch or tag name.
	revisionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$`)
	commitRE   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// parseModelName resolves a known name, or "org/name" with an optional
// "@revision". withDefault gives a repository without a revision "main";
// otherwise its revision is left empty.
func parseModelName(s string, withDefault bool) (modelRef, error) {
	name, rev, hasRev := strings.Cut(s, "@")
	if k, ok := lookupKnownModel(name); ok {
		if hasRev {
			return modelRef{}, fmt.Errorf("%w: %q: %s is pinned to a revision; for another one name its repository, %s@REVISION", ErrUnknownModel, s, name, k.repo)
		}
		return modelRef{name: name, repo: k.repo, revision: k.revision, pinned: k.files}, nil
	}
	org, base, ok := strings.Cut(name, "/")
	if !ok || !validRepoPart(org) || !validRepoPart(base) {
		return modelRef{}, fmt.Errorf("%w: %q is neither a known model (%s) nor a Hugging Face repository org/name[@revision]", ErrUnknownModel, s, knownModelNames)
	}
	if hasRev && (!revisionRE.MatchString(rev) || strings.Contains(rev, "..")) {
		return modelRef{}, fmt.Errorf("%w: %q: bad revision %q", ErrUnknownModel, s, rev)
	}
	if !hasRev && withDefault {
		rev = "main"
	}
	return modelRef{name: name, repo: name, revision: rev}, nil
}

func validRepoPart(s string) bool {
	return repoPartRE.MatchString(s) && !strings.Contains(s, "--") && !strings.Contains(s, "..") &&
		!strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "-")
}

// ModelsDir returns the folder that [Pull] stores models in and [ModelDir]
// looks them up in: $ENGRAM_MODEL_DIR when set, else "engram/models" in
// the user's cache folder ([os.UserCacheDir]: ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows). It creates
// nothing.
func ModelsDir() (string, error) {
	if d := os.Getenv(ModelsDirEnv); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("embed: models folder: %w (set $%s)", err, ModelsDirEnv)
	}
	return filepath.Join(c, "engram", "models"), nil
}

// ModelDir returns the folder of the pulled model name in [ModelsDir], to
// give to [NewStatic]. name is what was given to [Pull]: a known name
// ("potion-base-8M") or a repository ("org/name"); "org/name@revision"
// also checks that the revision pulled was that one.
//
// It never downloads anything. It returns an error wrapping
// [ErrModelNotPulled] when the model is not there or its pull did not
// complete (a file missing or of another size than its lock records), and
// [ErrUnknownModel] for a malformed name.
func ModelDir(name string) (string, error) {
	root, err := ModelsDir()
	if err != nil {
		return "", err
	}
	ref, err := parseModelName(name, false)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ref.folder())
	lock, err := readLock(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s is not in %s (engram model pull %s)", ErrModelNotPulled, ref.name, root, ref.name)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w (engram model pull %s)", ErrModelNotPulled, ref.name, err, ref.name)
	}
	// Only a revision the name states is checked: a known name finds the
	// model pulled under it even if a later Engram pins another commit,
	// so a store filled with it keeps opening.
	if _, rev, ok := strings.Cut(name, "@"); ok && rev != lock.Revision && !strings.EqualFold(rev, lock.Commit) {
		return "", fmt.Errorf("%w: %s was pulled at %s (%s), not %s", ErrModelNotPulled, ref.name, lock.Revision, lock.Commit, rev)
	}
	if missing := lock.missing(dir); missing != "" {
		return "", fmt.Errorf("%w: %s is incomplete: %s (engram model pull %s)", ErrModelNotPulled, ref.name, missing, ref.name)
	}
	return dir, nil
}

// OpenModel loads the pulled model name with [NewStatic]: the one line
// that gives a [memory.Options] its Embedder once `engram model pull
// name` (or [Pull]) has run. See [ModelDir] for the names and errors; it
// never downloads anything.
//
// [memory.Options]: https://pkg.go.dev/github.com/engramdb/engram/memory#Options
func OpenModel(name string, opts *StaticOptions) (*Static, error) {
	dir, err := ModelDir(name)
	if err != nil {
		return nil, err
	}
	return NewStatic(dir, opts)
}

// ModelInfo describes a pulled model, as [Pull] and [ListModels] return
// it.
type ModelInfo struct {
	// Name is the name it was pulled by: a known name, or the repository.
	Name string
	// Repo is the Hugging Face repository, "org/name"; empty for a folder
	// with no lock file (a first pull that did not complete).
	Repo string
	// Revision is the revision asked for, and Commit the commit it was
	// resolved to.
	Revision, Commit string
	// Dir is the model's folder, for [NewStatic].
	Dir string
	// Size is the number of bytes of the model's files in Dir.
	Size int64
	// Files lists the model's files as the lock records them.
	Files []ModelFile
	// Complete reports that every file is in place: [ModelDir] finds it.
	Complete bool
}

// ModelFile is one file of a pulled model.
type ModelFile struct {
	// Path is the file's name within the model's folder.
	Path string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of its content.
	SHA256 string
}

// ListModels returns the models in the models folder root (empty means
// [ModelsDir]), sorted by name: every folder with a lock file, and every
// folder where a first pull was interrupted (Complete false, Repo empty).
// A missing root holds no models.
func ListModels(root string) ([]ModelInfo, error) {
	if root == "" {
		var err error
		if root, err = ModelsDir(); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embed: list models: %w", err)
	}
	var out []ModelInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if m, ok := listedModel(filepath.Join(root, e.Name())); ok {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// listedModel describes the model folder dir for [ListModels], or false
// when dir holds neither a lock file nor a partial download.
func listedModel(dir string) (ModelInfo, bool) {
	lock, err := readLock(dir)
	if err != nil {
		name := strings.Replace(filepath.Base(dir), "--", "/", 1)
		m := ModelInfo{Name: name, Dir: dir}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), partialSuffix) && !slices.Contains(pullFiles, e.Name()) {
				continue
			}
			if fi, err := e.Info(); err == nil {
				m.Size += fi.Size()
			}
		}
		return m, m.Size > 0
	}
	m := ModelInfo{Name: lock.Name, Repo: lock.Repo, Revision: lock.Revision, Commit: lock.Commit, Dir: dir}
	for _, f := range lock.Files {
		m.Files = append(m.Files, ModelFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
		if fi, err := os.Stat(filepath.Join(dir, f.Path)); err == nil && fi.Mode().IsRegular() {
			m.Size += fi.Size()
		}
	}
	m.Complete = lock.missing(dir) == ""
	return m, true
}
