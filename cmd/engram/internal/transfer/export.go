package transfer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// Counts says what an export wrote.
type Counts struct {
	// Messages and Memories count JSONL lines; Memories includes earlier
	// versions.
	Messages int `json:"messages"`
	Memories int `json:"memories"`
	// Graphs counts the N-Quads files ExportDir wrote (graphs not empty).
	Graphs int `json:"graphs"`
}

// pageSize is how many sessions, messages or memories an export reads per
// call.
const pageSize = 500

// ExportJSONL writes the messages and memories of scope to w, one JSON
// object per line (see the package documentation): one user's when
// scope.User is set, else the tenant's shared memories and then every
// user's, in id order. Within a user, each session's messages come in
// order, then the memories, each current one after its earlier versions.
// The same data always exports to the same bytes.
func ExportJSONL(ctx context.Context, st *memory.Store, scope memory.Scope, w io.Writer) (Counts, error) {
	scope = memory.Scope{Tenant: scope.Tenant, User: scope.User}
	if err := scope.Validate(scope.Level()); err != nil {
		return Counts{}, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var c Counts
	users := []string{scope.User}
	if scope.User == "" {
		if err := exportMemories(ctx, st, scope, enc, &c); err != nil {
			return c, err
		}
		var err error
		if users, err = allUsers(ctx, st, scope.Tenant); err != nil {
			return c, err
		}
	}
	for _, u := range users {
		user := memory.Scope{Tenant: scope.Tenant, User: u}
		if err := exportMessages(ctx, st, user, enc, &c); err != nil {
			return c, err
		}
		if err := exportMemories(ctx, st, user, enc, &c); err != nil {
			return c, err
		}
	}
	if err := bw.Flush(); err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	return c, nil
}

// allUsers lists every user of a tenant.
func allUsers(ctx context.Context, st *memory.Store, tenant string) ([]string, error) {
	var out []string
	after := ""
	for {
		page, err := st.Users(ctx, memory.Scope{Tenant: tenant}, memory.ListOptions{After: after, Limit: pageSize})
		if err != nil {
			return nil, fmt.Errorf("export: list users: %w", err)
		}
		out = append(out, page...)
		if len(page) < pageSize {
			return out, nil
		}
		after = page[len(page)-1]
	}
}

// exportMessages writes every message of every session of a user.
func exportMessages(ctx context.Context, st *memory.Store, user memory.Scope, enc *json.Encoder, c *Counts) error {
	after := ""
	for {
		sessions, err := st.Sessions(ctx, user, memory.SessionsOptions{After: after, Limit: pageSize})
		if err != nil {
			return fmt.Errorf("export: sessions of %q: %w", user.User, err)
		}
		for _, si := range sessions {
			scope := memory.Scope{Tenant: user.Tenant, User: user.User, Session: si.ID}
			sess := st.Session(scope)
			last := ""
			for {
				msgs, err := sess.Messages(ctx, memory.MessagesOptions{After: last, Limit: pageSize})
				if err != nil {
					return fmt.Errorf("export: messages of %q/%q: %w", user.User, si.ID, err)
				}
				for _, m := range msgs {
					m.Tokens = 0
					if err := enc.Encode(messageLine{Type: typeMessage, User: user.User, Session: si.ID, Message: m}); err != nil {
						return fmt.Errorf("export: %w", err)
					}
					c.Messages++
				}
				if len(msgs) < pageSize {
					break
				}
				last = msgs[len(msgs)-1].ID
			}
		}
		if len(sessions) < pageSize {
			return nil
		}
		after = sessions[len(sessions)-1].ID
	}
}

// exportMemories writes the current memories of a user (or the tenant's
// shared ones), each after its earlier versions, oldest first.
func exportMemories(ctx context.Context, st *memory.Store, scope memory.Scope, enc *json.Encoder, c *Counts) error {
	after := ""
	for {
		mems, err := st.Memories(ctx, scope, memory.MemoriesOptions{After: after, Limit: pageSize})
		if err != nil {
			return fmt.Errorf("export: memories of %q: %w", scope.User, err)
		}
		for _, m := range mems {
			versions := []memory.Memory{m}
			if m.Supersedes != "" {
				if versions, err = st.MemoryHistory(ctx, scope, m.ID); err != nil {
					return fmt.Errorf("export: history of memory %s: %w", m.ID, err)
				}
			}
			for i := len(versions) - 1; i >= 0; i-- {
				if err := enc.Encode(memoryLine{Type: typeMemory, User: scope.User, Memory: versions[i]}); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				c.Memories++
			}
		}
		if len(mems) < pageSize {
			return nil
		}
		after = mems[len(mems)-1].ID
	}
}

// ExportNQuads writes the graph of scope's user (or, with no User, the
// tenant's shared graph) to w as N-Quads, after the comment line that says
// whose it is.
func ExportNQuads(ctx context.Context, st *memory.Store, scope memory.Scope, w io.Writer) error {
	scope = memory.Scope{Tenant: scope.Tenant, User: scope.User}
	if err := scope.Validate(scope.Level()); err != nil {
		return err
	}
	if err := writeHeader(w, scope.User); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := st.ViewGraph(ctx, scope, func(g *graph.Tx) error { return g.Export(w) }); err != nil {
		return fmt.Errorf("export: graph of %q: %w", scope.User, err)
	}
	return nil
}

// Names of the files ExportDir writes.
const (
	dirJSONL  = "engram.jsonl"
	dirShared = "shared.nq"
	dirUsers  = "users"
)

// ExportDir writes scope into a new directory dir: engram.jsonl
// (ExportJSONL), and one N-Quads file per non-empty graph: shared.nq for
// the tenant's shared graph (when scope.User is empty) and users/NAME.nq
// for each user. It builds the directory next to dir and renames it into
// place once every file is synced, so dir appears whole or not at all. dir
// must not exist, or be empty.
func ExportDir(ctx context.Context, st *memory.Store, scope memory.Scope, dir string) (c Counts, err error) {
	scope = memory.Scope{Tenant: scope.Tenant, User: scope.User}
	if err := scope.Validate(scope.Level()); err != nil {
		return c, err
	}
	dir = filepath.Clean(dir)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return c, fmt.Errorf("export: %s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("export: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-*")
	if err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeSynced(filepath.Join(tmp, dirJSONL), func(w io.Writer) (err error) {
		c, err = ExportJSONL(ctx, st, scope, w)
		return err
	}); err != nil {
		return c, err
	}
	owners := []string{scope.User}
	if scope.User == "" {
		if owners, err = allUsers(ctx, st, scope.Tenant); err != nil {
			return c, err
		}
		owners = append([]string{""}, owners...) // the shared graph first
	}
	taken := map[string]bool{}
	for _, u := range owners {
		name := dirShared
		if u != "" {
			name = filepath.Join(dirUsers, userFileName(u, taken)+".nq")
		}
		wrote, err := exportGraphFile(ctx, st, memory.Scope{Tenant: scope.Tenant, User: u}, filepath.Join(tmp, name))
		if err != nil {
			return c, err
		}
		if wrote {
			c.Graphs++
		}
	}
	_ = os.Remove(filepath.Join(tmp, dirUsers)) // fails, as it should, unless no user had a graph
	if err := fileio.SyncDir(filepath.Join(tmp, dirUsers)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("export: %w", err)
	}
	if err := fileio.SyncDir(tmp); err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) { // an empty dir
		return c, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	return c, fileio.SyncDir(filepath.Dir(dir))
}

// exportGraphFile writes a graph to path, or nothing when it is empty.
func exportGraphFile(ctx context.Context, st *memory.Store, scope memory.Scope, path string) (bool, error) {
	var quads int64
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("export: %w", err)
	}
	err := writeSynced(path, func(w io.Writer) error {
		if err := writeHeader(w, scope.User); err != nil {
			return err
		}
		cw := &fileio.CountingWriter{W: w}
		err := st.ViewGraph(ctx, scope, func(g *graph.Tx) error { return g.Export(cw) })
		quads = cw.N
		return err
	})
	if err != nil {
		return false, fmt.Errorf("export: graph of %q: %w", scope.User, err)
	}
	if quads == 0 {
		return false, os.Remove(path)
	}
	return true, nil
}

// userFileName returns a file name for a user's graph: the id with every
// byte outside A-Z a-z 0-9 - _ (and . after the first byte)
// percent-encoded, and ~2, ~3... appended when a case-insensitive file
// system would take it for a name already used.
func userFileName(user string, taken map[string]bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	name := b.String()
	if len(name) > 200 { // file systems allow 255 bytes
		name = name[:200]
	}
	for n, base := 2, name; taken[strings.ToLower(name)]; n++ {
		name = fmt.Sprintf("%s~%d", base, n)
	}
	taken[strings.ToLower(name)] = true
	return name
}

// writeSynced creates path, fills it and syncs it.
func writeSynced(path string, fill func(io.Writer) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("export: %w", cerr)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
