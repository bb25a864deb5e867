package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/cmd/engram/internal/transfer"
)

type importOptions struct {
	store     storeFlags
	format    string
	batchSize int
	progress  bool
}

func newImportCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import --dir D --tenant T [--user U] FILE|DIR|- ...",
		Short: "Import messages and memories (JSONL) and knowledge graphs (N-Quads)",
		Long: `import reads files written by engram export (or by hand, or by other tools)
into the tenant's store, creating the store if needed.

  .jsonl, .ndjson   messages and memories, one JSON object per line
  .nq, .nquads      one knowledge graph (of the user its first line names)
  a directory       every such file under it (what export --format dir writes)
  -                 standard input (JSONL unless --format says otherwise)

Every file is checked first: a malformed line anywhere, or a line for a user
other than --user, stops the import before anything is written, and the error
names the file and line. Then records are written in batches of consecutive
lines of one session or user (--batch-size), one transaction each: a record the
store refuses fails its whole batch and stops the import, and batches before it
stay. Records keep their ids, and ids already in the store are skipped, so
running the same import again after fixing the line completes it.

With --user, lines that name no user are that user's, and lines or graphs of
another user are errors. A progress bar goes to standard error when it is a
terminal (or with --progress).`,
		Example: `  engram import --dir ./data --tenant acme alice.jsonl alice.nq
  engram import --dir ./data --tenant acme ./acme-export/
  engram export --dir ./old --tenant acme | engram import --dir ./new --tenant acme -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.store.open.explain(runImport(cmd, args, o))
		},
	}
	o.store.register(cmd, flagRequired, flagOptional, flagAbsent)
	o.store.registerEmbedder(cmd)
	cmd.Flags().StringVar(&o.format, "format", "", "format of every file named: jsonl or nquads (default: by extension)")
	cmd.Flags().IntVar(&o.batchSize, "batch-size", transfer.DefaultBatchSize, "JSONL records per transaction")
	cmd.Flags().BoolVar(&o.progress, "progress", false, "show a progress bar on standard error (default: when it is a terminal)")
	return cmd
}

func runImport(cmd *cobra.Command, args []string, o importOptions) (err error) {
	if err := o.store.checkScope(); err != nil {
		return err
	}
	if o.batchSize < 1 {
		return fmt.Errorf("--batch-size %d: want at least 1", o.batchSize)
	}
	var format transfer.Format
	if o.format != "" {
		if format, err = transfer.ParseFormat(o.format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	var inputs []transfer.Input
	for _, a := range args {
		if a != "-" {
			in, err := transfer.Plan([]string{a}, format)
			if err != nil {
				return err
			}
			inputs = append(inputs, in...)
			continue
		}
		// Standard input is read twice (checked, then written): keep it in
		// a temporary file.
		in, cleanup, err := spoolStdin(cmd.InOrStdin(), format)
		if err != nil {
			return err
		}
		defer cleanup()
		inputs = append(inputs, in)
	}

	st, err := o.store.openStore(createStore)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	bar := newProgressBar(cmd, o.progress)
	stats, err := transfer.Import(cmd.Context(), st, inputs, transfer.ImportOptions{
		Tenant:    o.store.tenant,
		User:      o.store.user,
		BatchSize: o.batchSize,
		Progress:  bar.update,
	})
	w := cmd.OutOrStdout()
	if err != nil {
		bar.abandon()
		if stats.Batches > 0 || stats.Graph.Facts > 0 {
			printImportStats(w, "before the error, imported", stats)
		}
		return fmt.Errorf("import: %w", err)
	}
	bar.finish()
	printImportStats(w, fmt.Sprintf("imported %s into tenant %s:", plural.Count(stats.Files, "file"), o.store.tenant), stats)
	return nil
}

func printImportStats(w io.Writer, title string, s transfer.Stats) {
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "  messages  %d written, %d already there\n", s.Messages.Written, s.Messages.Existing)
	fmt.Fprintf(w, "  memories  %d written, %d already there, %s, %d expired\n",
		s.Memories.Written, s.Memories.Existing, plural.Count(s.Memories.Duplicates, "duplicate"), s.Memories.Expired)
	fmt.Fprintf(w, "  graph     %s and %s written, %s already there\n",
		plural.Count(s.Graph.Entities, "entity"), plural.Count(s.Graph.Facts, "fact"), plural.Count(s.Graph.Duplicates, "fact"))
}

// spoolStdin copies standard input to a temporary file.
func spoolStdin(r io.Reader, format transfer.Format) (transfer.Input, func(), error) {
	if format == 0 {
		format = transfer.FormatJSONL
	}
	f, err := os.CreateTemp("", "engram-import-*")
	if err != nil {
		return transfer.Input{}, nil, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(f, r)
	if err != nil {
		cleanup()
		return transfer.Input{}, nil, fmt.Errorf("read standard input: %w", err)
	}
	return transfer.Input{Name: "-", Path: f.Name(), Format: format, Size: n}, cleanup, nil
}

// progressBar draws an import's progress on standard error, one bar per
// phase; its zero value (no bar) ignores updates.
type progressBar struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	phase string
}

// newProgressBar returns a bar for the command's standard error when it is
// a terminal, or when --progress forces one (--progress=false forbids it).
func newProgressBar(cmd *cobra.Command, force bool) *progressBar {
	w := cmd.ErrOrStderr()
	on := force
	if !cmd.Flags().Changed("progress") {
		f, ok := w.(*os.File)
		on = ok && term.IsTerminal(int(f.Fd()))
	}
	if !on {
		return &progressBar{}
	}
	return &progressBar{w: w}
}

func (p *progressBar) update(pr transfer.Progress) {
	if p.w == nil || pr.Total <= 0 {
		return
	}
	if p.bar == nil || pr.Phase != p.phase {
		p.finish()
		desc := "checking "
		if pr.Phase == "import" {
			desc = "importing"
		}
		p.phase = pr.Phase
		p.bar = progressbar.NewOptions64(pr.Total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
		)
	}
	_ = p.bar.Set64(pr.Done) // only fails on a closed writer; the import goes on
}

// finish fills the bar: the phase is done.
func (p *progressBar) finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Finish()
	}
	p.bar = nil
}

// abandon leaves the bar where it stopped, on its own line.
func (p *progressBar) abandon() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
	p.bar = nil
}
