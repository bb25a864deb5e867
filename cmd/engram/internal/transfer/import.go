package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Input is one file to import.
type Input struct {
	// Name is how errors name the file: the path as given, or "-".
	Name string
	// Path is where the file is read from.
	Path string
	// Format is its format.
	Format Format
	// Size is its size in bytes, for progress.
	Size int64
}

// Plan turns file and directory names into inputs. A directory stands for
// the .jsonl, .ndjson, .nq and .nquads files under it, in lexical order
// (other files are left alone). A file named directly takes format when it
// is set, else the format its extension says; a file with neither is an
// error.
func Plan(paths []string, format Format) ([]Input, error) {
	var out []Input
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			f := format
			if f == 0 {
				var ok bool
				if f, ok = FormatOf(p); !ok {
					return nil, fmt.Errorf("%s: cannot tell the format from the extension (want .jsonl, .ndjson, .nq or .nquads, or give the format)", p)
				}
			}
			out = append(out, Input{Name: p, Path: p, Format: f, Size: fi.Size()})
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			f, ok := FormatOf(path)
			if d.IsDir() || !ok {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, Input{Name: path, Path: path, Format: f, Size: info.Size()})
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no .jsonl, .ndjson, .nq or .nquads files in the directory", p)
		}
	}
	return out, nil
}

// DefaultBatchSize is ImportOptions.BatchSize when zero.
const DefaultBatchSize = 256

// maxBatchBytes bounds the JSON of one batch, so that a batch of large
// messages stays well inside one transaction (a store's transactions hold
// about a megabyte; see kv.DB.TxnLimits). A batch the store still finds
// too large is split in two, each half a transaction of its own.
const maxBatchBytes = 256 << 10

// ImportOptions configures [Import].
type ImportOptions struct {
	// Tenant receives the data. Required.
	Tenant string
	// User, when set, is whose data the files are: JSONL lines without a
	// user get it, a line naming another user is an error, and so is an
	// N-Quads file whose first line names another owner. It is required
	// for N-Quads files that do not say whose graph they hold.
	User string
	// BatchSize is how many JSONL records one transaction writes at most.
	// Zero means DefaultBatchSize.
	BatchSize int
	// Progress, when set, is called as the import goes: first while the
	// files are checked, then while they are written.
	Progress func(Progress)
}

// Progress is how far an import is.
type Progress struct {
	// Phase is "check" or "import".
	Phase string
	// Done and Total are bytes of input: Total of every file.
	Done, Total int64
}

// Stats says what [Import] did.
type Stats struct {
	// Files counts the inputs imported whole.
	Files int `json:"files"`
	// Messages and Memories say what the JSONL records did: written,
	// already there, and for memories duplicates and expired ones.
	Messages memory.ImportStats `json:"messages"`
	Memories memory.ImportStats `json:"memories"`
	// Graph counts entities created and facts stored or found already
	// stored (Duplicates).
	Graph graph.LoadStats `json:"graph"`
	// Batches counts the transactions of JSONL records.
	Batches int `json:"batches"`
}

// Import checks every input, then writes them into st in batches: see the
// package documentation for what is checked first, what one batch is, and
// how to resume. On error the returned Stats say what was written before
// it.
func Import(ctx context.Context, st *memory.Store, inputs []Input, opts ImportOptions) (Stats, error) {
	var stats Stats
	scope := memory.Scope{Tenant: opts.Tenant, User: opts.User}
	if err := scope.Validate(scope.Level()); err != nil {
		return stats, err
	}
	if opts.BatchSize < 0 {
		return stats, fmt.Errorf("batch size %d is negative", opts.BatchSize)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = DefaultBatchSize
	}
	im := &importer{st: st, opts: opts}
	for _, in := range inputs {
		im.total += in.Size
	}
	owners := make([]graphOwner, len(inputs))
	for i, in := range inputs {
		var err error
		if owners[i], err = im.check(ctx, in); err != nil {
			return stats, fmt.Errorf("%s: %w", in.Name, err)
		}
		im.base += in.Size
	}
	im.base, im.phase = 0, "import"
	for i, in := range inputs {
		if err := im.write(ctx, in, owners[i], &stats); err != nil {
			return stats, err
		}
		stats.Files++
		im.base += in.Size
		im.report(0)
	}
	return stats, nil
}

