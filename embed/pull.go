package embed

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// defaultStallTimeout is how long a download may go without a byte before
// [Pull] gives it up (to be resumed by the next pull).
const defaultStallTimeout = 2 * time.Minute

// errStalled cancels a download that received nothing for the stall
// timeout.
var errStalled = errors.New("no data received for too long")

// PullOptions configures [Pull]. A nil *PullOptions, and every zero field,
// means the documented default.
type PullOptions struct {
	// Dir is the models folder. Empty means [ModelsDir].
	Dir string

	// Endpoint is the Hub's base URL. Empty means $HF_ENDPOINT if set
	// (like the Hub's own tools), else [DefaultHubEndpoint].
	Endpoint string

	// Token is sent to the Hub as a bearer token, for gated and private
	// models. Empty means $HF_TOKEN, if set.
	Token string

	// Client sends the requests. Nil means a client of Pull's own, whose
	// connections are closed when Pull returns; requests have no overall
	// timeout (the context bounds them), but a download that receives
	// nothing for two minutes is given up.
	Client *http.Client

	// Progress, when not nil, is called as each file is fetched, from the
	// goroutine that called Pull: once when its download starts, then
	// after every chunk written. A file already in place and verified is
	// reported once, with Resumed equal to Total.
	Progress func(PullProgress)

	// stallTimeout replaces defaultStallTimeout in tests.
	stallTimeout time.Duration
}

// PullProgress reports how far [Pull] is with one file.
type PullProgress struct {
	// File is the file's name within the model's folder.
	File string
	// Done is the number of bytes of it on disk, Total its size.
	Done, Total int64
	// Resumed is the number of bytes already on disk from an interrupted
	// download when this one started.
	Resumed int64
}

func (o *PullOptions) withDefaults() (PullOptions, error) {
	var out PullOptions
	if o != nil {
		out = *o
	}
	var err error
	if out.Dir == "" {
		if out.Dir, err = ModelsDir(); err != nil {
			return out, err
		}
	}
	if out.Endpoint == "" {
		out.Endpoint = os.Getenv(HubEndpointEnv)
	}
	if out.Endpoint == "" {
		out.Endpoint = DefaultHubEndpoint
	}
	out.Endpoint = strings.TrimRight(out.Endpoint, "/")
	if out.Token == "" {
		out.Token = os.Getenv(HubTokenEnv)
	}
	if out.stallTimeout == 0 {
		out.stallTimeout = defaultStallTimeout
	}
	return out, out.validate()
}

// validate reports every bad field at once.
func (o *PullOptions) validate() error {
	var errs []error
	if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("Endpoint %q is not an http or https URL", o.Endpoint))
	}
	return joinInvalid(errs)
}

// Pull downloads the Model2Vec model name from the Hugging Face Hub into
// its folder in the models folder ([PullOptions.Dir], default
// [ModelsDir]), verifies every file, and records what it pulled in the
// folder's lock file; [ModelDir] and [OpenModel] then find it by name.
// Nothing else in this package downloads anything.
//
// name is one of the models Pull knows, each at a pinned commit of its
// minishlab repository: potion-base-8M (256 dimensions, 30 MB; its files'
// SHA-256 are pinned here as published), potion-base-32M,
// potion-retrieval-32M and potion-multilingual-128M (512 MB); or any
// repository "org/name", at "@revision" (a commit, branch or tag;
// default main). A branch or tag is resolved to its commit, which the lock
// records.
//
// Pull downloads config.json, tokenizer.json and model.safetensors from the
// commit (the Hub's /resolve/ URLs) and checks each file's size and
// checksums against all of: the ones pinned here, the ones the Hub reports
// for that commit (the SHA-256 of a file stored with LFS, the git blob id
// of another), and the lock file of an earlier pull of the same commit,
// which they must all agree with before anything is downloaded. A file
// already in place that verifies is kept. Each download goes to a
// .partial file, which a later Pull resumes with an HTTP Range request;
// files are renamed into place only when all of them have verified, so a
// model pulled before stays usable until its replacement is complete.
//
// It returns an error wrapping [ErrUnknownModel] for a bad name,
// [ErrInvalidOptions] for bad options, [ErrHub] when the Hub answers with
// an error, [ErrLockMismatch] when the Hub's report disagrees with a pin or
// the lock, and [ErrChecksum] for a downloaded file that does not verify
// (which is deleted). An interrupted download returns the network error
// and keeps its partial file for the next Pull. Two Pulls of the same
// model must not run at once.
func Pull(ctx context.Context, name string, opts *PullOptions) (*ModelInfo, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ref, err := parseModelName(name, true)
	if err != nil {
		return nil, err
	}
	client := o.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = o.stallTimeout
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	p := &puller{
		ref:      ref,
		dir:      filepath.Join(o.Dir, ref.folder()),
		hub:      &hubClient{endpoint: o.Endpoint, token: o.Token, client: client},
		progress: o.Progress,
		stall:    o.stallTimeout,
	}
	return p.run(ctx)
}

