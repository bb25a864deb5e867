// Package engine is Engram's database: one Badger store (through package kv)
// addressed by [Scope], with managed transactions, time-ordered ids and
// erasure by prefix. Package memory builds the agent vocabulary on it; use
// engine directly for records and keys without that vocabulary.
//
// These are all its exported types:
//
//   - [DB], the database, opened with [Options] (writes acknowledged as
//     its [Durability] says) and described by [Stats];
//   - [Tx], a transaction of [DB.Update] or [DB.View], iterated with
//     [IterOptions];
//   - [Scope] and [Level], which address the data; [Namespace] and
//     [SystemNamespace], the kinds of a key; [ParsedKey], a key taken
//     apart by [ParseKey] (keys.go builds and parses every key);
//   - [Record], found by [DB.Search] as a [Hit] (tuned by [SearchOptions])
//     and read by [Tx.GetRecord] (tuned by [GetRecordOptions]);
//   - [EmbeddingCache], where cached embeddings are kept;
//   - [CacheStats], the partition cache's counters in [Stats].
//
// Durability and IterOptions are package kv's types under the engine's
// names.
//
// # Basics
//
//	db, err := engine.Open(dir, nil) // "" keeps everything in memory
//	if err != nil { ... }
//	defer db.Close()
//
//	scope := engine.Scope{Tenant: "acme", User: "alice", Session: "s1"}
//	if err := scope.Validate(engine.LevelSession); err != nil { ... }
//	prefix := scope.Prefix(engine.LevelSession) // starts every key of the session
//	key := engine.Key(prefix, engine.NSMessage, id[:]) // prefix, namespace, suffix
//	err = db.Update(ctx, func(tx *engine.Tx) error { return tx.Set(key, value) })
//
// Keys start with the tenant, then the user, then the session, then a
// one-byte [Namespace] (the full layout is documented in keys.go):
//
//	0x01 tenant 0x00 user 0x00 session 0x00 ns suffix
//	└─ tenant prefix ┘
//	└────── user prefix ───┘
//	└────────── session prefix ─────────┘
//
// so one prefix scan or erasure covers a tenant, a user or a session and
// never crosses into another.
//
// [DB.Update] commits when its function returns nil, discards everything when
// it returns an error or panics, and retries on a write conflict.
//
// Records with vectors are searchable by cosine similarity:
//
//	err = db.Update(ctx, func(tx *engine.Tx) error {
//		_, err := tx.PutRecord(engine.Scope{Tenant: "acme", User: "alice"}, "",
//			engine.Record{Text: "prefers email", Vector: vec})
//		return err
//	})
//	hits, err := db.Search(ctx, engine.Scope{Tenant: "acme", User: "alice"}, q, 10, nil)
//
// Each (tenant, user) has its own partition, and each tenant one shared
// partition (a scope without User): a search never scans another user's
// vectors. A partition holds named record spaces ("" above is the default
// one), each with its own indexes. A partition is searched exactly up to Options.ExactThreshold
// vectors (default [DefaultExactThreshold]) and through an HNSW graph past
// it. A record, its vector and its change-log entry commit in the caller's
// transaction; the in-memory index takes the change after the commit.
// Graphs are snapshotted in the background and at Close into dir/vectors
// (sealed with AES-GCM when the store is encrypted); Open loads a snapshot
// on a partition's first use and replays the log written after it, and a
// missing or corrupt snapshot means a rebuild from the records.
//
// Loaded partitions are kept within Options.PartitionCacheBytes (default
// [DefaultPartitionCacheBytes]: a quarter of the memory, at most 1 GiB):
// each one's size is estimated as its changes are applied, and past the
// budget the least recently used are evicted (a changed graph snapshotted
// first, in the background) and loaded again, snapshot and log, on their
// next use. A partition in use by a transaction or a search is never
// evicted; Stats.Cache counts hits, misses and evictions.
//
// # Caveats
//
//   - One process opens a directory at a time ([ErrLocked]); share a store
//     between processes through the server (engram serve).
//   - [DB.ErasePrefix] deletes in batches that commit one by one; after a
//     failure, call it again to finish.
//   - Erased bytes leave the files only after [DB.Compact], which the
//     background compactor runs within Options.CompactDelay of an erasure.
//   - A [DB.Backup] stream is plain text even when the store is encrypted.
//   - The first vector written to a partition fixes its dimension.
//   - The partition budget bounds the indexes, not the process: Badger's
//     memtables and compaction buffers, and the Go collector's headroom,
//     come on top (see engram bench budget).
//   - Writes can change HNSW partitions faster than they are snapshotted:
//     past a quarter above the budget such a partition is evicted without
//     a snapshot, and its next load replays its log (or rebuilds it).
//   - A snapshot is taken while holding the partition's read lock: writes to
//     that partition wait for its encoding and write (2.7 s for 100,000
//     vectors of 384 dimensions, measured by BenchmarkOpenPersisted).
package engine
