package memory

import (
	"bytes"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// TestKeysRoundTrip builds every kind of key this package writes and
// parses it back with engine's codec, and checks the bytes against the
// on-disk layout, which existing stores depend on.
func TestKeysRoundTrip(t *testing.T) {
	sess := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	user := Scope{Tenant: "acme", User: "alice"}
	shared := Scope{Tenant: "acme"}
	id := ulid.MustParse("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	at := time.Unix(0, 0x0102030405060708)
	sp := sessionPrefix(sess.Prefix(engine.LevelSession))
	const s = "\x01acme\x00alice\x00s1\x00"
	const u = "\x01acme\x00alice\x00"
	ts := "\x01\x02\x03\x04\x05\x06\x07\x08"
	mh := memoryHash(KindFact, "Likes tea")
	cases := []struct {
		name   string
		key    []byte
		want   string
		level  engine.Level
		ns     engine.Namespace
		suffix string
	}{
		{"message", sp.message(id), s + "\x01" + string(id[:]), engine.LevelSession, engine.NSMessage, string(id[:])},
		{"messages", sp.messages(), s + "\x01", engine.LevelSession, engine.NSMessage, ""},
		{"system message", sp.systemMessage(id), s + "\x02" + string(id[:]), engine.LevelSession, engine.NSSystemMessage, string(id[:])},
		{"system messages", sp.systemMessages(), s + "\x02", engine.LevelSession, engine.NSSystemMessage, ""},
		{"tool call", sp.toolCall("call_1"), s + "\x03call_1", engine.LevelSession, engine.NSToolCall, "call_1"},
		{"info", sp.info(), s + "\x04", engine.LevelSession, engine.NSSessionInfo, ""},
		{"summary", sp.summary(), s + "\x0c", engine.LevelSession, engine.NSSummary, ""},
		{"extracted", sp.extracted(id), s + "\x0e" + string(id[:]), engine.LevelSession, engine.NSExtracted, string(id[:])},
		{"extractions", sp.extractions(), s + "\x0e", engine.LevelSession, engine.NSExtracted, ""},
		{"redaction salt", redactSaltKey(sp), s + "\x0d\x00", engine.LevelSession, engine.NSRedaction, "\x00"},
		{"redaction value", redactValueKey(sp, "EMAIL", []byte("mac")), s + "\x0d\x01EMAIL\x00mac", engine.LevelSession, engine.NSRedaction, "\x01EMAIL\x00mac"},
		{"redaction counter", redactCounterKey(sp, "EMAIL"), s + "\x0d\x02EMAIL", engine.LevelSession, engine.NSRedaction, "\x02EMAIL"},
		{"shared redaction salt", redactSaltKey(shared.Prefix(engine.LevelTenant)), "\x01acme\x00\x0d\x00", engine.LevelTenant, engine.NSRedaction, "\x00"},
	}
	for _, pl := range []struct {
		scope Scope
		raw   string
		level engine.Level
	}{{user, u, engine.LevelUser}, {shared, "\x01acme\x00", engine.LevelTenant}} {
		_, p, err := memoryScope(pl.scope)
		if err != nil {
			t.Fatal(err)
		}
		pp := partitionPrefix(p)
		cases = append(cases, []struct {
			name   string
			key    []byte
			want   string
			level  engine.Level
			ns     engine.Namespace
			suffix string
		}{
			{"memory hash", pp.memoryHash(KindFact, "Likes tea"), pl.raw + "\x09" + string(mh), pl.level, engine.NSMemoryHash, string(mh)},
			{"archive", pp.archive(id), pl.raw + "\x0a" + string(id[:]), pl.level, engine.NSMemoryArchive, string(id[:])},
			{"expiry", pp.expiry(at, id), pl.raw + "\x0b" + ts + string(id[:]), pl.level, engine.NSExpiry, ts + string(id[:])},
			{"expiry by string", expiryKey(p, at, id.String()), pl.raw + "\x0b" + ts + string(id[:]), pl.level, engine.NSExpiry, ts + string(id[:])},
			{"expiries", pp.expiries(), pl.raw + "\x0b", pl.level, engine.NSExpiry, ""},
			{"expiries until", pp.expiriesUntil(at), pl.raw + "\x0b" + ts, pl.level, engine.NSExpiry, ts},
			{"graph root", pp.graphRoot(), pl.raw + "\x07", pl.level, engine.NSGraph, ""},
		}...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if string(c.key) != c.want {
				t.Fatalf("key %q, want %q", c.key, c.want)
			}
			k, ok := engine.ParseKey(c.key)
			if !ok || k.Level != c.level || k.Namespace != c.ns || string(k.Suffix) != c.suffix {
				t.Fatalf("ParseKey = %+v, %v; want %s %s %q", k, ok, c.level, c.ns, c.suffix)
			}
		})
	}

	// Parsers.
	if got := keyID(sp.messages(), sp.message(id)); got != id {
		t.Fatalf("keyID = %s", got)
	}
	for _, p := range []Scope{user, shared} {
		_, prefix, _ := memoryScope(p)
		pp := partitionPrefix(prefix)
		gt, gid, ok := pp.parseExpiry(pp.expiry(at, id))
		if !ok || !gt.Equal(at) || gid != id {
			t.Fatalf("parseExpiry = %v, %s, %v", gt, gid, ok)
		}
		for _, bad := range [][]byte{pp.expiries(), pp.expiriesUntil(at), append(pp.expiry(at, id), 0)} {
			if _, _, ok := pp.parseExpiry(bad); ok {
				t.Fatalf("parseExpiry(%q) ok", bad)
			}
		}
		if got, ok := parseExpiring(expiringKey(prefix)); !ok || got != p {
			t.Fatalf("parseExpiring = %+v, %v; want %+v", got, ok, p)
		}
		if string(expiringKey(prefix)) != "\x00\x03"+string(prefix) || !bytes.HasPrefix(expiringKey(prefix), expiringList()) {
			t.Fatalf("expiring key %q", expiringKey(prefix))
		}
		if got, ok := scopeOfPartition(prefix); !ok || got != p {
			t.Fatalf("scopeOfPartition = %+v, %v", got, ok)
		}
		if _, ok := scopeOfSession(prefix); ok {
			t.Fatal("partition prefix parsed as a session's")
		}
	}
	if _, ok := parseExpiring(queueKey(engine.NSExtractQueue, sp, id)); ok {
		t.Fatal("queue key parsed as an expiring entry")
	}
	if _, ok := scopeOfPartition(sp); ok {
		t.Fatal("session prefix parsed as a partition")
	}
	if got, ok := scopeOfSession(sp); !ok || got != sess {
		t.Fatalf("scopeOfSession = %+v, %v", got, ok)
	}
	if string(expiringListed) != "\x00\x02expiring-listed" {
		t.Fatalf("expiringListed = %q", expiringListed)
	}

	for _, ns := range queues {
		key := queueKey(ns, sp, id)
		if string(key) != "\x00"+string([]byte{byte(ns)})+s+string(id[:]) {
			t.Fatalf("queue key %q", key)
		}
		for _, p := range [][]byte{queuePrefix(ns, nil), queuePrefix(ns, user.Prefix(engine.LevelUser)), queuePrefix(ns, sp)} {
			if !bytes.HasPrefix(key, p) {
				t.Fatalf("queue key %q not under %q", key, p)
			}
		}
		prefix, scope, gid, ok := parseQueueKey(ns, key)
		if !ok || !bytes.Equal(prefix, sp) || scope != sess || gid != id {
			t.Fatalf("parseQueueKey = %q, %+v, %s, %v", prefix, scope, gid, ok)
		}
		j, ok := parseJob(ns, key, []byte(`{"a":2}`))
		if !ok || j.scope != sess || j.id != id || j.state.Attempts != 2 || !bytes.Equal(j.key, key) {
			t.Fatalf("parseJob = %+v, %v", j, ok)
		}
		other := queues[0]
		if ns == other {
			other = queues[1]
		}
		for _, bad := range [][]byte{queueKey(other, sp, id), queuePrefix(ns, sp), queueKey(ns, user.Prefix(engine.LevelUser), id), sp.message(id)} {
			if _, _, _, ok := parseQueueKey(ns, bad); ok {
				t.Fatalf("parseQueueKey(%q) ok", bad)
			}
		}
	}

	// Records of a named space.
	for _, space := range []string{spaceMemories, spaceMessages} {
		for _, p := range []Scope{user, shared} {
			key := engine.Key(engine.SpacePrefix(p.Prefix(p.Level()), space), engine.NSRecord, id[:])
			k, _ := engine.ParseKey(key)
			if got, ok := spaceRecord(k, space); !ok || got != id {
				t.Fatalf("spaceRecord(%q) = %s, %v", key, got, ok)
			}
			other := spaceMessages
			if space == other {
				other = spaceMemories
			}
			if _, ok := spaceRecord(k, other); ok {
				t.Fatalf("record of %q parsed as one of %q", space, other)
			}
			log, _ := engine.ParseKey(engine.Key(engine.SpacePrefix(p.Prefix(p.Level()), space), engine.NSVectorLog, id[:]))
			if _, ok := spaceRecord(log, space); ok {
				t.Fatal("log entry parsed as a record")
			}
		}
	}
}
