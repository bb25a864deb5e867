// Package engine is Engram's database: one Badger store (through package kv)
// addressed by [Scope], with managed transactions, time-ordered ids and
// erasure by prefix. Package memory builds the agent vocabulary on it; use
// engine directly for records and keys without that vocabulary.
//
// The exported types are few: [DB], [Tx], [Scope] and [Stats].
//
// # Basics
//
//	db, err := engine.Open(dir, nil) // "" keeps everything in memory
//	if err != nil { ... }
//	defer db.Close()
//
//	scope := engine.Scope{Tenant: "acme", User: "alice", Session: "s1"}
//	if err := scope.Validate(engine.LevelSession); err != nil { ... }
//	key := engine.Key(scope.Prefix(engine.LevelSession), engine.NSMessage, id[:])
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
// # Caveats
//
//   - One process opens a directory at a time ([ErrLocked]); share a store
//     between processes through the server (engram serve).
//   - [DB.ErasePrefix] deletes in batches that commit one by one; after a
//     failure, call it again to finish.
//   - Erased bytes leave the files only after [DB.Compact].
//   - A [DB.Backup] stream is plain text even when the store is encrypted.
package engine
