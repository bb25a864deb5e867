package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// Helpers shared by the commands that open a store: import, export,
// recall, inspect, backup and restore.

// storeFlags are the store and scope flags of a command.
type storeFlags struct {
	dir, tenant, user, session string
	open                       openFlags
	pg                         postgresFlags
}

// scopeFlag says whether a command takes a scope flag, and whether it
// must be given.
type scopeFlag int

const (
	flagAbsent scopeFlag = iota
	flagOptional
	flagRequired
)

// register adds --dir and --postgres (one of them required),
// --postgres-schema, --encryption-key-file and the scope flags the command
// takes.
func (f *storeFlags) register(cmd *cobra.Command, tenant, user, session scopeFlag) {
	cmd.Flags().StringVar(&f.dir, "dir", "", "the store's directory (this or --postgres is required)")
	f.pg.register(cmd.Flags())
	f.open.register(cmd.Flags(), false)
	for _, s := range []struct {
		p     *string
		name  string
		usage string
		want  scopeFlag
	}{
		{&f.tenant, "tenant", "the tenant", tenant},
		{&f.user, "user", "the user", user},
		{&f.session, "session", "the session", session},
	} {
		if s.want == flagAbsent {
			continue
		}
		usage := s.usage
		if s.want == flagRequired {
			usage += " (required)"
		}
		cmd.Flags().StringVar(s.p, s.name, "", usage)
		if s.want == flagRequired {
			_ = cmd.MarkFlagRequired(s.name)
		}
	}
}

// scope returns the scope the flags name.
func (f *storeFlags) scope() memory.Scope {
	return memory.Scope{Tenant: f.tenant, User: f.user, Session: f.session}
}

// checkScope validates the scope the flags name, at its own depth, so that
// a bad id is reported before the store is opened.
func (f *storeFlags) checkScope() error {
	s := f.scope()
	if s.Session != "" && s.User == "" {
		return errors.New("--session needs --user")
	}
	if s.User != "" && s.Tenant == "" {
		return errors.New("--user needs --tenant")
	}
	if s.Tenant == "" {
		return nil
	}
	return s.Validate(s.Level())
}

// openMode says whether opening a store may create it.
type openMode int

const (
	// existingStore refuses a directory that is missing or empty: a
	// mistyped --dir must not read as an empty store.
	existingStore openMode = iota
	// createStore creates the store when needed.
	createStore
	// readStore is existingStore opened read-only where Badger allows it
	// (see openRead).
	readStore
)

// registerEmbedder adds the embedder flags, for the commands that embed
// (import, recall).
func (f *storeFlags) registerEmbedder(cmd *cobra.Command) {
	f.open.registerEmbedder(cmd.Flags())
}

// openStore opens the store in f.dir, or in the PostgreSQL database
// --postgres names, with the key and embedder the flags name.
func (f *storeFlags) openStore(mode openMode) (*memory.Store, error) {
	dir := f.dir
	dsn, err := f.pg.dsn(dir)
	if err != nil {
		return nil, err
	}
	// The flags are checked before the store is looked for: a typo is
	// reported as such, and nothing is created for it.
	// The command runs for moments: no background sweep of expired data,
	// and no extraction: reading or administering a store must not run an
	// extractor (perhaps a paid model) as a side effect. What is queued
	// stays queued, on disk, for the next serve or mcp.
	opts := &memory.Options{SweepInterval: -1, Extraction: memory.ExtractOff}
	if err := f.open.apply(opts); err != nil {
		return nil, err
	}
	if mode != createStore {
		var err error
		if dsn == "" {
			err = storeExists(dir)
		} else {
			err = f.pg.storeExists(dsn)
		}
		if err != nil {
			return nil, err
		}
	}
	if dsn != "" {
		// No ExplicitLeases: a write takes its partition's lease in its
		// own transaction when no other live node holds it, and is
		// refused (kv.ErrLeaseHeld) when a serve node does.
		opts.Postgres = &memory.PostgresOptions{DSN: dsn, Schema: f.pg.schema}
		st, err := memory.Open("", opts)
		if err != nil {
			return nil, f.pg.openError(err)
		}
		return st, nil
	}
	opts.ReadOnly = mode == readStore
	st, err := memory.Open(dir, opts)
	if err != nil {
		return nil, openError(dir, err)
	}
	return st, nil
}

// storeExists returns an error "no store in DIR" when dir is missing or
// empty: the commands that read or administer a store must not create
// one for a mistyped --dir.
func storeExists(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0 {
		return fmt.Errorf("no store in %s", dir)
	}
	return err
}

// openRead opens the store for a command that only reads it (inspect,
// export, backup). A store on disk opens read-only, so that none of its
// files is written (a read-write open starts a write-ahead log, flushes
// the memtables and may compact at Close). Badger cannot open read-only a
// store that was not closed cleanly, whose write-ahead logs must be
// replayed and cut first: that store opens read-write, and a note on
// stderr says so. A store in PostgreSQL opens as usual (a read rewrites
// nothing there).
func (f *storeFlags) openRead(stderr io.Writer) (*memory.Store, error) {
	st, err := f.openStore(readStore)
	if !errors.Is(err, kv.ErrNeedsRecovery) {
		return st, err
	}
	fmt.Fprintf(stderr, "engram: %s was not closed cleanly; opening it read-write to replay its write-ahead log (a read-only open cannot)\n", f.dir)
	return f.openStore(existingStore)
}

// where names the store the flags open, for messages: its directory, or
// its PostgreSQL schema (never the DSN, which may hold a password).
func (f *storeFlags) where() string {
	if f.dir != "" {
		return f.dir
	}
	return f.pg.where()
}
