package kv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/dgraph-io/badger/v4/pb"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// A PostgreSQL transaction has no small limit of its own; these keep one
// commit's batch, which is held in memory until it is sent, bounded.
const (
	pgTxnEntries = 1 << 20
	pgTxnBytes   = 256 << 20
	// pgEntryOverhead is what one write counts beyond its key and value.
	pgEntryOverhead = 12
)

// Cluster returns the store's partition ownership, or nil for a Badger
// store.
func (db *DB) Cluster() *Cluster {
	if db.pg == nil {
		return nil
	}
	return &Cluster{pg: db.pg}
}

// Postgres reports whether the store is in PostgreSQL.
func (db *DB) Postgres() bool { return db.pg != nil }

// size returns the bytes of the key-value table with its indexes and
// TOAST data; -1 when it cannot be read.
func (s *pgStore) size() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, s.opts.Schema+".kv").Scan(&n); err != nil {
		return -1
	}
	return n
}

// compact vacuums the key-value table: the space of deleted and replaced
// rows becomes reusable, though their bytes stay in the table's pages
// until overwritten (see docs/storage.md on erasure).
func (s *pgStore) compact(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, s.q.sql(`VACUUM {s}.kv`))
	return pgError(err)
}

// backupFrame is the size at which a backup frame is cut.
const backupFrame = 4 << 20

