package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/backupfile"
)

// runBackupURL is engram backup --url: the backup of a running server's
// whole store, through GET /v1/admin/backup (an admin token), written as
// engram backup --dir writes it, mode 0600, renamed into place only once
// the whole stream has arrived.
func runBackupURL(cmd *cobra.Command, o backupOptions) error {
	if err := o.remote.check(cmd); err != nil {
		return err
	}
	n, err := o.remote.download(cmd.Context(), "/v1/admin/backup", nil, o.out, 0o600, cmd.OutOrStdout(), checkBackupStream)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	report, where := cmd.OutOrStdout(), o.out
	if o.out == "-" {
		report, where = cmd.ErrOrStderr(), "standard output"
	}
	fmt.Fprintf(report, "backed up %s to %s (%s)\n", o.remote.url, where, bytesText(n))
	return nil
}

// checkBackupStream refuses a body that does not start as a backup does
// (a proxy's page, say), and returns the body whole.
func checkBackupStream(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(backupfile.Magic))
	if err != nil || string(head) != backupfile.Magic {
		return nil, fmt.Errorf("%w: the server's answer does not start with %q", errNotBackup, strings.TrimSpace(backupfile.Magic))
	}
	return br, nil
}
