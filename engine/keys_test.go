package engine

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

var keyScope = Scope{Tenant: "acme", User: "alice", Session: "s1"}

// TestKeyRoundTrip builds a key of every namespace at each level it may sit
// at and parses it back: level, prefix, namespace, suffix and scope.
func TestKeyRoundTrip(t *testing.T) {
	id := ulid.Make()
	if len(namespaces) != 15 {
		t.Fatalf("%d namespaces in the table; a new one needs its row", len(namespaces))
	}
	for ns, info := range namespaces {
		for _, l := range info.levels {
			for _, suffix := range [][]byte{nil, id[:], []byte("\x00\x01 x")} {
				prefix := keyScope.Prefix(l)
				key := Key(prefix, ns, suffix)
				k, ok := ParseKey(key)
				if !ok {
					t.Fatalf("ParseKey(%q) failed", key)
				}
				if k.Level != l || k.Namespace != ns || !bytes.Equal(k.Prefix, prefix) || !bytes.Equal(k.Suffix, suffix) {
					t.Fatalf("ParseKey(%s key at %s) = %+v", ns, l, k)
				}
				if len(k.Prefix) != len(prefix) || key[len(k.Prefix)] != byte(ns) {
					t.Fatalf("namespace byte not at len(Prefix)")
				}
				want := keyScope
				want.Agent = ""
				if l < LevelSession {
					want.Session = ""
				}
				if l < LevelUser {
					want.User = ""
				}
				if got := k.Scope(); got != want {
					t.Fatalf("Scope() = %+v, want %+v", got, want)
				}
				for pl := LevelTenant; pl <= l; pl++ {
					if got := k.PrefixAt(pl); !bytes.Equal(got, keyScope.Prefix(pl)) {
						t.Fatalf("PrefixAt(%s) = %q", pl, got)
					}
				}
				if k.PrefixAt(l+1) != nil {
					t.Fatalf("PrefixAt(%s) of a %s key is not nil", l+1, l)
				}
				if s := k.String(); !strings.Contains(s, ns.String()) || !strings.HasPrefix(s, l.String()) {
					t.Fatalf("String() = %q", s)
				}
			}
		}
	}
}

func TestNamespaceString(t *testing.T) {
	seen := map[string]bool{}
	for ns := range namespaces {
		s := ns.String()
		if seen[s] || strings.HasPrefix(s, "Namespace(") {
			t.Fatalf("namespace %#x: name %q", byte(ns), s)
		}
		seen[s] = true
	}
	for ns := range systemNamespaces {
		if s := ns.String(); strings.HasPrefix(s, "SystemNamespace(") {
			t.Fatalf("system namespace %#x: name %q", byte(ns), s)
		}
	}
	if s := Namespace(0x1F).String(); s != "Namespace(0x1f)" {
		t.Fatalf("unknown namespace: %q", s)
	}
	if s := SystemNamespace(0x1F).String(); s != "SystemNamespace(0x1f)" {
		t.Fatalf("unknown system namespace: %q", s)
	}
	// The overlap that makes SystemNamespace a type of its own.
	if byte(NSEmbeddingCache) != byte(NSMessage) || NSEmbeddingCache.String() == NSMessage.String() {
		t.Fatal("system and tenant namespaces must differ in name")
	}
}

func TestSystemKeyRoundTrip(t *testing.T) {
	suffix := append(keyScope.Prefix(LevelSession), 1, 2, 3)
	for ns := range systemNamespaces {
		for _, sfx := range [][]byte{nil, []byte("expiring-listed"), suffix} {
			key := SystemKey(ns, sfx)
			gns, got, ok := ParseSystemKey(key)
			if !ok || gns != ns || !bytes.Equal(got, sfx) {
				t.Fatalf("ParseSystemKey(%q) = %s, %q, %v", key, gns, got, ok)
			}
			if _, ok := ParseKey(key); ok {
				t.Fatalf("system key %q parsed as a tenant key", key)
			}
		}
	}
	if _, _, ok := ParseSystemKey(Key(keyScope.Prefix(LevelTenant), NSRecord)); ok {
		t.Fatal("tenant key parsed as a system key")
	}
}

