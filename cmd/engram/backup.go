package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/backupfile"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
)

// backupMagic starts every backup file (see package backupfile, whose
// Write the command and the server's GET /v1/admin/backup share).
const backupMagic = backupfile.Magic

type backupOptions struct {
	store  storeFlags
	remote remoteFlags
	out    string
}

func newBackupCmd() *cobra.Command {
	var o backupOptions
	cmd := &cobra.Command{
		Use:   "backup --dir D --out FILE|-",
		Short: "Write a full copy of a store to a file",
		Long: `backup writes every key of the store to one file (Badger's backup stream),
which engram restore loads into a new store. The file is written next to its
final name, readable by its owner only (mode 0600), and renamed into place
when complete. The backup of an encrypted store is encrypted too (AES-GCM,
under a key drawn from the store's): restoring it needs the same
--encryption-key-file. The backup of a plain store is plain: keep it
somewhere safe.

The store must not be open in another process (engram mcp). To back up the
store of a running engram serve, give --url instead of --dir: the backup
comes through its GET /v1/admin/backup, the same file, and needs an admin
token (see engram serve --help) in $ENGRAM_TOKEN or the variable
--token-env names. With PostgreSQL behind several servers, any one of them
backs up the whole shared store.`,
		Example: `  engram backup --dir ./data --out data.backup
  ENGRAM_TOKEN=... engram backup --url http://127.0.0.1:7437 --out data.backup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.remote.set() {
				return runBackupURL(cmd, o)
			}
			if err := o.remote.checkLocal(cmd); err != nil {
				return err
			}
			return runBackup(cmd, o)
		},
	}
	o.store.register(cmd, flagAbsent, flagAbsent, flagAbsent)
	o.remote.register(cmd)
	cmd.Flags().StringVar(&o.out, "out", "", "file to write, or - for standard output (required)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runBackup(cmd *cobra.Command, o backupOptions) (err error) {
	st, err := o.store.openRead(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	ctx := cmd.Context()
	var n int64
	write := func(w io.Writer) error {
		cw := &fileio.CountingWriter{W: w}
		err := backupfile.Write(ctx, st, cw)
		n = cw.N
		return err
	}
	report := cmd.OutOrStdout()
	if o.out == "-" {
		report = cmd.ErrOrStderr()
		err = write(cmd.OutOrStdout())
	} else {
		// A backup holds every user's data: its owner alone may read it.
		err = fileio.WriteAtomicMode(o.out, 0o600, write)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	where := o.out
	if where == "-" {
		where = "standard output"
	}
	fmt.Fprintf(report, "backed up %s to %s (%s)\n", o.store.where(), where, bytesText(n))
	return nil
}

type restoreOptions struct {
	store storeFlags
	in    string
}

func newRestoreCmd() *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore --dir D --in FILE|-",
		Short: "Load a backup into a new store",
		Long: `restore loads a file written by engram backup into the store in --dir, which
must not exist, be an empty directory, or hold a store without data: restore
never merges into or overwrites data (a store with data is refused).

The backup is loaded into a new directory next to --dir, which is renamed
into place only once the whole backup is in: a failed restore leaves --dir as
it was. Vector indexes are rebuilt from the restored records on first use.

The backup of an encrypted store restores only with the same
--encryption-key-file, and the restored store is encrypted with it.

restore takes no --postgres: it swaps a whole directory into place, which a
PostgreSQL schema cannot do atomically here. To move a backup into
PostgreSQL, restore it into a directory, engram export it, and engram import
--postgres what that wrote.`,
		Example: `  engram restore --dir ./data-restored --in data.backup`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRestore(cmd, o)
		},
	}
	// No --postgres: restore builds a new directory and renames it into
	// place, and a schema has no such atomic swap here.
	cmd.Flags().StringVar(&o.store.dir, "dir", "", "the new store's directory (required): missing, empty, or a store without data")
	o.store.open.register(cmd.Flags(), false)
	cmd.Flags().StringVar(&o.in, "in", "", "backup file to read, or - for standard input (required)")
	_ = cmd.MarkFlagRequired("in")
	return cmd
}

func runRestore(cmd *cobra.Command, o restoreOptions) error {
	if o.store.dir == "" {
		return errors.New("restore: --dir is required: the new store's directory")
	}
	dir := filepath.Clean(o.store.dir)
	var r io.Reader = cmd.InOrStdin()
	if o.in != "-" {
		f, err := os.Open(o.in)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		defer f.Close()
		r = f
	}
	key, err := o.store.open.key()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	exists, err := checkRestoreTarget(cmd.Context(), dir, key)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".restore-*")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := restoreInto(cmd.Context(), tmp, r, key); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("restore %s: %w", o.in, err)
	}
	if err := swapDir(tmp, dir, exists); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s\n", o.in, dir)
	return nil
}

// checkRestoreTarget checks that dir can take a restore: missing, empty, or
// a store without data (opened with key). It reports whether dir exists.
func checkRestoreTarget(ctx context.Context, dir string, key []byte) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case len(entries) == 0:
		return true, nil
	}
	// Opening a directory that holds no store would create one among
	// someone's files: look for the store's manifest first.
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return true, fmt.Errorf("%s is not empty and holds no store: restore into a new directory", dir)
	}
	db, err := engine.Open(dir, &engine.Options{EncryptionKey: key})
	if err != nil {
		return true, fmt.Errorf("%s is not an empty directory, and not a store that can be opened: %w", dir, err)
	}
	empty := true
	err = db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{KeysOnly: true})
		defer it.Close()
		it.Seek(nil)
		empty = !it.Valid()
		return nil
	})
	err = errors.Join(err, db.Close())
	if err != nil {
		return true, err
	}
	if !empty {
		return true, fmt.Errorf("the store in %s is not empty: restore into a new directory", dir)
	}
	return true, nil
}

// errNotBackup is returned by restore for a file that is not a backup.
var errNotBackup = errors.New("not an engram backup")

// restoreInto loads a backup into a new store in dir, encrypted with key
// when it is set.
func restoreInto(ctx context.Context, dir string, r io.Reader, key []byte) (err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != backupMagic {
		return fmt.Errorf("%w (it does not start with %q)", errNotBackup, strings.TrimSpace(backupMagic))
	}
	db, err := engine.Open(dir, &engine.Options{EncryptionKey: key})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	// The storage layer checks the frames and turns a damaged stream into
	// kv.ErrBadBackup; the half-loaded store is discarded by the caller.
	if err := db.Restore(ctx, br); err != nil {
		if errors.Is(err, kv.ErrBadBackup) {
			return fmt.Errorf("%w: damaged backup (%w)", errNotBackup, err)
		}
		if errors.Is(err, kv.ErrBackupKey) {
			return fmt.Errorf("%w (an encrypted store's backup needs --encryption-key-file with that store's key)", err)
		}
		return err
	}
	return nil
}

// swapDir renames the directory tmp to dir. An existing dir (empty, or an
// empty store) is moved aside first and removed once tmp is in place.
func swapDir(tmp, dir string, exists bool) error {
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return fileio.SyncDir(filepath.Dir(dir))
	}
	aside, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".old-*")
	if err != nil {
		return err
	}
	if err := os.Remove(aside); err != nil { // only its unique name is wanted
		return err
	}
	if err := os.Rename(dir, aside); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return errors.Join(err, os.Rename(aside, dir))
	}
	if err := fileio.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}
