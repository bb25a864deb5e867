package engine

import "github.com/engramdb/engram/kv"

// Key layout
//
// Every key of tenant data starts with the tenant, so that no prefix scan
// crosses tenants, then narrows to the user and the session:
//
//	0x01 tenant 0x00                          tenant prefix
//	0x01 tenant 0x00 user 0x00                user prefix
//	0x01 tenant 0x00 user 0x00 session 0x00   session prefix
//
// After a prefix comes one [Namespace] byte and the namespace's own suffix.
// Ids never hold control characters (see [ValidateID]), so 0x00 cannot occur
// inside an id and the namespace bytes (0x01-0x1F) cannot be mistaken for the
// first byte of a user or session id: under a user prefix, user-level
// namespaces sort before every session. Keys of the store itself (not of any
// tenant) start with 0x00. The leading byte also keeps every key clear of
// Badger's reserved "!badger!" prefix.

const (
	tagSystem byte = 0x00
	tagTenant byte = 0x01
	sep       byte = 0x00
)

// Namespace tags one kind of key under a scope prefix. All namespaces of the
// module are declared here, so that the on-disk layout is readable in one
// place and no two packages can claim the same byte.
type Namespace byte

// Session-level namespaces.
const (
	// NSMessage holds a session's messages, keyed by their 16-byte ULID.
	NSMessage Namespace = 0x01
	// NSSystemMessage indexes a session's system messages by ULID, so a
	// window finds them without scanning the session.
	NSSystemMessage Namespace = 0x02
	// NSToolCall maps a tool-call id to the ULID of the message that made it.
	NSToolCall Namespace = 0x03
	// NSSessionInfo is the session's metadata record (one key).
	NSSessionInfo Namespace = 0x04
	// NSSummary is the session's rolling summary (one key; package memory).
	NSSummary Namespace = 0x0C
	// NSRedaction holds the placeholder numbers of redacted personal data
	// (package memory): a random salt, keyed hashes of the data, counters.
	// Under a session prefix, or a partition prefix for memories written
	// without a session.
	NSRedaction Namespace = 0x0D
	// NSExtracted records, per message id, what extraction wrote from the
	// message (memory, fact and entity changes), so that erasing the
	// session erases it from the user's partition too (package memory).
	NSExtracted Namespace = 0x0E
)

// Partition-level namespaces: under a user prefix, or under a tenant prefix
// for the tenant's shared partition.
const (
	// NSRecord holds records by their 16-byte ULID.
	NSRecord Namespace = 0x05
	// NSVectorLog is a partition's change log: 16-byte log id → op byte and
	// the record's 16-byte id.
	NSVectorLog Namespace = 0x06
	// NSGraph holds the partition's knowledge graph; package graph lays
	// out its keys under it (see graph's keys.go).
	NSGraph Namespace = 0x07
	// NSSpace holds the named record spaces of the partition: the space's
	// name and a 0x00 separator, then the space's own NSRecord and
	// NSVectorLog keys (see Tx.PutRecordIn).
	NSSpace Namespace = 0x08
	// NSMemoryHash maps a memory's content hash (32 bytes) to its id, for
	// exact deduplication (package memory).
	NSMemoryHash Namespace = 0x09
	// NSMemoryArchive holds superseded versions of memories by their
	// 16-byte ULID (package memory).
	NSMemoryArchive Namespace = 0x0A
	// NSExpiry indexes records by when they expire: 8-byte big-endian Unix
	// nanoseconds, then the 16-byte id, so a sweep reads only what is due.
	NSExpiry Namespace = 0x0B
)

// System namespaces (keys that belong to no tenant).
const (
	// NSEmbeddingCache holds cached embeddings, keyed by embed.CacheKey.
	NSEmbeddingCache Namespace = 0x01
	// NSMeta holds the store's own metadata.
	NSMeta Namespace = 0x02
	// NSExpiring lists the partitions that hold expiring records, keyed by
	// partition prefix, so a sweeper finds them after a restart (package
	// memory). Erasing a partition erases its entry.
	NSExpiring Namespace = 0x03
	// NSExtractQueue holds the messages waiting for extraction, keyed by
	// session prefix then the message's 16-byte id, so a worker drains
	// each session in order (package memory). Erasing a scope erases its
	// entries.
	NSExtractQueue Namespace = 0x04
	// NSExtractParked holds the extraction jobs that failed too often,
	// keyed like NSExtractQueue (package memory).
	NSExtractParked Namespace = 0x05
)

