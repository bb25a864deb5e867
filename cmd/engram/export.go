package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/cmd/engram/internal/transfer"
)

type exportOptions struct {
	store  storeFlags
	remote remoteFlags
	out    string
	format string
}

func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export --dir D --tenant T [--user U] [--out FILE|DIR|-] [--format jsonl|nquads|dir]",
		Short: "Export messages and memories (JSONL) or a knowledge graph (N-Quads)",
		Long: `export writes a tenant's data (or one user's, with --user) in the formats
engram import reads back, with ids and times, so that an import into a new
store exports to the same bytes again.

  --format jsonl    messages and memories, one JSON object per line: every
                    user's and the tenant's shared memories, or --user's
  --format nquads   the knowledge graph of --user, as N-Quads; its first line
                    (a comment) names the user
  --format dir      a directory: engram.jsonl, shared.nq (the tenant's shared
                    graph) and users/NAME.nq per user with a graph

Without --format, the format follows --out: a name ending in / or an existing
directory is dir, .nq or .nquads is nquads, .jsonl or .ndjson (and - for
standard output, the default) is jsonl; any other name is an error, as it
could mean a file or a directory. JSONL holds no knowledge graphs: export
them with --format dir (or nquads, one user's). Files and directories are written next to
their final name and renamed into place when complete, so a failed export
leaves nothing half-written.

With --url instead of --dir, export reads a running engram serve through its
GET /v1/admin/export (the same bytes; jsonl or nquads, not dir), with an
admin token in $ENGRAM_TOKEN or the variable --token-env names.`,
		Example: `  engram export --dir ./data --tenant acme --out acme.jsonl
  engram export --dir ./data --tenant acme --user alice --out alice.nq
  engram export --dir ./data --tenant acme --out acme-export/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.remote.set() {
				return runExportURL(cmd, o)
			}
			if err := o.remote.checkLocal(cmd); err != nil {
				return err
			}
			return runExport(cmd, o)
		},
	}
	o.store.register(cmd, flagRequired, flagOptional, flagAbsent)
	o.remote.register(cmd)
	cmd.Flags().StringVar(&o.out, "out", "-", "file or directory to write, or - for standard output")
	cmd.Flags().StringVar(&o.format, "format", "", "jsonl, nquads or dir (default: from --out)")
	return cmd
}

// exportFormat settles what export writes: "jsonl", "nquads" or "dir".
func exportFormat(format, out string) (string, error) {
	switch format {
	case "dir":
		return format, nil
	case "":
		if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(os.PathSeparator)) {
			return "dir", nil
		}
		if fi, err := os.Stat(out); err == nil && fi.IsDir() && out != "-" {
			return "dir", nil
		}
		if f, ok := transfer.FormatOf(out); ok {
			return f.String(), nil
		}
		if out == "-" {
			return "jsonl", nil
		}
		// A bare name used to mean JSONL, which holds no graphs: a user
		// who meant a directory lost them without a word.
		return "", fmt.Errorf("--out %s names no format: write %s/ for a directory of everything (messages, memories and the knowledge graphs), "+
			"%s.jsonl for messages and memories only, %s.nq for one user's graph; or give --format jsonl, nquads or dir", out, out, out, out)
	}
	f, err := transfer.ParseFormat(format)
	if err != nil {
		return "", fmt.Errorf("--format: %w (or dir)", err)
	}
	return f.String(), nil
}

func runExport(cmd *cobra.Command, o exportOptions) (err error) {
	if err := o.store.checkScope(); err != nil {
		return err
	}
	format, err := exportFormat(o.format, o.out)
	if err != nil {
		return err
	}
	switch {
	case format == "nquads" && o.store.user == "":
		return errors.New("an N-Quads file holds one user's graph: give --user, or export the whole tenant with --format dir")
	case format == "dir" && o.out == "-":
		return errors.New("--format dir needs --out DIR")
	}
	st, err := o.store.openRead(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	ctx, scope := cmd.Context(), o.store.scope()
	var c transfer.Counts
	write := func(w io.Writer) (err error) {
		if format == "nquads" {
			return transfer.ExportNQuads(ctx, st, scope, w)
		}
		c, err = transfer.ExportJSONL(ctx, st, scope, w)
		return err
	}
	// The summary goes where the data does not.
	report := cmd.OutOrStdout()
	switch {
	case format == "dir":
		c, err = transfer.ExportDir(ctx, st, scope, o.out)
	case o.out == "-":
		report = cmd.ErrOrStderr()
		err = write(cmd.OutOrStdout())
	default:
		err = fileio.WriteAtomic(o.out, write)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	whose := "tenant " + o.store.tenant
	if o.store.user != "" {
		whose = "user " + o.store.user + " of " + whose
	}
	where := o.out
	if where == "-" {
		where = "standard output"
	}
	switch format {
	case "nquads":
		fmt.Fprintf(report, "exported the graph of %s to %s\n", whose, where)
	case "dir":
		fmt.Fprintf(report, "exported %s, %s and %s of %s to %s\n",
			plural.Count(c.Messages, "message"), plural.Count(c.Memories, "memory"), plural.Count(c.Graphs, "graph"), whose, where)
	default:
		fmt.Fprintf(report, "exported %s and %s of %s to %s (JSONL holds no knowledge graphs: --format dir exports them too)\n",
			plural.Count(c.Messages, "message"), plural.Count(c.Memories, "memory"), whose, where)
	}
	return nil
}
