package memory

import (
	"bytes"
	"context"
	"fmt"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
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
	return s.listIDs(ctx, engine.TenantsPrefix(), opts)
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
// tenants under engine.TenantsPrefix, users under a tenant prefix. Keys of
// parent's own namespaces sort before every id and are skipped.
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
		start := engine.ChildrenStart(parent)
		if opts.After != "" {
			start = engine.PrefixEnd(engine.ChildPrefix(parent, opts.After))
		}
		for it.Seek(start); it.Valid() && len(out) < limit; {
			if err := ctx.Err(); err != nil {
				return err
			}
			id, ok := engine.ChildAt(parent, it.Key())
			if !ok {
				break
			}
			out = append(out, id)
			it.Seek(engine.PrefixEnd(engine.ChildPrefix(parent, id)))
		}
		return nil
	})
	return out, err
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
// memories, graph) or a session (its messages). It reads every key of the
// scope and the length of every value (not the values) in one snapshot,
// so it costs a keys-only scan of the scope: meant for inspection, not
// for a hot path. Agent is ignored.
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
		var lastUser []byte
		n := 0
		for it.Seek(nil); it.Valid(); it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k := it.Key()
			// The value's length, not the value: on PostgreSQL reading
			// each value over 512 bytes cost a round trip (issue 26).
			u.Bytes += int64(len(k)) + it.ValueSize()
			pk, ok := engine.ParseKey(k)
			if !ok {
				continue
			}
			if pk.Level >= engine.LevelUser {
				if user := pk.PrefixAt(engine.LevelUser); !bytes.Equal(user, lastUser) {
					u.Users++
					lastUser = append(lastUser[:0], user...)
				}
			}
			u.count(pk)
		}
		return nil
	})
	if level != engine.LevelTenant {
		u.Users = 0
	}
	return u, err
}

// UserUsage is one user of [Store.UserUsages] and what it holds.
type UserUsage struct {
	User  string `json:"user"`
	Usage Usage  `json:"usage"`
}

// UserUsages lists a page of the users of the scope's tenant, as
// [Store.Users] does, each with its usage (what [Store.Usage] counts for
// the user), in one snapshot. It reads the page's users' keys and the
// lengths of their values in one scan, from the first user of the page to
// the last, so a page costs the same scan as the users' data, and on
// PostgreSQL a few round trips (pages of keys) for the whole page rather
// than a few per user.
func (s *Store) UserUsages(ctx context.Context, scope Scope, opts ListOptions) ([]UserUsage, error) {
	scope = Scope{Tenant: scope.Tenant}
	if err := scope.Validate(engine.LevelTenant); err != nil {
		return nil, err
	}
	limit, err := pageSize(opts.Limit)
	if err != nil {
		return nil, err
	}
	parent := scope.Prefix(engine.LevelTenant)
	start := engine.ChildrenStart(parent)
	if opts.After != "" {
		if err := engine.ValidateID(opts.After); err != nil {
			return nil, fmt.Errorf("%w: After %w", ErrInvalidOptions, err)
		}
		start = engine.PrefixEnd(engine.ChildPrefix(parent, opts.After))
	}
	var out []UserUsage
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		out = out[:0]
		it := tx.NewIterator(engine.IterOptions{Prefix: parent, KeysOnly: true})
		defer it.Close()
		var user []byte // the prefix of out's last user
		n := 0
		for it.Seek(start); it.Valid(); it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k := it.Key()
			if user == nil || !bytes.HasPrefix(k, user) {
				id, ok := engine.ChildAt(parent, k)
				if !ok || len(out) == limit {
					break
				}
				out = append(out, UserUsage{User: id})
				user = engine.ChildPrefix(parent, id)
			}
			out[len(out)-1].Usage.add(k, it.ValueSize())
		}
		return nil
	})
	return out, err
}

// add counts the key k, whose value is size bytes long.
func (u *Usage) add(k []byte, size int64) {
	u.Bytes += int64(len(k)) + size
	if pk, ok := engine.ParseKey(k); ok {
		u.count(pk)
	}
}

// count adds the key k to the counts it belongs to.
func (u *Usage) count(k engine.ParsedKey) {
	switch l, ns := k.Level, k.Namespace; {
	case l == engine.LevelSession && ns == engine.NSMessage:
		u.Messages++
	case l == engine.LevelSession && ns == engine.NSSessionInfo:
		u.Sessions++
	case l != engine.LevelSession && ns == engine.NSMemoryArchive:
		u.Versions++
	case l != engine.LevelSession && ns == engine.NSSpace:
		if _, ok := spaceRecord(k, spaceMemories); ok {
			u.Memories++ // a current memory
		}
	case l != engine.LevelSession && ns == engine.NSGraph:
		// The suffix is the key under the graph's root.
		switch {
		case graph.IsEntityKey(k.Suffix):
			u.Entities++
		case graph.IsFactKey(k.Suffix):
			u.Facts++
		}
	}
}