// importer is the state of one Import.
type importer struct {
	st          *memory.Store
	opts        ImportOptions
	phase       string // "" means "check"
	base, total int64  // bytes of the files before the current one; of all
}

func (im *importer) report(done int64) {
	if im.opts.Progress == nil {
		return
	}
	phase := im.phase
	if phase == "" {
		phase = "check"
	}
	im.opts.Progress(Progress{Phase: phase, Done: min(im.base+done, im.total), Total: im.total})
}

// check reads one input whole and reports its first malformed line; for an
// N-Quads file it also returns whose graph it holds.
func (im *importer) check(ctx context.Context, in Input) (graphOwner, error) {
	f, err := os.Open(in.Path)
	if err != nil {
		return graphOwner{}, err
	}
	defer f.Close()
	if in.Format == FormatNQuads {
		o, err := readHeader(f)
		if err != nil {
			return o, err
		}
		if o, err = im.owner(o); err != nil {
			return o, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return o, err
		}
		cr := &countingReader{r: f}
		if _, err := graph.ParseNQuads(ctx, cr); err != nil {
			return o, err
		}
		im.report(cr.n)
		return o, nil
	}
	lr := newLineReader(f)
	for {
		b, err := lr.next()
		if err == io.EOF {
			im.report(lr.bytes)
			return graphOwner{}, nil
		}
		if err != nil {
			return graphOwner{}, err
		}
		if lr.line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return graphOwner{}, err
			}
			im.report(lr.bytes)
		}
		if isBlank(b) {
			continue
		}
		rec, err := decodeLine(b)
		if err == nil {
			err = im.resolveUser(&rec)
		}
		if err != nil {
			return graphOwner{}, fmt.Errorf("line %d: %w", lr.line, err)
		}
	}
}

// owner settles whose graph a file holds, from its first line and
// ImportOptions.User.
func (im *importer) owner(o graphOwner) (graphOwner, error) {
	u := im.opts.User
	switch {
	case !o.known && u == "":
		return o, fmt.Errorf("the file does not say whose graph it holds (no %q or %q line): give the user", headerUser+`"USER"`, headerShared)
	case !o.known:
		return graphOwner{known: true, user: u}, nil
	case u != "" && o.shared:
		return o, fmt.Errorf("line %d: the file holds the tenant's shared graph, but the import is for user %q", o.line, u)
	case u != "" && o.user != u:
		return o, fmt.Errorf("line %d: the file holds the graph of user %q, but the import is for user %q", o.line, o.user, u)
	}
	return o, nil
}

// resolveUser applies ImportOptions.User to a record.
func (im *importer) resolveUser(r *record) error {
	u := r.user()
	switch {
	case im.opts.User != "" && u != "" && u != im.opts.User:
		return fmt.Errorf("the line is for user %q, but the import is for user %q", u, im.opts.User)
	case u == "":
		r.setUser(im.opts.User)
	}
	if r.msg != nil && r.msg.User == "" {
		return errors.New(`a message needs "user" (or an import for one user)`)
	}
	return nil
}

