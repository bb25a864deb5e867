package memory

import (
	"bytes"
	"context"
	"fmt"

	"github.com/engramdb/engram/engine"
)

// Inspection: which tenants and users a store holds, and how much. Tenants
// and users are not registered anywhere; they exist while keys start with
// their prefix (see engine's keys.go), so listing them is a skip-scan: land
// on a key, read the id at the start of it, jump past every key of that id.

// ListOptions pages through [Store.Tenants] and [Store.Users].
type ListOptions struct {
	// After lists ids that sort after this one (exclusive).
	After string
	// Limit caps the page; zero means [DefaultPageSize].
	Limit int
}

// Tenants lists the tenants that hold data, in id order, a page at a time.
// A tenant leaves the list once [Store.Forget] has erased it.
func (s *Store) Tenants(ctx context.Context, opts ListOptions) ([]string, error) {
	return s.listIDs(ctx, []byte{0x01}, opts) // engine's tagTenant: every tenant key starts with it
}

// Users lists the users of the scope's tenant that hold data (messages,
// memories or a graph), in id order, a page at a time. The scope needs
// Tenant; User and Session are ignored. The tenant's shared partition
// (memories and graph of a scope without User) is not a user and is not
// listed.
func (s *Store) Users(ctx context.Context, scope Scope, opts ListOptions) ([]string, error) {
	scope = Scope{Tenant: scope.Tenant}
	if err := scope.Validate(engine.LevelTenant); err != nil {
		return nil, err
	}
	return s.listIDs(ctx, scope.Prefix(engine.LevelTenant), opts)
}

// listIDs returns the distinct ids that follow parent in the store's keys:
// tenants under the tenant tag, users under a tenant prefix. Keys whose
// next byte is a namespace (below 0x20) belong to parent itself.
func (s *Store) listIDs(ctx context.Context, parent []byte, opts ListOptions) ([]string, error) {
	limit, err := pageSize(opts.Limit)
	if err != nil {
		return nil, err
	}
	if opts.After != "" {
		if err := engine.ValidateID(opts.After); err != nil {
			return nil, fmt.Errorf("%w: After %w", ErrInvalidOptions, err)
		}
	}
	var out []string
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: parent, KeysOnly: true})
		defer it.Close()
		start := engine.SessionsStart(parent) // the first key an id can start
		if opts.After != "" {
			start = engine.PrefixEnd(idPrefix(parent, opts.After))
		}
		for it.Seek(start); it.Valid() && len(out) < limit; {
			if err := ctx.Err(); err != nil {
				return err
			}
			id, ok := engine.SessionAt(parent, it.Key())
			if !ok {
				break
			}
			out = append(out, id)
			it.Seek(engine.PrefixEnd(idPrefix(parent, id)))
		}
		return nil
	})
	return out, err
}

// idPrefix returns parent, id and the separator: the prefix of every key
// of that id.
func idPrefix(parent []byte, id string) []byte {
	p := make([]byte, 0, len(parent)+len(id)+1)
	return append(append(append(p, parent...), id...), 0x00)
}

// Usage counts what a scope holds; see [Store.Usage].
type Usage struct {
	// Users is how many users hold data (for a tenant scope).
	Users int `json:"users"`
	// Sessions and Messages count sessions and their stored messages
	// (expired ones excluded).
	Sessions int `json:"sessions"`
	Messages int `json:"messages"`
	// Memories counts current memories; Versions the superseded versions
	// kept for [Store.MemoryHistory].
	Memories int `json:"memories"`
	Versions int `json:"versions"`
	// Entities and Facts count the knowledge graph; Facts includes closed
	// facts (their history), as [graph.Tx.History] sees them.
	Entities int `json:"entities"`
	Facts    int `json:"facts"`
	// Bytes is the size of the scope's keys and values as stored, before
	// compression and without the indexes' own overhead: an estimate of
	// its share of the store, not of the files.
	Bytes int64 `json:"bytes"`
}

