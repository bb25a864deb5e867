package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// postgresEnv is where --postgres finds its DSN when the flag is not
// given: a DSN may carry a password, and flags show in the process list.
const postgresEnv = "ENGRAM_POSTGRES"

// defaultPostgresSchema is the schema a store lives in without
// --postgres-schema (kv's default).
const defaultPostgresSchema = "engram"

// postgresFlags are --postgres and --postgres-schema, which put a store in
// a PostgreSQL database instead of a directory.
type postgresFlags struct {
	url, schema string
	// fs is the flag set the flags were added to, to tell a given flag
	// from its default.
	fs *pflag.FlagSet
}

// register adds --postgres and --postgres-schema.
func (f *postgresFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.url, "postgres", "",
		"keep the store in this PostgreSQL database instead of --dir: a DSN (postgres://user@host/db or key=value pairs); "+
			"default $"+postgresEnv+" when --dir is not given (prefer it: a password in a flag shows in ps)")
	fs.StringVar(&f.schema, "postgres-schema", "", "with --postgres: the schema holding the store's tables, created if missing (default "+defaultPostgresSchema+")")
}

// errNoStore is returned when neither --dir nor --postgres names a
// store. Its text starts like cobra's own error for a missing required
// flag, which --dir was before --postgres existed.
var errNoStore = errors.New(`required flag(s) "dir" not set: name the store's directory with --dir, or a PostgreSQL database with --postgres DSN (or $` + postgresEnv + `)`)

// dsn returns the DSN of the store the flags name, "" for the store in
// dir. --dir and --postgres are mutually exclusive and one is required;
// without either, $ENGRAM_POSTGRES names the database.
func (f *postgresFlags) dsn(dir string) (string, error) {
	given := f.fs != nil && f.fs.Changed("postgres")
	schemaGiven := f.fs != nil && f.fs.Changed("postgres-schema")
	switch {
	case dir != "" && given:
		return "", errors.New("--dir and --postgres are mutually exclusive: a store is a directory or a PostgreSQL database, not both")
	case dir != "" && schemaGiven:
		return "", errors.New("--postgres-schema needs --postgres (or $" + postgresEnv + ") instead of --dir")
	case dir != "":
		return "", nil
	}
	dsn := f.url
	if dsn == "" {
		dsn = os.Getenv(postgresEnv)
	}
	if dsn == "" {
		if given {
			return "", errors.New("--postgres is empty and $" + postgresEnv + " is not set: give the database's DSN")
		}
		return "", errNoStore
	}
	return dsn, nil
}

// storeExists returns an error "no store in postgres schema S" unless the
// schema the flags name holds a store (its meta table), so that the
// commands that read or administer a store never create a schema and its
// tables for a mistyped --postgres-schema. The DSN is never part of the
// message.
func (f *postgresFlags) storeExists(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", f.where(), err)
	}
	defer conn.Close(context.Background())
	schema := f.schema
	if schema == "" {
		schema = defaultPostgresSchema
	}
	var meta *string
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1)::text", pgx.Identifier{schema, "meta"}.Sanitize()).Scan(&meta); err != nil {
		return fmt.Errorf("open %s: %w", f.where(), err)
	}
	if meta == nil {
		return fmt.Errorf("no store in %s", f.where())
	}
	return nil
}

// where names the store for messages: the schema, never the DSN.
func (f *postgresFlags) where() string {
	s := f.schema
	if s == "" {
		s = defaultPostgresSchema
	}
	return "postgres schema " + s
}

// openError adds a hint to the errors of opening a store in PostgreSQL a
// user can fix with a flag. The DSN is never part of the message.
func (f *postgresFlags) openError(err error) error {
	switch {
	case errors.Is(err, memory.ErrEncryptionKey):
		return fmt.Errorf("open %s: %w (an encrypted store needs --encryption-key-file with the key it was created with; a plain one, none)", f.where(), err)
	case errors.Is(err, memory.ErrEmbedderMismatch):
		return fmt.Errorf("open %s: %w (open it with the --embedder flags it was written with)", f.where(), err)
	case errors.Is(err, kv.ErrInvalidOptions):
		return fmt.Errorf("open %s: %w (check --postgres and --postgres-schema)", f.where(), err)
	}
	return fmt.Errorf("open %s: %w", f.where(), err)
}