// Prefix returns the key prefix of the scope at level l: every key of that
// tenant, user or session starts with it. The scope must be valid for l.
func (s Scope) Prefix(l Level) []byte {
	n := 2 + len(s.Tenant)
	if l >= LevelUser {
		n += 1 + len(s.User)
	}
	if l >= LevelSession {
		n += 1 + len(s.Session)
	}
	k := make([]byte, 0, n+1+32)
	k = append(k, tagTenant)
	k = append(k, s.Tenant...)
	k = append(k, sep)
	if l >= LevelUser {
		k = append(k, s.User...)
		k = append(k, sep)
	}
	if l >= LevelSession {
		k = append(k, s.Session...)
		k = append(k, sep)
	}
	return k
}

// Key returns prefix || ns || suffix..., in a new slice.
func Key(prefix []byte, ns Namespace, suffix ...[]byte) []byte {
	n := len(prefix) + 1
	for _, s := range suffix {
		n += len(s)
	}
	k := make([]byte, 0, n)
	k = append(k, prefix...)
	k = append(k, byte(ns))
	for _, s := range suffix {
		k = append(k, s...)
	}
	return k
}

// SystemKey returns the key of store-level data in namespace ns.
func SystemKey(ns Namespace, suffix ...[]byte) []byte {
	return Key([]byte{tagSystem}, ns, suffix...)
}

// SessionsStart returns the first key at which the sessions under a user
// prefix can start: user-level namespaces sort before it.
func SessionsStart(userPrefix []byte) []byte {
	return append(append(make([]byte, 0, len(userPrefix)+1), userPrefix...), 0x20)
}

// SessionAt parses the session id at the start of a key under userPrefix. It
// returns false when the key is not a session key.
func SessionAt(userPrefix, key []byte) (string, bool) {
	if len(key) <= len(userPrefix) || string(key[:len(userPrefix)]) != string(userPrefix) {
		return "", false
	}
	rest := key[len(userPrefix):]
	if rest[0] < 0x20 {
		return "", false
	}
	for i, b := range rest {
		if b == sep {
			return string(rest[:i]), true
		}
	}
	return "", false
}

// PrefixEnd returns the smallest key after every key that starts with p: the
// place to seek to skip all of them.
func PrefixEnd(p []byte) []byte { return kv.PrefixEnd(p) }

// NamespaceOf parses a tenant key: the level its namespace byte sits at and
// the namespace. It returns false for system keys and malformed keys.
func NamespaceOf(key []byte) (Level, Namespace, bool) {
	if len(key) == 0 || key[0] != tagTenant {
		return 0, 0, false
	}
	rest := key[1:]
	for l := LevelTenant; l <= LevelSession; l++ {
		// Skip one id and its separator; the next byte is a namespace if it
		// is below 0x20, else the next level's id.
		i := 0
		for i < len(rest) && rest[i] != sep {
			i++
		}
		if i == 0 || i+1 >= len(rest) {
			return 0, 0, false
		}
		rest = rest[i+1:]
		if rest[0] < 0x20 {
			return l, Namespace(rest[0]), true
		}
	}
	return 0, 0, false
}

// IsRecordKey reports whether key holds a record of a named space: it is
// under a partition, NSSpace, a space name and its separator, NSRecord and
// a 16-byte id.
func IsRecordKey(key []byte) bool {
	const idLen = 16
	if len(key) < idLen+3 || key[len(key)-idLen-1] != byte(NSRecord) || key[len(key)-idLen-2] != sep {
		return false
	}
	_, ns, ok := NamespaceOf(key)
	return ok && ns == NSSpace
}