func TestPrefixRoundTrip(t *testing.T) {
	for _, l := range []Level{LevelTenant, LevelUser, LevelSession} {
		p := keyScope.Prefix(l)
		sc, gl, ok := ParsePrefix(p)
		want := keyScope
		if l < LevelSession {
			want.Session = ""
		}
		if l < LevelUser {
			want.User = ""
		}
		if !ok || gl != l || sc != want {
			t.Fatalf("ParsePrefix(%q) = %+v, %s, %v", p, sc, gl, ok)
		}
		if !bytes.Equal(sc.Prefix(l), p) {
			t.Fatal("prefix does not rebuild")
		}
		// A key under the prefix is not a prefix.
		if _, _, ok := ParsePrefix(Key(p, NSRecord)); ok {
			t.Fatalf("key under %s prefix parsed as a prefix", l)
		}
	}
	for _, bad := range [][]byte{
		nil,
		{tagTenant},
		{tagTenant, sep},
		{tagTenant, 'a'},
		[]byte("\x01a\x00b"),
		[]byte("\x01a\x00b\x00c\x00d\x00"), // four ids
		[]byte("\x01..\x00"),               // an id Validate refuses
		[]byte("\x00a\x00"),
		SystemKey(NSMeta),
	} {
		if sc, l, ok := ParsePrefix(bad); ok {
			t.Errorf("ParsePrefix(%q) = %+v, %s, true", bad, sc, l)
		}
	}
}

func TestSpaceKeys(t *testing.T) {
	id := ulid.Make()
	for _, l := range []Level{LevelTenant, LevelUser} {
		part := keyScope.Prefix(l)
		sp := SpacePrefix(part, "mem")
		for _, ns := range []Namespace{NSRecord, NSVectorLog} {
			key := Key(sp, ns, id[:])
			k, ok := ParseKey(key)
			if !ok || k.Level != l || k.Namespace != NSSpace || !bytes.Equal(k.Prefix, part) {
				t.Fatalf("ParseKey(space key) = %+v, %v", k, ok)
			}
			name, gns, rest, ok := k.Space()
			if !ok || string(name) != "mem" || gns != ns || !bytes.Equal(rest, id[:]) {
				t.Fatalf("Space() = %q, %s, %x, %v", name, gns, rest, ok)
			}
			if got := IsRecordKey(key); got != (ns == NSRecord) {
				t.Fatalf("IsRecordKey(%s key) = %v", ns, got)
			}
			if got, ok := partitionOf(key); !ok || !bytes.Equal(got, part) {
				t.Fatalf("partitionOf(space key) = %q, %v", got, ok)
			}
		}
		if _, _, _, ok := (ParsedKey{Namespace: NSRecord}).Space(); ok {
			t.Fatal("Space() of a record key")
		}
	}
	if IsRecordKey(Key(keyScope.Prefix(LevelUser), NSRecord, id[:])) {
		t.Fatal("a default-space record is not a named space's")
	}
}

func TestChildKeys(t *testing.T) {
	parents := []struct {
		parent []byte
		child  func(id string) Scope
		level  Level
	}{
		{TenantsPrefix(), func(id string) Scope { return Scope{Tenant: id} }, LevelTenant},
		{keyScope.Prefix(LevelTenant), func(id string) Scope { return Scope{Tenant: keyScope.Tenant, User: id} }, LevelUser},
		{keyScope.Prefix(LevelUser), func(id string) Scope { return Scope{Tenant: keyScope.Tenant, User: keyScope.User, Session: id} }, LevelSession},
	}
	for _, p := range parents {
		for _, id := range []string{"b", "!", "ü", strings.Repeat("z", MaxIDLength)} {
			cp := ChildPrefix(p.parent, id)
			if want := p.child(id).Prefix(p.level); !bytes.Equal(cp, want) {
				t.Fatalf("ChildPrefix(%q, %q) = %q, want %q", p.parent, id, cp, want)
			}
			if bytes.Compare(cp, ChildrenStart(p.parent)) < 0 {
				t.Fatalf("child %q sorts before ChildrenStart", id)
			}
			for _, key := range [][]byte{cp, Key(cp, NSMessage, []byte("x"))} {
				if got, ok := ChildAt(p.parent, key); !ok || got != id {
					t.Fatalf("ChildAt(%q) = %q, %v", key, got, ok)
				}
			}
		}
		// The parent's own keys are no child's, and sort first.
		if p.level > LevelTenant {
			own := Key(p.parent, NSRecord, []byte("zzz"))
			if _, ok := ChildAt(p.parent, own); ok {
				t.Fatal("own namespace key parsed as a child")
			}
			if bytes.Compare(own, ChildrenStart(p.parent)) >= 0 {
				t.Fatal("own namespace key sorts after ChildrenStart")
			}
		}
		for _, key := range [][]byte{p.parent, append(slices.Clone(p.parent), 'a'), []byte("\x02zz\x00")} {
			if _, ok := ChildAt(p.parent, key); ok {
				t.Fatalf("ChildAt(%q) ok", key)
			}
		}
	}
}

