package engine

import (
	"bytes"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Key layout
//
// This file owns the layout in both directions: it builds every key and
// prefix ([Scope.Prefix], [Key], [SystemKey], [SpacePrefix], [ChildPrefix])
// and parses them back ([ParseKey], [ParsePrefix], [ParseSystemKey],
// [ChildAt]). Package memory builds its keys on these in its own keys.go,
// and package graph lays out what lies under an NSGraph root in its
// keys.go; no other file handles key bytes, so a change of this layout
// touches this file and memory's keys.go.
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
// namespaces sort before every session. A named record space is one more
// level under a partition prefix:
//
//	partition NSSpace name 0x00               space prefix
//
// Keys of the store itself (not of any tenant) start with 0x00 and a
// [SystemNamespace] byte:
//
//	0x00 ns suffix                            system key
//
// The leading byte also keeps every key clear of Badger's reserved
// "!badger!" prefix.

const (
	tagSystem byte = 0x00
	tagTenant byte = 0x01
	sep       byte = 0x00
	// firstIDByte is the lowest first byte of an id: the bytes below it
	// are namespaces.
	firstIDByte byte = 0x20
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
	// NSVectorLog keys (see Tx.PutRecord).
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
	// NSSnapshot holds the partition's (or named space's) snapshot of its
	// vector and text indexes when the store is in PostgreSQL (a Badger
	// store keeps them in files); one key.
	NSSnapshot Namespace = 0x0F
)

// namespaces names each tenant namespace and the levels whose prefix it may
// follow: session for a session's own keys, tenant and user for a
// partition's.
var namespaces = map[Namespace]struct {
	name   string
	levels []Level
}{
	NSMessage:       {"message", []Level{LevelSession}},
	NSSystemMessage: {"system-message", []Level{LevelSession}},
	NSToolCall:      {"tool-call", []Level{LevelSession}},
	NSSessionInfo:   {"session-info", []Level{LevelSession}},
	NSSummary:       {"summary", []Level{LevelSession}},
	NSRedaction:     {"redaction", []Level{LevelTenant, LevelUser, LevelSession}},
	NSExtracted:     {"extracted", []Level{LevelSession}},
	NSRecord:        {"record", []Level{LevelTenant, LevelUser}},
	NSVectorLog:     {"vector-log", []Level{LevelTenant, LevelUser}},
	NSGraph:         {"graph", []Level{LevelTenant, LevelUser}},
	NSSpace:         {"space", []Level{LevelTenant, LevelUser}},
	NSMemoryHash:    {"memory-hash", []Level{LevelTenant, LevelUser}},
	NSMemoryArchive: {"memory-archive", []Level{LevelTenant, LevelUser}},
	NSExpiry:        {"expiry", []Level{LevelTenant, LevelUser}},
	NSSnapshot:      {"snapshot", []Level{LevelTenant, LevelUser}},
}

// String returns the namespace's name, such as "message" or "expiry", or
// "Namespace(0x..)" for a byte no namespace uses.
func (ns Namespace) String() string {
	if n, ok := namespaces[ns]; ok {
		return n.name
	}
	return fmt.Sprintf("Namespace(%#02x)", byte(ns))
}

// SystemNamespace tags one kind of key of the store itself, after the
// system tag. Its bytes overlap [Namespace]'s (they sit in another part of
// the key space), so it is a type of its own.
type SystemNamespace byte

// System namespaces (keys that belong to no tenant).
const (
	// NSEmbeddingCache holds cached embeddings, keyed by embed.CacheKey.
	NSEmbeddingCache SystemNamespace = 0x01
	// NSMeta holds the store's own metadata.
	NSMeta SystemNamespace = 0x02
	// NSExpiring lists the partitions that hold expiring records, keyed by
	// partition prefix, so a sweeper finds them after a restart (package
	// memory). Erasing a partition erases its entry.
	NSExpiring SystemNamespace = 0x03
	// NSExtractQueue holds the messages waiting for extraction, keyed by
	// session prefix then the message's 16-byte id, so a worker drains
	// each session in order (package memory). Erasing a scope erases its
	// entries.
	NSExtractQueue SystemNamespace = 0x04
	// NSExtractParked holds the extraction jobs that failed too often,
	// keyed like NSExtractQueue (package memory).
	NSExtractParked SystemNamespace = 0x05
)

// systemNamespaces names each system namespace.
var systemNamespaces = map[SystemNamespace]string{
	NSEmbeddingCache: "embedding-cache",
	NSMeta:           "meta",
	NSExpiring:       "expiring",
	NSExtractQueue:   "extract-queue",
	NSExtractParked:  "extract-parked",
}

// String returns the namespace's name, such as "meta", or
// "SystemNamespace(0x..)" for a byte no namespace uses.
func (ns SystemNamespace) String() string {
	if n, ok := systemNamespaces[ns]; ok {
		return n
	}
	return fmt.Sprintf("SystemNamespace(%#02x)", byte(ns))
}

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
	return appendKey(prefix, byte(ns), suffix)
}