// puller is one [Pull].
type puller struct {
	ref      modelRef
	dir      string
	hub      *hubClient
	progress func(PullProgress)
	stall    time.Duration
}

// expected is what a file must be: its size, and each checksum known.
type expected struct {
	size    int64
	sha256  string // "" when unknown (a file not in LFS, on a first pull)
	gitSHA1 string // "" when unknown (a file in LFS)
}

// run pulls p.ref into p.dir.
func (p *puller) run(ctx context.Context) (*ModelInfo, error) {
	info, err := p.hub.revision(ctx, p.ref.repo, p.ref.revision)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("embed: pull %s: %w", p.ref.name, err)
	}
	old, err := readLock(p.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return nil, fmt.Errorf("embed: pull %s: %w (remove %s to pull it afresh)", p.ref.name, err, p.dir)
	case old.Commit != info.SHA:
		old = nil // another commit: its lock says nothing about this one
	}
	lock := &modelLock{Name: p.ref.name, Repo: p.ref.repo, Revision: p.ref.revision, Commit: info.SHA}
	var staged []string // partial files that verified, to rename into place
	for _, f := range pullFiles {
		e, err := p.expect(info, old, f)
		if err != nil {
			return nil, err
		}
		got, partial, err := p.fetch(ctx, info.SHA, f, e)
		if err != nil {
			return nil, err
		}
		lock.Files = append(lock.Files, got)
		if partial != "" {
			staged = append(staged, partial)
		}
	}
	if err := p.install(lock, staged); err != nil {
		return nil, fmt.Errorf("embed: pull %s: %w", p.ref.name, err)
	}
	m, _ := listedModel(p.dir)
	return &m, nil
}

