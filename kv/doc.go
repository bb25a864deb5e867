// Package kv is Engram's durable key-value layer: a thin, typed boundary over
// two backends, Badger v4 (github.com/dgraph-io/badger/v4) in a local
// directory, and PostgreSQL through pgx (github.com/jackc/pgx/v5) for many
// processes sharing one database.
//
// It exposes only a few types: [DB], [Txn] and [Iterator]. Everything above
// it in Engram (the engine, the graph) stores bytes through these and never
// knows which backend holds them; no other package imports Badger or pgx.
// The seam is small (seam.go): get, set with a TTL, delete and ordered
// prefix iteration inside managed transactions; [DB] adds delete-range,
// size, backup and restore.
//
// # Basics
//
// Open a store in a directory, or in memory with an empty directory name:
//
//	db, err := kv.Open(dir, nil) // nil options: small footprint, synced writes
//	if err != nil { ... }
//	defer db.Close()
//
//	err = db.Update(ctx, func(tx *kv.Txn) error {
//		return tx.Set([]byte("k"), []byte("v"))
//	})
//
// Transactions are managed: [DB.Update] commits when its function returns nil
// and discards every write when it returns an error or panics (the panic is
// then re-raised). [DB.View] runs a read-only snapshot.
//
// Defaults are chosen for an embedded library, not a server: Badger's own
// defaults reserve about 85 MiB of heap at open (a 64 MiB memtable arena and
// a 256 MiB block cache); ours use 8 MiB memtables, two of them, and small
// block and index caches. Measured figures are in the repository's docs/benchmarks.md
// (TestOpenHeapFootprint prints them).
//
// Writes are synced to disk before a commit returns ([Sync], the default): an
// acknowledged write survives kill -9 and power loss. Concurrent commits
// share one fsync (group commit, groupsync.go): a commit is visible once it
// is in the log, and [DB.Update] returns once an fsync that started after it
// has finished; a failed fsync is [ErrNotDurable]. [DB.UpdateNoSync] skips
// the wait, for data derived from what is stored. [Async] keeps writes in
// the operating system's page cache: it survives the process being killed but
// not a machine crash.
//
// # Caveats
//
//   - One process at a time: a second [Open] of the same directory, from this
//     or another process, fails with [ErrLocked].
//   - A transaction's writes are bounded by Badger's batch limits (about 15%
//     of the memtable size); past them the commit fails with [ErrTooLarge] and
//     nothing is written. [DB.DeletePrefix] deletes in bounded batches for
//     that reason.
//   - A backup stream ([DB.Backup]) of an encrypted store is sealed with
//     AES-GCM under a key drawn from the store's, and restores only into a
//     store with the same key ([ErrBackupKey]); a plain store's backup is
//     plain text.
//   - TTLs have one-second resolution (Badger stores expiry in Unix seconds):
//     an entry lives at least its TTL and at most one second more.
//   - Deleted and expired bytes leave the files only after [DB.Compact]
//     (a memtable flush, a full compaction and value-log garbage
//     collection). Transactions wait while it flushes, and while it
//     reopens Badger when the value log holds large values. Badger's
//     calls take no context: Compact returns when its context ends, the
//     call goes on, and [DB.Close] waits for it at most 20 s
//     ([ErrStalled]).
//   - [Open] verifies every file Badger would trust blindly: each table's
//     checksums, the manifest against the tables on disk, a replay of the
//     write-ahead logs. Damage is [ErrCorrupt] naming the file, never a
//     panic and never data silently dropped; the price is a read of every
//     table at open (about 100 ms per 33 MiB of tables on a 2-core VM).
//     Value-log entries are verified at each read. A file damaged while
//     the store is open is found at the next Open. The exception is
//     DISCARD, Badger's value-log GC hints: a damaged one (which made the
//     GC spin for ever, wedging the store) holds no data, and is removed
//     and started anew, with a warning on the logger.
//   - Badger records nothing of its write-ahead logs outside them, so kv
//     keeps a record of its own (ENGRAM-WAL, walmark.go): a store that was
//     not closed and has lost its newest log, or an older log of the
//     session below one left whose writes no table holds (Badger had not
//     flushed it), or a log cut short of the size Badger gave it, is
//     [ErrCorrupt] naming the log. Not detected: records zeroed at the end
//     of the newest log (a crash leaves the same zeros); under [Async]
//     durability a deleted newest log beside an older one of the same
//     session, or a deleted older log whose predecessor is gone too
//     (unless it is the session's first); a deleted log of an earlier
//     session that the killed one had replayed and not yet flushed; and
//     anything once ENGRAM-WAL is deleted too.
//   - Every file of a store is 0600: Badger creates its files 0666 less
//     the umask, so [Open] gives the directory an owner-only default ACL on
//     Linux, or makes a directory open to others 0700 where it takes none,
//     and makes a file that others can read 0600, warning through
//     [Options.Logger] (filemode.go).
//   - [DB.BulkLoad] fills an empty store without transactions (sorted keys
//     straight into tables, no log, memtable or compaction), all or
//     nothing, but holds every other transaction off while it runs.
//   - Badger writes through memory maps, and a write into a map on a full
//     disk kills the process (SIGBUS). Writes therefore fail with
//     [ErrDiskFull] while less than a reserve (12 memtables plus two
//     commits and 1 MiB: about 99 MiB by default) is free, and Open fails
//     with it too; reads go on, and writes work again once space is freed.
//     Another process filling the disk under a running store can still
//     starve Badger's background writes. Platforms other than Linux,
//     macOS and FreeBSD do not report free space and get no guard.
//   - In a test binary (and only there: testing.Testing), the environment
//     ENGRAM_TEST_BACKEND=postgres with ENGRAM_TEST_POSTGRES=<DSN> makes
//     [Open] open a PostgreSQL store instead of Badger, so every test of
//     kv, engine, graph and memory runs on either backend
//     (testbackend.go; package kvtest lets a test about Badger's own files
//     skip).
//
// # PostgreSQL
//
// [OpenPostgres] keeps the store in a table kv(k bytea primary key, v bytea,
// expires_at bigint) in a schema of its own (created and migrated by
// OpenPostgres, versioned in its meta table). bytea sorts as unsigned
// bytes, as Badger does, so prefix scans read the primary key in order. An
// update is a SERIALIZABLE transaction: PostgreSQL's serialization
// failures (SQLSTATE 40001) and deadlocks are [ErrConflict], which
// engine.Update retries. A transaction keeps its writes until a statement
// must see them (a read of another key, an iterator's next page, the
// commit) and sends them with it, BEGIN with the first statement and
// COMMIT with the last writes, and caches what it read: a write-only
// transaction is one round trip. Expired rows are invisible from their
// second on and deleted by a background sweep. With a key, values are
// sealed with AES-GCM in the process (the key they are stored under is
// the additional data); keys and expiry times are not, because the
// database orders and filters by them. [DB.Backup] writes Badger's backup
// format from either backend, so a backup of one restores into the other;
// a PostgreSQL restore is one transaction. [DB.Compact] is VACUUM.
//
// Several processes may open one PostgreSQL store; partition leases and
// epoch fencing keep each partition's writes to one of them at a time (see
// cluster.go and [DB.Cluster]).
package kv