// SystemKey returns the key of store-level data in namespace ns: the system
// tag, ns and suffix..., in a new slice. With no suffix it is the prefix of
// the whole namespace.
func SystemKey(ns SystemNamespace, suffix ...[]byte) []byte {
	return appendKey([]byte{tagSystem}, byte(ns), suffix)
}

func appendKey(prefix []byte, ns byte, suffix [][]byte) []byte {
	n := len(prefix) + 1
	for _, s := range suffix {
		n += len(s)
	}
	k := make([]byte, 0, n)
	k = append(k, prefix...)
	k = append(k, ns)
	for _, s := range suffix {
		k = append(k, s...)
	}
	return k
}

// SpacePrefix returns the prefix of the named record space under a
// partition prefix: partition, NSSpace, the name and a separator. The
// space's records and change log follow it as under a partition (NSRecord,
// NSVectorLog).
func SpacePrefix(partition []byte, space string) []byte {
	return append(Key(partition, NSSpace, []byte(space)), sep)
}

// TenantsPrefix returns the prefix every tenant key starts with: the parent
// of the tenants for [ChildPrefix], [ChildrenStart] and [ChildAt].
func TenantsPrefix() []byte { return []byte{tagTenant} }

// ChildPrefix returns the prefix of every key of the id under parent, which
// is [TenantsPrefix] (id is a tenant), a tenant prefix (a user) or a user
// prefix (a session): parent, id and a separator.
func ChildPrefix(parent []byte, id string) []byte {
	p := make([]byte, 0, len(parent)+len(id)+1)
	return append(append(append(p, parent...), id...), sep)
}

// ChildrenStart returns the first key at which an id under parent can
// start: the parent's own namespaces sort before it.
func ChildrenStart(parent []byte) []byte {
	return append(append(make([]byte, 0, len(parent)+1), parent...), firstIDByte)
}

// ChildAt parses the id at the start of a key under parent. It returns
// false when the key is not under parent or is one of the parent's own
// namespace keys.
func ChildAt(parent, key []byte) (string, bool) {
	if len(key) <= len(parent) || !bytes.HasPrefix(key, parent) {
		return "", false
	}
	rest := key[len(parent):]
	if rest[0] < firstIDByte {
		return "", false
	}
	if i := bytes.IndexByte(rest, sep); i >= 0 {
		return string(rest[:i]), true
	}
	return "", false
}

// PrefixEnd returns the smallest key after every key that starts with p: the
// place to seek to skip all of them.
func PrefixEnd(p []byte) []byte { return kv.PrefixEnd(p) }

// scan finds the scope prefixes a tenant key (or key prefix) starts with:
// ends[i] is the length of the prefix at level i+1, n how many there are.
// n is 0 for a system key and for a tenant key cut inside its tenant id. A
// byte below firstIDByte where an id would start ends the scan: it is a
// namespace.
func scan(key []byte) (ends [3]int, n int) {
	if len(key) == 0 || key[0] != tagTenant {
		return ends, 0
	}
	at := 1
	for n < len(ends) && at < len(key) && key[at] >= firstIDByte {
		j := bytes.IndexByte(key[at:], sep)
		if j < 0 {
			break
		}
		at += j + 1
		ends[n] = at
		n++
	}
	return ends, n
}

// isTenantKey reports whether b can be a tenant key or prefix: the tenant
// tag and at least one more byte.
func isTenantKey(b []byte) bool { return len(b) > 1 && b[0] == tagTenant }

// tenantPrefixOf returns the tenant prefix a key starts with.
func tenantPrefixOf(key []byte) ([]byte, bool) {
	ends, n := scan(key)
	if n == 0 {
		return nil, false
	}
	return key[:ends[0]], true
}

// partitionOf returns the partition prefix a tenant key or key prefix is
// under: the tenant prefix when a namespace byte follows it (or nothing
// does), else the user prefix. It returns false when the key is cut inside
// the id that decides.
func partitionOf(key []byte) ([]byte, bool) {
	ends, n := scan(key)
	switch {
	case n == 0:
		return nil, false
	case n >= 2:
		return key[:ends[1]], true
	case ends[0] == len(key) || key[ends[0]] < firstIDByte:
		return key[:ends[0]], true
	}
	return nil, false // a user id without its separator
}

// prefixLevel returns the level of a key that is exactly a scope prefix,
// without validating its ids.
func prefixLevel(p []byte) (Level, bool) {
	ends, n := scan(p)
	if n == 0 || ends[n-1] != len(p) {
		return 0, false
	}
	return Level(n), true
}

