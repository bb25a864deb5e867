package memory

import (
	"encoding/binary"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// Keys
//
// Every key this package reads or writes is built and parsed in this file,
// on engine's codec (engine's keys.go owns the layout: scope prefixes,
// namespace bytes, system keys). No other file of the package handles key
// bytes, so a change of layout touches engine's keys.go and this file.
//
// Under a session prefix (engine.LevelSession), [sessionPrefix]:
//
//	NSMessage id             → the message (record encoding)
//	NSSystemMessage id       → nothing: indexes the session's system messages
//	NSToolCall call-id       → the id of the message that made the call
//	NSSessionInfo            → the session's info record
//	NSSummary                → the rolling summary
//	NSExtracted id           → what extraction wrote from message id (ledger)
//
// Under a partition prefix (a user's, or the tenant's shared one),
// [partitionPrefix]:
//
//	NSMemoryHash hash        → the id of the memory with that text
//	NSMemoryArchive id       → a superseded version of a memory
//	NSExpiry time id         → the space and text hash of a record due then
//	NSGraph ...              → the knowledge graph (package graph's layout;
//	                           a fact's annotation, in stores written
//	                           before facts were counted at recall, is
//	                           its token count, read by nothing now:
//	                           see hydrator.factTokens)
//
// Under either (session prefix, or a partition prefix without session):
//
//	NSRedaction 0x00         → the salt of the redaction placeholders
//	NSRedaction 0x01 kind 0x00 mac → the number given to one value
//	NSRedaction 0x02 kind    → the last number given for kind
//
// System keys:
//
//	NSExpiring partition                 → a partition with expiring records
//	NSExtractQueue session-prefix id     → a message waiting for extraction
//	NSExtractParked session-prefix id    → an extraction job that failed too often
//	NSMeta "expiring-listed"             → every such partition is listed

// idLen is the length of a ULID in a key.
const idLen = len(ulid.ULID{})

// keyID returns the id that follows prefix in key, as the keys of
// [sessionPrefix.messages], [sessionPrefix.systemMessages] and
// [sessionPrefix.extractions] hold it.
func keyID(prefix, key []byte) ulid.ULID {
	var id ulid.ULID
	copy(id[:], key[len(prefix):])
	return id
}

// sessionPrefix is the key prefix of one session (Scope.Prefix at
// engine.LevelSession); its methods build the keys under it.
type sessionPrefix []byte

// message is the key of the message id.
func (p sessionPrefix) message(id ulid.ULID) []byte {
	return engine.Key(p, engine.NSMessage, id[:])
}

// messages is the prefix of every message key, in id order.
func (p sessionPrefix) messages() []byte { return engine.Key(p, engine.NSMessage) }

// systemMessage is the index entry of the system message id.
func (p sessionPrefix) systemMessage(id ulid.ULID) []byte {
	return engine.Key(p, engine.NSSystemMessage, id[:])
}

// systemMessages is the prefix of every system message's index entry.
func (p sessionPrefix) systemMessages() []byte { return engine.Key(p, engine.NSSystemMessage) }

// toolCall is the key of the tool call callID: it names the message that
// made it.
func (p sessionPrefix) toolCall(callID string) []byte {
	return engine.Key(p, engine.NSToolCall, []byte(callID))
}

// info is the key of the session's info record.
func (p sessionPrefix) info() []byte { return engine.Key(p, engine.NSSessionInfo) }

// summary is the key of the session's rolling summary.
func (p sessionPrefix) summary() []byte { return engine.Key(p, engine.NSSummary) }

// extracted is the ledger entry of what extraction wrote from message id.
func (p sessionPrefix) extracted(id ulid.ULID) []byte {
	return engine.Key(p, engine.NSExtracted, id[:])
}

// extractions is the prefix of every ledger entry of the session.
func (p sessionPrefix) extractions() []byte { return engine.Key(p, engine.NSExtracted) }

// partitionPrefix is the key prefix of a partition (Scope.PartitionPrefix:
// a user's, or the tenant's shared one); its methods build the keys under
// it.
type partitionPrefix []byte

// memoryHash is the exact-duplicate key of a memory of kind k with text:
// it holds the id of the current memory with that text.
func (p partitionPrefix) memoryHash(k Kind, text string) []byte {
	return engine.Key(p, engine.NSMemoryHash, memoryHash(k, text))
}

// archive is the key of the superseded memory version id.
func (p partitionPrefix) archive(id ulid.ULID) []byte {
	return engine.Key(p, engine.NSMemoryArchive, id[:])
}

// expiry is the key that schedules the record id for sweeping at t.
func (p partitionPrefix) expiry(t time.Time, id ulid.ULID) []byte {
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t.UnixNano()))
	return engine.Key(p, engine.NSExpiry, ts[:], id[:])
}

// expiries is the prefix of every expiry key of the partition, in time
// order.
func (p partitionPrefix) expiries() []byte { return engine.Key(p, engine.NSExpiry) }

// expiriesUntil is the first expiry key after those due before t.
func (p partitionPrefix) expiriesUntil(t time.Time) []byte {
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t.UnixNano()))
	return engine.Key(p, engine.NSExpiry, ts[:])
}

