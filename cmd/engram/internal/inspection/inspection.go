package inspection

import (
	"context"
	"time"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// Report is what inspect shows, and its JSON (GET /v1/admin/stats).
type Report struct {
	Dir       string `json:"dir"`
	DiskBytes int64  `json:"disk_bytes"`
	LSMBytes  int64  `json:"lsm_bytes"`
	VLogBytes int64  `json:"vlog_bytes"`
	Encrypted bool   `json:"encrypted"`
	// Embedder is the embedder the store's vectors come from, "" before
	// the first vector.
	Embedder string    `json:"embedder,omitempty"`
	Tenants  []Row     `json:"tenants,omitempty"`
	Tenant   string    `json:"tenant,omitempty"`
	Users    []Row     `json:"users,omitempty"`
	Shared   *Row      `json:"shared,omitempty"`
	User     *Row      `json:"user,omitempty"`
	Sessions []Session `json:"sessions,omitempty"`
	// TotalUsage sums the tenants (or the tenant's users and shared data).
	TotalUsage *memory.Usage `json:"total,omitempty"`
	// Extraction is the extraction queue.
	Extraction Queue `json:"extraction"`
}

// Queue is the extraction queue: the counts are the whole store's,
// Parked the jobs of the scope shown (at most the 100 oldest of the store).
type Queue struct {
	Pending     int      `json:"pending"`
	Retrying    int      `json:"retrying"`
	ParkedTotal int      `json:"parked_total"`
	Parked      []Parked `json:"parked"`
}

// Parked is one parked extraction job.
type Parked struct {
	Tenant    string    `json:"tenant"`
	User      string    `json:"user"`
	Session   string    `json:"session"`
	MessageID string    `json:"message_id"`
	Attempts  int       `json:"attempts"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
}

// Row is one tenant or user and what it holds.
type Row struct {
	ID string `json:"id"`
	memory.Usage
}

// Session is one session of a user.
type Session struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Messages int       `json:"messages"`
}

// Options says what [Build] reports on.
type Options struct {
	// Scope is what the report covers: the whole store (no tenant), a
	// tenant, or a user of a tenant. Its session is ignored.
	Scope memory.Scope
	// Where names the store for the reader: its directory, or its
	// PostgreSQL schema (never a DSN).
	Where string
	// Disk is the store's files' size, zero for a store in PostgreSQL.
	Disk kv.Usage
}

// Build reports what st holds in o.Scope, and the extraction queue with
// the parked jobs of that scope. The scope must be valid; Build reads
// every record of it.
func Build(ctx context.Context, st *memory.Store, o Options) (*Report, error) {
	rep := &Report{Dir: o.Where, Encrypted: st.Stats().Encrypted,
		DiskBytes: o.Disk.Total, LSMBytes: o.Disk.LSM, VLogBytes: o.Disk.VLog}
	if src, ok := st.StoredEmbedder(); ok {
		rep.Embedder = src.String()
	}
	var err error
	switch {
	case o.Scope.User != "":
		err = buildUser(ctx, st, o.Scope, rep)
	case o.Scope.Tenant != "":
		err = buildTenant(ctx, st, o.Scope.Tenant, rep)
	default:
		err = buildStore(ctx, st, rep)
	}
	if err == nil {
		err = buildQueue(ctx, st, o.Scope, &rep.Extraction)
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// pages calls list with successive After values until a short page.
func pages(list func(after string) ([]string, error)) ([]string, error) {
	var out []string
	after := ""
	for {
		page, err := list(after)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < memory.DefaultPageSize {
			return out, nil
		}
		after = page[len(page)-1]
	}
}

func buildStore(ctx context.Context, st *memory.Store, rep *Report) error {
	tenants, err := pages(func(after string) ([]string, error) {
		return st.Tenants(ctx, memory.ListOptions{After: after})
	})
	if err != nil {
		return err
	}
	var total memory.Usage
	for _, t := range tenants {
		u, err := st.Usage(ctx, memory.Scope{Tenant: t})
		if err != nil {
			return err
		}
		rep.Tenants = append(rep.Tenants, Row{ID: t, Usage: u})
		total.Add(u)
	}
	rep.TotalUsage = &total
	return nil
}

func buildTenant(ctx context.Context, st *memory.Store, tenant string, rep *Report) error {
	rep.Tenant = tenant
	users, err := pages(func(after string) ([]string, error) {
		return st.Users(ctx, memory.Scope{Tenant: tenant}, memory.ListOptions{After: after})
	})
	if err != nil {
		return err
	}
	all, err := st.Usage(ctx, memory.Scope{Tenant: tenant})
	if err != nil {
		return err
	}
	// The shared partition is what the tenant holds beyond its users.
	shared := all
	shared.Users = 0
	for _, id := range users {
		u, err := st.Usage(ctx, memory.Scope{Tenant: tenant, User: id})
		if err != nil {
			return err
		}
		rep.Users = append(rep.Users, Row{ID: id, Usage: u})
		shared.Sessions -= u.Sessions
		shared.Messages -= u.Messages
		shared.Memories -= u.Memories
		shared.Versions -= u.Versions
		shared.Entities -= u.Entities
		shared.Facts -= u.Facts
		shared.Bytes -= u.Bytes
	}
	rep.Shared = &Row{ID: "(shared)", Usage: shared}
	rep.TotalUsage = &all
	return nil
}

func buildUser(ctx context.Context, st *memory.Store, scope memory.Scope, rep *Report) error {
	rep.Tenant = scope.Tenant
	u, err := st.Usage(ctx, memory.Scope{Tenant: scope.Tenant, User: scope.User})
	if err != nil {
		return err
	}
	rep.User = &Row{ID: scope.User, Usage: u}
	scope.Session = ""
	after := ""
	for {
		page, err := st.Sessions(ctx, scope, memory.SessionsOptions{After: after})
		if err != nil {
			return err
		}
		for _, s := range page {
			rep.Sessions = append(rep.Sessions, Session{ID: s.ID, Created: s.Created, Updated: s.Updated, Messages: s.Messages})
		}
		if len(page) < memory.DefaultPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// buildQueue reports the extraction queue, with the parked jobs of
// scope (all of them for a scope with no tenant).
func buildQueue(ctx context.Context, st *memory.Store, scope memory.Scope, q *Queue) error {
	info, err := st.ExtractionQueue(ctx)
	if err != nil {
		return err
	}
	*q = Queue{Pending: info.Pending, Retrying: info.Retrying, ParkedTotal: info.ParkedTotal, Parked: []Parked{}}
	for _, j := range info.Parked {
		if scope.Tenant != "" && j.Scope.Tenant != scope.Tenant || scope.User != "" && j.Scope.User != scope.User {
			continue
		}
		q.Parked = append(q.Parked, Parked{Tenant: j.Scope.Tenant, User: j.Scope.User, Session: j.Scope.Session,
			MessageID: j.MessageID, Attempts: j.Attempts, Error: j.Error, At: j.At})
	}
	return nil
}