// backup writes Badger's backup format (little-endian length, then a
// protobuf KVList, repeated), so a backup of either backend restores into
// the other. Values are opened; the stream is sealed when the store has
// a key.
func (s *pgStore) backup(ctx context.Context, w io.Writer, key []byte) error {
	var sw *sealWriter
	out := io.Writer(ctxWriter{ctx, w})
	if len(key) > 0 {
		var err error
		if sw, err = newSealWriter(out, key); err != nil {
			return err
		}
		out = sw
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgError(err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return pgError(err)
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, s.q.sql(`SELECT k, v, expires_at FROM {s}.kv WHERE expires_at = 0 OR expires_at > $1 ORDER BY k`), time.Now().Unix())
	if err != nil {
		return pgError(err)
	}
	defer rows.Close()
	list := &pb.KVList{}
	size := 0
	flush := func() error {
		if len(list.Kv) == 0 {
			return nil
		}
		buf, err := proto.Marshal(list)
		if err != nil {
			return err
		}
		var head [8]byte
		binary.LittleEndian.PutUint64(head[:], uint64(len(buf)))
		if _, err := bw.Write(head[:]); err != nil {
			return err
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		list, size = &pb.KVList{}, 0
		return nil
	}
	for rows.Next() {
		raw := rows.RawValues()
		k := bytes.Clone(raw[0])
		v := bytes.Clone(raw[1])
		if s.seal != nil {
			if v, err = s.seal.open(k, v); err != nil {
				return err
			}
		}
		var exp int64
		if err := rows.Scan(nil, nil, &exp); err != nil {
			return pgError(err)
		}
		list.Kv = append(list.Kv, &pb.KV{Key: k, Value: v, ExpiresAt: uint64(exp), Version: 1, UserMeta: []byte{0}, Meta: []byte{0}})
		if size += len(k) + len(v) + 32; size >= backupFrame {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return pgError(err)
	}
	if err := flush(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if sw != nil {
		return sw.Close()
	}
	return nil
}

// restore loads a backup stream (either backend's) into the empty store in
// one transaction: a failed restore leaves nothing behind.
func (s *pgStore) restore(ctx context.Context, r io.Reader, key []byte) error {
	r, err := openBackup(r, key)
	if err != nil {
		return err
	}
	return s.load(ctx, backupRows(ctxReader{ctx, r}, uint64(time.Now().Unix())))
}

// backupRows decodes an unsealed backup stream (Badger's format: an 8-byte
// little-endian length, then a protobuf KVList, repeated) into the rows to
// load: the newest version of each key, without deleted keys and keys
// expired at now. A damaged stream ends in ErrBadBackup. FuzzBackupRows
// covers it.
func backupRows(r io.Reader, now uint64) iter.Seq2[pgRow, error] {
	return func(yield func(pgRow, error) bool) {
		br := bufio.NewReaderSize(&frameChecker{r: r}, 64<<10)
		var last []byte
		var buf bytes.Buffer
		for {
			var sz uint64
			if err := binary.Read(br, binary.LittleEndian, &sz); err == io.EOF {
				return
			} else if err != nil {
				yield(pgRow{}, badBackup(err))
				return
			}
			// Grown as the bytes arrive, not allocated at the length a
			// frame claims (up to maxBackupFrame): a short damaged
			// stream costs what it holds.
			buf.Reset()
			if n, err := io.CopyN(&buf, br, int64(sz)); err != nil {
				if err == io.EOF {
					err = fmt.Errorf("a frame of %d bytes ends after %d", sz, n)
				}
				yield(pgRow{}, badBackup(err))
				return
			}
			list := &pb.KVList{}
			if err := proto.Unmarshal(buf.Bytes(), list); err != nil {
				yield(pgRow{}, fmt.Errorf("%w: %v", ErrBadBackup, err))
				return
			}
			for _, e := range list.Kv {
				// Versions of one key come together, newest first.
				if bytes.Equal(e.Key, last) {
					continue
				}
				last = bytes.Clone(e.Key)
				deleted := len(e.Meta) > 0 && e.Meta[0]&1 != 0 // Badger's bitDelete
				if deleted || len(e.Key) == 0 || (e.ExpiresAt != 0 && e.ExpiresAt <= now) {
					continue
				}
				if !yield(pgRow{k: e.Key, v: e.Value, exp: e.ExpiresAt}, nil) {
					return
				}
			}
		}
	}
}

func badBackup(err error) error {
	if errors.Is(err, ErrBadBackup) || errors.Is(err, ErrBackupKey) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrBadBackup, err)
}

// bulkLoad writes sorted pairs into the empty store in one transaction.
func (s *pgStore) bulkLoad(ctx context.Context, pairs iter.Seq2[[]byte, []byte]) error {
	rows := func(yield func(pgRow, error) bool) {
		var last []byte
		for k, v := range pairs {
			if len(k) == 0 {
				yield(pgRow{}, ErrEmptyKey)
				return
			}
			if last != nil && bytes.Compare(k, last) <= 0 {
				yield(pgRow{}, fmt.Errorf("%w: %q after %q", ErrUnsorted, k, last))
				return
			}
			last = append(last[:0], k...)
			if !yield(pgRow{k: bytes.Clone(k), v: bytes.Clone(v)}, nil) {
				return
			}
		}
	}
	return s.load(ctx, rows)
}

// load copies rows into the empty table in one transaction.
func (s *pgStore) load(ctx context.Context, rows iter.Seq2[pgRow, error]) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return pgError(err)
	}
	defer tx.Rollback(context.Background())
	var one int
	switch err := tx.QueryRow(ctx, s.q.sql(`SELECT 1 FROM {s}.kv LIMIT 1`)).Scan(&one); {
	case err == nil:
		return ErrNotEmpty
	case !errors.Is(err, pgx.ErrNoRows):
		return pgError(err)
	}
	src := &copySource{s: s}
	src.next, src.stop = iter.Pull2(rows)
	defer src.stop()
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.opts.Schema, "kv"}, []string{"k", "v", "expires_at"}, src); err != nil {
		if src.err != nil {
			return src.err
		}
		return ctxError(ctx, err)
	}
	if src.err != nil {
		return src.err
	}
	if err := tx.Commit(ctx); err != nil {
		return ctxError(ctx, err)
	}
	return nil
}

// ctxError converts err, an error of a call made with ctx, keeping ctx's
// error, and only it, in the chain when ctx has ended: pgx answers a cancelled call
// by closing its connection, and the error it returns then ("use of closed
// network connection") says nothing of the cancellation.
func ctxError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return pgError(err)
}

// copySource feeds rows to COPY, sealing values.
type copySource struct {
	s    *pgStore
	next func() (pgRow, error, bool)
	stop func()
	row  []any
	err  error
}

func (c *copySource) Next() bool {
	r, err, ok := c.next()
	if !ok {
		return false
	}
	if err != nil {
		c.err = err
		return false
	}
	v := r.v
	if c.s.seal != nil {
		v = c.s.seal.seal(r.k, r.v)
	} else if v == nil {
		v = []byte{} // an empty value (nil from a backup or a caller) is not NULL
	}
	c.row = []any{r.k, v, int64(r.exp)}
	return true
}

func (c *copySource) Values() ([]any, error) { return c.row, nil }
func (c *copySource) Err() error             { return c.err }
