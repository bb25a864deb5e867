package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
)

// runExportURL is engram export --url: what engram export --dir writes,
// the same bytes, read from a running server through GET
// /v1/admin/export (an admin token). --format dir is not offered: the
// route streams one file.
func runExportURL(cmd *cobra.Command, o exportOptions) error {
	if err := o.remote.check(cmd); err != nil {
		return err
	}
	if err := o.store.checkScope(); err != nil {
		return err
	}
	format, err := exportFormat(o.format, o.out)
	if err != nil {
		return err
	}
	switch {
	case format == "dir":
		return errors.New("--url exports one file: give --format jsonl (messages and memories) or nquads (one user's graph); --format dir needs --dir")
	case format == "nquads" && o.store.user == "":
		return errors.New("an N-Quads file holds one user's graph: give --user")
	}
	q := url.Values{"format": {format}, "tenant": {o.store.tenant}}
	if o.store.user != "" {
		q.Set("user", o.store.user)
	}
	identity := func(r io.Reader) (io.Reader, error) { return r, nil }
	if _, err := o.remote.download(cmd.Context(), "/v1/admin/export", q, o.out, 0o644, cmd.OutOrStdout(), identity); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	report, where := cmd.OutOrStdout(), o.out
	if o.out == "-" {
		report, where = cmd.ErrOrStderr(), "standard output"
	}
	whose := "tenant " + o.store.tenant
	if o.store.user != "" {
		whose = "user " + o.store.user + " of " + whose
	}
	fmt.Fprintf(report, "exported %s of %s from %s to %s\n", format, whose, o.remote.url, where)
	return nil
}