// Add adds o's counts to u.
func (u *Usage) Add(o Usage) {
	u.Users += o.Users
	u.Sessions += o.Sessions
	u.Messages += o.Messages
	u.Memories += o.Memories
	u.Versions += o.Versions
	u.Entities += o.Entities
	u.Facts += o.Facts
	u.Bytes += o.Bytes
}

// Usage counts what the scope holds: a tenant (Tenant alone, with its
// shared partition and every user), a user (Tenant and User: sessions,
// memories, graph) or a session (its messages). It reads every key and
// value of the scope in one snapshot, so it costs a scan of the scope:
// meant for inspection, not for a hot path. Agent is ignored.
func (s *Store) Usage(ctx context.Context, scope Scope) (Usage, error) {
	scope.Agent = ""
	level := scope.Level()
	if err := scope.Validate(level); err != nil {
		return Usage{}, err
	}
	prefix := scope.Prefix(level)
	var u Usage
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		u = Usage{}
		it := tx.NewIterator(engine.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		var val []byte
		var lastUser []byte
		n := 0
		for it.Seek(nil); it.Valid(); it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k := it.Key()
			var err error
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			u.Bytes += int64(len(k) + len(val))
			l, nsAt, ok := namespaceAt(k)
			if !ok {
				continue
			}
			if l >= engine.LevelUser {
				if user := k[:userEnd(k)]; !bytes.Equal(user, lastUser) {
					u.Users++
					lastUser = append(lastUser[:0], user...)
				}
			}
			u.count(k, l, nsAt)
		}
		return nil
	})
	if level != engine.LevelTenant {
		u.Users = 0
	}
	return u, err
}

// count adds the key k, whose namespace byte is at k[nsAt] at level l, to
// the counts it belongs to.
func (u *Usage) count(k []byte, l engine.Level, nsAt int) {
	switch ns := engine.Namespace(k[nsAt]); {
	case l == engine.LevelSession && ns == engine.NSMessage:
		u.Messages++
	case l == engine.LevelSession && ns == engine.NSSessionInfo:
		u.Sessions++
	case l != engine.LevelSession && ns == engine.NSMemoryArchive:
		u.Versions++
	case l != engine.LevelSession && ns == engine.NSSpace:
		// prefix NSSpace "mem" 0x00 NSRecord id: a current memory.
		space := append(append([]byte{byte(engine.NSSpace)}, spaceMemories...), 0x00, byte(engine.NSRecord))
		if engine.IsRecordKey(k) && len(k) == nsAt+len(space)+16 && bytes.HasPrefix(k[nsAt:], space) {
			u.Memories++
		}
	case l != engine.LevelSession && ns == engine.NSGraph && len(k) > nsAt+1:
		// Package graph's layout under its root (graph's keys.go): one
		// 'e' key per entity and one 'f' key per fact.
		switch k[nsAt+1] {
		case 'e':
			u.Entities++
		case 'f':
			u.Facts++
		}
	}
}

// namespaceAt parses a tenant key as engine.NamespaceOf does, and also
// returns where the namespace byte is.
func namespaceAt(key []byte) (engine.Level, int, bool) {
	if len(key) == 0 || key[0] != 0x01 {
		return 0, 0, false
	}
	i := 1
	for l := engine.LevelTenant; l <= engine.LevelSession; l++ {
		j := bytes.IndexByte(key[i:], 0x00)
		if j <= 0 || i+j+1 >= len(key) {
			return 0, 0, false
		}
		i += j + 1
		if key[i] < 0x20 {
			return l, i, true
		}
	}
	return 0, 0, false
}

// userEnd returns the length of the user prefix of a key at user or
// session level: the tag, the tenant, the user and their separators.
func userEnd(key []byte) int {
	t := bytes.IndexByte(key[1:], 0x00) + 1
	return t + 1 + bytes.IndexByte(key[t+1:], 0x00) + 1
}