// expect merges what is known of file f: the Hub's report for the commit,
// the pin, and the lock of an earlier pull of the commit (old, may be
// nil). They must agree.
func (p *puller) expect(info *hubRevision, old *modelLock, f string) (expected, error) {
	s := info.sibling(f)
	if s == nil {
		return expected{}, fmt.Errorf("%w: %s@%s has no %s: not a Model2Vec model?", ErrHub, p.ref.repo, info.SHA, f)
	}
	var e expected
	switch {
	case s.LFS != nil:
		e = expected{size: s.LFS.Size, sha256: strings.ToLower(s.LFS.SHA256)}
		if !sha256RE.MatchString(e.sha256) {
			return e, fmt.Errorf("%w: %s: the Hub's LFS sha256 %q is not a SHA-256", ErrHub, f, s.LFS.SHA256)
		}
	case s.Size != nil:
		e = expected{size: *s.Size, gitSHA1: strings.ToLower(s.BlobID)}
		if !commitRE.MatchString(e.gitSHA1) {
			return e, fmt.Errorf("%w: %s: the Hub's blob id %q is not a git SHA-1", ErrHub, f, s.BlobID)
		}
	default:
		return e, fmt.Errorf("%w: %s: the Hub reports no size (does its API answer with blobs=true?)", ErrHub, f)
	}
	if e.size < 0 {
		return e, fmt.Errorf("%w: %s: size %d", ErrHub, f, e.size)
	}
	if pin, ok := p.ref.pinned[f]; ok {
		if err := e.merge(expected{size: pin.size, sha256: pin.sha256}); err != nil {
			return e, fmt.Errorf("%w: %s %s: %w, pinned by engram", ErrLockMismatch, p.ref.name, f, err)
		}
	}
	if old != nil {
		if l := old.file(f); l != nil {
			if err := e.merge(expected{size: l.Size, sha256: l.SHA256, gitSHA1: l.GitSHA1}); err != nil {
				return e, fmt.Errorf("%w: %s %s at %s: %w, recorded in %s", ErrLockMismatch, p.ref.name, f, info.SHA,
					err, filepath.Join(p.dir, lockFileName))
			}
		}
	}
	return e, nil
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// merge adds what o knows to e, or describes how they disagree: e is the
// Hub's report, o a pin or a lock.
func (e *expected) merge(o expected) error {
	if e.size != o.size {
		return fmt.Errorf("the Hub reports %d bytes, not %d", e.size, o.size)
	}
	if o.sha256 != "" {
		if e.sha256 != "" && e.sha256 != o.sha256 {
			return fmt.Errorf("the Hub reports sha256 %s, not %s", e.sha256, o.sha256)
		}
		e.sha256 = o.sha256
	}
	if o.gitSHA1 != "" {
		if e.gitSHA1 != "" && e.gitSHA1 != o.gitSHA1 {
			return fmt.Errorf("the Hub reports git blob %s, not %s", e.gitSHA1, o.gitSHA1)
		}
		e.gitSHA1 = o.gitSHA1
	}
	return nil
}

// check reports how got differs from e, nil if it does not.
func (e expected) check(got lockedFile) error {
	switch {
	case got.Size != e.size:
		return fmt.Errorf("%d bytes, want %d", got.Size, e.size)
	case e.sha256 != "" && got.SHA256 != e.sha256:
		return fmt.Errorf("sha256 %s, want %s", got.SHA256, e.sha256)
	case e.gitSHA1 != "" && got.GitSHA1 != e.gitSHA1:
		return fmt.Errorf("git blob %s, want %s", got.GitSHA1, e.gitSHA1)
	}
	return nil
}

// partialName is the name of f's download of the content e: one per
// content, so a download is only ever resumed for the content it began.
func (e expected) partialName(f string) string {
	id := e.sha256
	if id == "" {
		id = e.gitSHA1
	}
	return f + "." + id[:16] + partialSuffix
}

// fetch makes sure file f of the commit is in p.dir: the file in place if
// it verifies (partial ""), else a verified download in the returned
// partial file.
func (p *puller) fetch(ctx context.Context, commit, f string, e expected) (got lockedFile, partial string, err error) {
	final := filepath.Join(p.dir, f)
	if got, err := hashFile(final); err == nil && e.check(got) == nil {
		p.report(PullProgress{File: f, Done: e.size, Total: e.size, Resumed: e.size})
		return got, "", nil
	}
	partial = filepath.Join(p.dir, e.partialName(f))
	removeOtherPartials(p.dir, f, partial)
	if err := p.download(ctx, commit, f, partial, e.size); err != nil {
		return got, "", fmt.Errorf("embed: pull %s: %w", p.ref.name, err)
	}
	if got, err = hashFile(partial); err != nil {
		return got, "", fmt.Errorf("embed: pull %s: %w", p.ref.name, err)
	}
	if err := e.check(got); err != nil {
		_ = os.Remove(partial)
		return got, "", fmt.Errorf("%w: %s %s: downloaded %w (deleted)", ErrChecksum, p.ref.name, f, err)
	}
	got.Path = f
	return got, partial, nil
}

// removeOtherPartials deletes the downloads of other contents of f.
func removeOtherPartials(dir, f, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, f+".") && strings.HasSuffix(n, partialSuffix) && filepath.Join(dir, n) != keep {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
}

// download writes file f of the commit to partial, resuming from the bytes
// already there. On a network error it keeps what it wrote.
func (p *puller) download(ctx context.Context, commit, f, partial string, size int64) (err error) {
	off := int64(0)
	if fi, err := os.Stat(partial); err == nil && fi.Mode().IsRegular() && fi.Size() <= size {
		off = fi.Size()
	}
	p.report(PullProgress{File: f, Done: off, Total: size, Resumed: off})
	if off == size {
		if size == 0 {
			return writeFileAtomic(partial, nil)
		}
		return nil // complete: verified next
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(p.stall, func() { cancel(errStalled) })
	defer timer.Stop()
	resp, err := p.hub.download(ctx, p.ref.repo, commit, f, off)
	if err != nil {
		return stallCause(ctx, err)
	}
	defer resp.Body.Close()
	if off, err = resumeAt(resp, off); err != nil {
		return err
	}
	out, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if err := out.Truncate(off); err != nil {
		return err
	}
	if _, err := out.Seek(off, io.SeekStart); err != nil {
		return err
	}
	w := &progressWriter{w: out, p: p, prog: PullProgress{File: f, Done: off, Total: size, Resumed: off}, timer: timer, stall: p.stall}
	// One byte more than the rest of the file: a longer answer fails the
	// size check instead of passing for the file.
	n, err := io.Copy(w, io.LimitReader(resp.Body, size-off+1))
	if serr := out.Sync(); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("download %s: %w (%d of %d bytes kept: pull again to resume)", f, stallCause(ctx, err), off+n, size)
	}
	if off+n < size {
		return fmt.Errorf("download %s: the answer ended after %d of %d bytes (kept: pull again to resume)", f, off+n, size)
	}
	return nil
}

// stallCause returns err, or errStalled when that is why ctx ended.
func stallCause(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w: %w", errStalled, err)
	}
	return err
}

