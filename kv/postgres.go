package kv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresOptions configures [OpenPostgres]. Every zero field means the
// documented default.
type PostgresOptions struct {
	// DSN is the connection string, a URL (postgres://user@host/db) or
	// key=value pairs, as libpq takes them. Required.
	DSN string

	// Schema holds the store's tables; it is created when missing. Zero
	// is "engram". Two stores in one database use two schemas.
	Schema string

	// EncryptionKey, when set, seals every value with AES-GCM (16, 24 or
	// 32 bytes) before it leaves the process; keys and expiry times stay
	// readable to the database (they order the table). The same key must
	// be given on every later open.
	EncryptionKey []byte

	// Logger receives the store's warnings (failed renewals and sweeps).
	// Nil discards them.
	Logger *slog.Logger

	// MaxConns bounds the connection pool. Zero means 4 per CPU, at least 8.
	MaxConns int32

	// Node names this process in the lease and heartbeat tables. Zero
	// means the host name, the process id and a random suffix, so a
	// restarted process never mistakes the leases of its previous life
	// for its own.
	Node string

	// Addr is the address other nodes forward requests to, as
	// host:port; empty for a process that serves none.
	Addr string

	// LeaseTTL is how long a lease and a heartbeat last unless renewed;
	// they are renewed every third of it. Zero means 10 seconds.
	LeaseTTL time.Duration

	// Partition maps a key to the partition that fences writes to it
	// (see the comment on partition ownership in cluster.go); false means
	// the key belongs to no partition and its writes are not fenced. Nil
	// fences nothing: a store one process uses.
	Partition func(key []byte) (part []byte, ok bool)

	// ExplicitLeases makes a write to a partition whose lease this
	// process does not hold fail with [ErrFenced], so that leases are
	// only taken by [Cluster.Acquire] (a node that routes requests to
	// partition owners). Without it, a write takes a partition's lease
	// in its own transaction when no other live node holds it.
	ExplicitLeases bool

	// OnAcquire, when set, is called with a partition's prefix each time
	// this process takes a lease it did not hold at its current epoch,
	// before the lease is used: whatever it cached of the partition may
	// be stale. OnLose is called when a renewal finds a lease taken over.
	OnAcquire, OnLose func(part []byte)
}

// Defaults of PostgresOptions.
const (
	defaultSchema   = "engram"
	defaultLeaseTTL = 10 * time.Second
)

// schemaName is what Schema may be: a lower-case SQL identifier, used
// unquoted.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (o *PostgresOptions) withDefaults() (PostgresOptions, error) {
	var out PostgresOptions
	if o != nil {
		out = *o
	}
	if out.Schema == "" {
		out.Schema = defaultSchema
	}
	if out.LeaseTTL == 0 {
		out.LeaseTTL = defaultLeaseTTL
	}
	if out.Node == "" {
		host, _ := os.Hostname()
		var r [4]byte
		_, _ = rand.Read(r[:])
		out.Node = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(r[:]))
	}
	var errs []error
	if out.DSN == "" {
		errs = append(errs, errors.New("DSN is empty"))
	}
	if !schemaName.MatchString(out.Schema) {
		errs = append(errs, fmt.Errorf("Schema %q is not a lower-case identifier of at most 63 bytes", out.Schema))
	}
	switch len(out.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		errs = append(errs, fmt.Errorf("EncryptionKey is %d bytes; want 16, 24 or 32", len(out.EncryptionKey)))
	}
	if out.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("LeaseTTL %v is below one second", out.LeaseTTL))
	}
	if out.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("MaxConns %d is negative", out.MaxConns))
	}
	if len(out.Node) > 200 {
		errs = append(errs, fmt.Errorf("Node is %d bytes; at most 200", len(out.Node)))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out, nil
}