// ParsePrefix parses a tenant, user or session prefix, as [Scope.Prefix]
// builds it, into its scope and level. It returns false for anything else,
// and for ids that [Scope.Validate] refuses.
func ParsePrefix(p []byte) (Scope, Level, bool) {
	l, ok := prefixLevel(p)
	if !ok {
		return Scope{}, 0, false
	}
	s := scopeOf(p)
	if s.Validate(l) != nil {
		return Scope{}, 0, false
	}
	return s, l, true
}

// scopeOf returns the ids of a scope prefix; it must be one.
func scopeOf(p []byte) Scope {
	var ids [3]string
	ends, n := scan(p)
	at := 1
	for i := range n {
		ids[i] = string(p[at : ends[i]-1])
		at = ends[i]
	}
	return Scope{Tenant: ids[0], User: ids[1], Session: ids[2]}
}

// ParsedKey is a tenant key split into its parts by [ParseKey]: Prefix,
// then the Namespace byte, then Suffix. Its slices alias the parsed key.
type ParsedKey struct {
	// Level is the level of the scope prefix the namespace follows.
	Level Level
	// Prefix is the scope prefix, as [Scope.Prefix] at Level builds it;
	// the namespace byte sits at len(Prefix).
	Prefix []byte
	// Namespace is the key's namespace.
	Namespace Namespace
	// Suffix is what follows the namespace byte.
	Suffix []byte
}

// ParseKey splits a tenant key into its scope prefix, namespace and suffix.
// It returns false for system keys, bare prefixes and malformed keys; it
// never panics. It does not validate the ids (see [ParsePrefix]) nor check
// that the namespace is known at its level.
func ParseKey(key []byte) (ParsedKey, bool) {
	ends, n := scan(key)
	if n == 0 {
		return ParsedKey{}, false
	}
	at := ends[n-1]
	if at >= len(key) || key[at] >= firstIDByte || key[at] == 0 {
		return ParsedKey{}, false
	}
	return ParsedKey{Level: Level(n), Prefix: key[:at], Namespace: Namespace(key[at]), Suffix: key[at+1:]}, true
}

// Scope returns the ids of the key's prefix, in new strings.
func (k ParsedKey) Scope() Scope { return scopeOf(k.Prefix) }

// PrefixAt returns the key's scope prefix at level l, which is at most
// k.Level: the tenant or user prefix a session key is under, for example.
// It aliases the key.
func (k ParsedKey) PrefixAt(l Level) []byte {
	ends, n := scan(k.Prefix)
	if l < LevelTenant || int(l) > n {
		return nil
	}
	return k.Prefix[:ends[l-1]]
}

// Space splits the suffix of an NSSpace key: the space's name, the
// namespace byte within the space (NSRecord or NSVectorLog) and what
// follows it. It returns false for keys of other namespaces and malformed
// suffixes.
func (k ParsedKey) Space() (name []byte, ns Namespace, suffix []byte, ok bool) {
	if k.Namespace != NSSpace {
		return nil, 0, nil, false
	}
	i := bytes.IndexByte(k.Suffix, sep)
	if i <= 0 || i+1 >= len(k.Suffix) {
		return nil, 0, nil, false
	}
	return k.Suffix[:i], Namespace(k.Suffix[i+1]), k.Suffix[i+2:], true
}

// String returns the key's parts for reading: level, ids, namespace and
// the suffix in hex.
func (k ParsedKey) String() string {
	s := k.Scope()
	ids := s.Tenant
	if k.Level >= LevelUser {
		ids += "/" + s.User
	}
	if k.Level >= LevelSession {
		ids += "/" + s.Session
	}
	return fmt.Sprintf("%s %q %s %x", k.Level, ids, k.Namespace, k.Suffix)
}

// ParseSystemKey splits a key of the store itself into its namespace and
// suffix (which aliases the key). It returns false for tenant keys.
func ParseSystemKey(key []byte) (SystemNamespace, []byte, bool) {
	if len(key) < 2 || key[0] != tagSystem {
		return 0, nil, false
	}
	return SystemNamespace(key[1]), key[2:], true
}

// recordIDLen is the length of a record's id in its key.
const recordIDLen = len(ulid.ULID{})

// idAfter returns the 16-byte id that follows prefix in key, as record and
// change-log keys hold it (prefix is Key(partition, NSRecord), say).
func idAfter(prefix, key []byte) ulid.ULID {
	var id ulid.ULID
	copy(id[:], key[len(prefix):])
	return id
}

// IsRecordKey reports whether key holds a record of a named space: it is
// under a partition, NSSpace, a space name and its separator, NSRecord and
// a 16-byte id.
func IsRecordKey(key []byte) bool {
	k, ok := ParseKey(key)
	if !ok {
		return false
	}
	_, ns, id, ok := k.Space()
	return ok && ns == NSRecord && len(id) == recordIDLen
}