// parseExpiry parses an expiry key of the partition: when the record is due
// and its id. It returns false for keys of another shape.
func (p partitionPrefix) parseExpiry(key []byte) (time.Time, ulid.ULID, bool) {
	start := len(p) + 1
	if len(key) != start+8+idLen {
		return time.Time{}, ulid.ULID{}, false
	}
	t := time.Unix(0, int64(binary.BigEndian.Uint64(key[start:])))
	return t, keyID(key[:start+8], key), true
}

// graphRoot is the root of the partition's knowledge graph (see package
// graph's keys.go for what lies under it).
func (p partitionPrefix) graphRoot() []byte { return engine.Key(p, engine.NSGraph) }

// expiryKey is the key that schedules the record id (a ULID from the
// store) of the partition with prefix for sweeping at t.
func expiryKey(prefix []byte, t time.Time, id string) []byte {
	u, _ := ulid.ParseStrict(id) // ids come from the store
	return partitionPrefix(prefix).expiry(t, u)
}

// spaceRecord parses k as the key of a record of the named space under a
// partition, and returns the record's id.
func spaceRecord(k engine.ParsedKey, space string) (ulid.ULID, bool) {
	if k.Level == engine.LevelSession {
		return ulid.ULID{}, false
	}
	name, ns, id, ok := k.Space()
	if !ok || ns != engine.NSRecord || string(name) != space || len(id) != idLen {
		return ulid.ULID{}, false
	}
	return ulid.ULID(id), true
}

// Keys under engine.NSRedaction, after the session (or partition) prefix.
const (
	redactSalt    byte = 0x00 // 32 random bytes
	redactValue   byte = 0x01 // kind 0x00 HMAC(salt, kind 0x00 value)[:16] → uvarint number
	redactCounter byte = 0x02 // kind → uvarint: the last number given
)

// redactSaltKey is the key of the salt of the placeholders under prefix.
func redactSaltKey(prefix []byte) []byte {
	return engine.Key(prefix, engine.NSRedaction, []byte{redactSalt})
}

// redactValueKey is the key of the number given to one value of kind,
// named by its keyed hash mac.
func redactValueKey(prefix []byte, kind string, mac []byte) []byte {
	return engine.Key(prefix, engine.NSRedaction, []byte{redactValue}, []byte(kind), []byte{0}, mac)
}

// redactCounterKey is the key of the last number given for kind.
func redactCounterKey(prefix []byte, kind string) []byte {
	return engine.Key(prefix, engine.NSRedaction, []byte{redactCounter}, []byte(kind))
}

// expiringKey is the entry that lists a partition (by its prefix) as
// holding expiring records.
func expiringKey(partition []byte) []byte { return engine.SystemKey(engine.NSExpiring, partition) }

// expiringList is the prefix of every expiringKey.
func expiringList() []byte { return engine.SystemKey(engine.NSExpiring) }

// parseExpiring parses an expiringKey: the listed partition's scope.
func parseExpiring(key []byte) (Scope, bool) {
	ns, p, ok := engine.ParseSystemKey(key)
	if !ok || ns != engine.NSExpiring {
		return Scope{}, false
	}
	return scopeOfPartition(p)
}

// expiringListed marks a store whose partitions with expiry keys are all
// listed under engine.NSExpiring: every store since the list exists.
var expiringListed = engine.SystemKey(engine.NSMeta, []byte("expiring-listed"))

// queueKey returns the entry of message id of the session with prefix in
// the queue ns (engine.NSExtractQueue or engine.NSExtractParked).
func queueKey(ns engine.SystemNamespace, session []byte, id ulid.ULID) []byte {
	return engine.SystemKey(ns, session, id[:])
}

// queuePrefix returns the prefix of the entries of queue ns under a scope
// prefix (a tenant's, a user's or a session's); with a nil prefix, of the
// whole queue.
func queuePrefix(ns engine.SystemNamespace, scopePrefix []byte) []byte {
	return engine.SystemKey(ns, scopePrefix)
}

// queues are the two extraction queues: the entries waiting, and the
// parked ones.
var queues = [...]engine.SystemNamespace{engine.NSExtractQueue, engine.NSExtractParked}

// parseQueueKey parses an entry of queue ns: its session's prefix (which
// aliases key), scope, and the message id.
func parseQueueKey(ns engine.SystemNamespace, key []byte) (prefix []byte, scope Scope, id ulid.ULID, ok bool) {
	kns, rest, ok := engine.ParseSystemKey(key)
	if !ok || kns != ns || len(rest) < idLen+4 {
		return nil, Scope{}, id, false
	}
	prefix = rest[:len(rest)-idLen]
	id = keyID(prefix, rest)
	sc, ok := scopeOfSession(prefix)
	if !ok {
		return nil, Scope{}, id, false
	}
	return prefix, sc, id, true
}

// scopeOfPrefix parses a tenant, user or session key prefix.
func scopeOfPrefix(p []byte) (Scope, engine.Level, bool) {
	return engine.ParsePrefix(p)
}

// scopeOfPartition parses a partition prefix: a tenant's, or a user's.
func scopeOfPartition(p []byte) (Scope, bool) {
	sc, l, ok := scopeOfPrefix(p)
	return sc, ok && l != engine.LevelSession
}

// scopeOfSession parses a session prefix.
func scopeOfSession(p []byte) (Scope, bool) {
	sc, l, ok := scopeOfPrefix(p)
	return sc, ok && l == engine.LevelSession
}