// pgStore is a store in PostgreSQL behind a [DB].
type pgStore struct {
	opts PostgresOptions
	pool *pgxpool.Pool
	seal *valueSealer // nil without a key
	q    pgQueries
	// trace counts round trips (see Traffic).
	trace *pgTrace
	// txnEntries and txnBytes bound one transaction's writes
	// (pgTxnEntries, pgTxnBytes; smaller in tests).
	txnEntries, txnBytes int64

	// leases is this node's view of the leases it holds: partition →
	// epoch, and until when it may serve from its caches without hearing
	// from the database (its last renewal's start plus the TTL).
	leases struct {
		sync.Mutex
		m map[string]heldLease
	}
	stats struct {
		acquired, takeovers, renewals, lost, fenced, renewFailures atomic.Uint64
	}

	stop chan struct{}
	// afterCommit, a test seam, closes a commit's batch once its COMMIT
	// answer was read, in place of BatchResults.Close.
	afterCommit func(pgx.BatchResults) error
	// renewNow asks the renewal loop for a round at once (a commit was
	// fenced).
	renewNow chan struct{}
	bg       sync.WaitGroup
	// skew, a test seam, moves this node's lease clock forward by that
	// many nanoseconds: time passes for the leases it holds and none of
	// its work runs, as when the process is paused.
	skew atomic.Int64
}

// now is the clock of this node's leases: when they were taken or
// renewed, and whether they still hold.
func (s *pgStore) now() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) }

// OpenPostgres opens the store in a PostgreSQL database, creating or
// migrating its tables. Any number of processes may open one store; see
// [DB.Cluster] for how they share it.
//
// OpenPostgres returns [ErrInvalidOptions] for bad options,
// [ErrEncryptionKey] for a wrong or missing key, and the driver's error
// when the database cannot be reached.
func OpenPostgres(ctx context.Context, opts *PostgresOptions) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: DSN: %v", ErrInvalidOptions, err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	} else if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	trace := &pgTrace{}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("kv: postgres: %w", err)
	}
	s := &pgStore{opts: o, pool: pool, q: newPGQueries(o.Schema), trace: trace, stop: make(chan struct{}), renewNow: make(chan struct{}, 1),
		txnEntries: pgTxnEntries, txnBytes: pgTxnBytes}
	s.leases.m = map[string]heldLease{}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if len(o.EncryptionKey) > 0 {
		if s.seal, err = newValueSealer(o.EncryptionKey); err != nil {
			pool.Close()
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	if err := s.checkKey(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.heartbeat(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("kv: postgres: heartbeat: %w", pgError(err))
	}
	s.bg.Add(2)
	go s.renewLoop()
	go s.sweepLoop()
	return &DB{pg: s, opts: Options{Durability: Sync, EncryptionKey: o.EncryptionKey, Logger: o.Logger}}, nil
}

// close stops the background work, gives up this node's leases and
// heartbeat, and closes the pool.
func (s *pgStore) close() error {
	close(s.stop)
	s.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.releaseAll(ctx)
	s.pool.Close()
	return err
}

// pgError maps PostgreSQL's errors onto this package's sentinels.
func pgError(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return fmt.Errorf("%w: %s", ErrConflict, pe.Message)
		case fenceSQLState:
			return fmt.Errorf("%w: %s", ErrFenced, pe.Message)
		case "53100": // disk_full
			return fmt.Errorf("%w: %s", ErrDiskFull, pe.Message)
		case "54000", "54001": // program_limit_exceeded, statement_too_complex
			return fmt.Errorf("%w: %s", ErrTooLarge, pe.Message)
		case "57P01", "57P02", "57P03", "57P04": // shutdowns, database dropped
			return fmt.Errorf("%w: %s", ErrUnavailable, pe.Message)
		}
		if strings.HasPrefix(pe.Code, "08") { // connection exceptions
			return fmt.Errorf("%w: %s", ErrUnavailable, pe.Message)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return fmt.Errorf("kv: postgres: %w", err)
}