// write imports one checked input.
func (im *importer) write(ctx context.Context, in Input, owner graphOwner, stats *Stats) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", in.Name, err)
	}
	defer f.Close()
	if in.Format == FormatNQuads {
		scope := memory.Scope{Tenant: im.opts.Tenant, User: owner.user}
		d, err := graph.ParseNQuads(ctx, f)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Name, err)
		}
		ls, err := im.st.ImportGraph(ctx, scope, d, &graph.LoadOptions{Progress: func(done, total int) {
			if total > 0 {
				im.report(in.Size * int64(done) / int64(total))
			}
		}})
		stats.Graph.Entities += ls.Entities
		stats.Graph.Facts += ls.Facts
		stats.Graph.Duplicates += ls.Duplicates
		if err != nil {
			return fmt.Errorf("%s: %w", in.Name, err)
		}
		return nil
	}
	lr := newLineReader(f)
	var b batch
	flush := func() error {
		if len(b.lines) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := im.writeBatch(ctx, &b, stats)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Name, err)
		}
		b = batch{}
		im.report(lr.bytes)
		return nil
	}
	for {
		line, err := lr.next()
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in.Name, err)
		}
		if isBlank(line) {
			continue
		}
		rec, err := decodeLine(line)
		if err == nil {
			err = im.resolveUser(&rec)
		}
		if err != nil { // the file changed since it was checked
			return fmt.Errorf("%s: line %d: %w", in.Name, lr.line, err)
		}
		if !b.fits(&rec, len(line), im.opts.BatchSize) {
			if err := flush(); err != nil {
				return err
			}
		}
		b.add(&rec, lr.line, len(line))
	}
}

// batch is consecutive records of one session (messages) or one user
// (memories).
type batch struct {
	user, session string // session "" for memories
	msgs          []memory.Message
	mems          []memory.Memory
	lines         []int
	bytes         int
}

// fits reports whether r can join the batch.
func (b *batch) fits(r *record, size, limit int) bool {
	if len(b.lines) == 0 {
		return true
	}
	if len(b.lines) >= limit || b.bytes+size > maxBatchBytes {
		return false
	}
	if r.msg != nil {
		return b.msgs != nil && r.msg.User == b.user && r.msg.Session == b.session
	}
	return b.mems != nil && r.mem.User == b.user
}

func (b *batch) add(r *record, line, size int) {
	if r.msg != nil {
		b.user, b.session = r.msg.User, r.msg.Session
		b.msgs = append(b.msgs, r.msg.Message)
	} else {
		b.user = r.mem.User
		b.mems = append(b.mems, r.mem.Memory)
	}
	b.lines = append(b.lines, line)
	b.bytes += size
}

// slice returns the batch's records from i to j.
func (b *batch) slice(i, j int) *batch {
	out := &batch{user: b.user, session: b.session, lines: b.lines[i:j]}
	if b.msgs != nil {
		out.msgs = b.msgs[i:j]
	} else {
		out.mems = b.mems[i:j]
	}
	return out
}

// writeBatch writes a batch in one transaction, or, when the store finds
// it too large for one, in two halves (recursively).
func (im *importer) writeBatch(ctx context.Context, b *batch, stats *Stats) error {
	var st memory.ImportStats
	var err error
	if b.msgs != nil {
		scope := memory.Scope{Tenant: im.opts.Tenant, User: b.user, Session: b.session}
		st, err = im.st.ImportMessages(ctx, scope, b.msgs)
	} else {
		st, err = im.st.ImportMemories(ctx, memory.Scope{Tenant: im.opts.Tenant, User: b.user}, b.mems)
	}
	var ie *memory.ImportError
	switch {
	case err == nil:
		stats.Batches++
		if b.msgs != nil {
			stats.Messages.Add(st)
		} else {
			stats.Memories.Add(st)
		}
		return nil
	case errors.As(err, &ie) && ie.Index >= 0 && ie.Index < len(b.lines):
		first, last := b.lines[0], b.lines[len(b.lines)-1]
		return fmt.Errorf("line %d: %w (its batch, lines %d-%d, was not imported; the lines before %d were)", b.lines[ie.Index], ie.Err, first, last, first)
	case errors.Is(err, memory.ErrTooLarge) && len(b.lines) > 1:
		n := len(b.lines) / 2
		if err := im.writeBatch(ctx, b.slice(0, n), stats); err != nil {
			return err
		}
		return im.writeBatch(ctx, b.slice(n, len(b.lines)), stats)
	}
	first, last := b.lines[0], b.lines[len(b.lines)-1]
	return fmt.Errorf("lines %d-%d: %w (not imported; the lines before %d were)", first, last, err, first)
}

func isBlank(b []byte) bool {
	return !slices.ContainsFunc(b, func(c byte) bool { return c != ' ' && c != '\t' && c != '\r' })
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (cr *countingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	cr.n += int64(n)
	return n, err
}