func TestParseKeyMalformed(t *testing.T) {
	for _, key := range [][]byte{
		nil,
		{tagTenant},
		{tagTenant, sep},
		{tagTenant, sep, byte(NSRecord)},
		[]byte("\x01acme"),
		[]byte("\x01acme\x00"),            // a bare prefix
		[]byte("\x01acme\x00\x00"),        // namespace 0
		[]byte("\x01acme\x00al"),          // cut inside the user id
		[]byte("\x01a\x00u\x00s\x00x"),    // no namespace after the session
		[]byte("\x01a\x00u\x00s\x00"),     // a session prefix
		[]byte("\x00\x01cache"),           // a system key
		[]byte("\x02acme\x00\x05"),        // an unknown tag
		[]byte("\x01a\x00u\x00s\x00\x00"), // namespace 0 after a session
	} {
		if k, ok := ParseKey(key); ok {
			t.Errorf("ParseKey(%q) = %+v, true", key, k)
		}
	}
}

// FuzzParseKey: parsing never panics, and whatever parses rebuilds into the
// same bytes.
func FuzzParseKey(f *testing.F) {
	id := ulid.Make()
	f.Add(Key(keyScope.Prefix(LevelSession), NSMessage, id[:]))
	f.Add(Key(keyScope.Prefix(LevelUser), NSExpiry, id[:]))
	f.Add(Key(SpacePrefix(keyScope.Prefix(LevelTenant), "mem"), NSRecord, id[:]))
	f.Add(SystemKey(NSExtractQueue, keyScope.Prefix(LevelSession), id[:]))
	f.Add(keyScope.Prefix(LevelUser))
	f.Add([]byte{tagTenant, sep, sep, sep})
	f.Fuzz(func(t *testing.T, key []byte) {
		if k, ok := ParseKey(key); ok {
			if got := Key(k.Prefix, k.Namespace, k.Suffix); !bytes.Equal(got, key) {
				t.Fatalf("rebuilt %q, want %q", got, key)
			}
			if l, ok := prefixLevel(k.Prefix); !ok || l != k.Level {
				t.Fatalf("prefix %q of level %s", k.Prefix, k.Level)
			}
			_ = k.Scope()
			_ = k.String()
			for l := LevelTenant; l <= LevelSession+1; l++ {
				_ = k.PrefixAt(l)
			}
			if name, ns, rest, ok := k.Space(); ok {
				if got := Key(SpacePrefix(k.Prefix, string(name)), ns, rest); !bytes.Equal(got, key) {
					t.Fatalf("space key rebuilt %q, want %q", got, key)
				}
			}
		}
		if sc, l, ok := ParsePrefix(key); ok && !bytes.Equal(sc.Prefix(l), key) {
			t.Fatalf("prefix %q rebuilt as %q", key, sc.Prefix(l))
		}
		if ns, suffix, ok := ParseSystemKey(key); ok && !bytes.Equal(SystemKey(ns, suffix), key) {
			t.Fatalf("system key %q does not rebuild", key)
		}
		_, _ = partitionOf(key)
		_, _ = tenantPrefixOf(key)
		_ = IsRecordKey(key)
		_, _ = ChildAt(TenantsPrefix(), key)
	})
}