// contentRangeRE matches a Content-Range header's start: "bytes 123-".
var contentRangeRE = regexp.MustCompile(`^bytes (\d+)-`)

// resumeAt returns where the answer's body starts in the file: off for a
// 206 that starts there, 0 for a 200 (the whole file, as a server that
// ignores Range sends).
func resumeAt(resp *http.Response, off int64) (int64, error) {
	if resp.StatusCode != http.StatusPartialContent {
		return 0, nil
	}
	m := contentRangeRE.FindStringSubmatch(resp.Header.Get("Content-Range"))
	if m == nil {
		return 0, fmt.Errorf("%w: 206 with Content-Range %q", ErrHub, resp.Header.Get("Content-Range"))
	}
	start, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || start != off {
		return 0, fmt.Errorf("%w: asked for bytes from %d, got Content-Range %q", ErrHub, off, resp.Header.Get("Content-Range"))
	}
	return off, nil
}

// progressWriter writes to a download's file, reports progress, and holds
// off the stall timer while bytes arrive.
type progressWriter struct {
	w     io.Writer
	p     *puller
	prog  PullProgress
	timer *time.Timer
	stall time.Duration
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.timer.Reset(w.stall)
	n, err := w.w.Write(b)
	w.prog.Done += int64(n)
	w.p.report(w.prog)
	return n, err
}

// report calls the progress callback, if any.
func (p *puller) report(pr PullProgress) {
	if p.progress != nil {
		p.progress(pr)
	}
}

// install renames the verified downloads into place and writes the lock.
// The old lock goes first: between the two the model is not pulled (a
// mix of two commits is never taken for one), and the next pull finds the
// renamed files in place and verified.
func (p *puller) install(lock *modelLock, staged []string) error {
	if len(staged) > 0 {
		if err := os.Remove(filepath.Join(p.dir, lockFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, partial := range staged {
			final := strings.TrimSuffix(partial, partialSuffix)
			final = final[:strings.LastIndexByte(final, '.')] // the content id
			if err := os.Rename(partial, final); err != nil {
				return err
			}
		}
		if err := syncDir(p.dir); err != nil {
			return err
		}
	}
	return writeLock(p.dir, lock)
}

// hashFile returns path's size, SHA-256 and git blob id (the SHA-1 of
// "blob <size>\x00" and the content, which the Hub reports for a file not
// in LFS).
func hashFile(path string) (lockedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return lockedFile{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return lockedFile{}, err
	}
	if !fi.Mode().IsRegular() {
		return lockedFile{}, fmt.Errorf("%s is not a regular file", path)
	}
	s256, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", fi.Size())
	n, err := io.Copy(io.MultiWriter(s256, s1), f)
	if err != nil {
		return lockedFile{}, err
	}
	if n != fi.Size() {
		return lockedFile{}, fmt.Errorf("%s changed while read", path)
	}
	return lockedFile{Path: filepath.Base(path), Size: n, SHA256: hex.EncodeToString(s256.Sum(nil)), GitSHA1: hex.EncodeToString(s1.Sum(nil))}, nil
}
