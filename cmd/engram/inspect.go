package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

type inspectOptions struct {
	store storeFlags
	json  bool
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect --dir D [--tenant T [--user U]] [--json]",
		Short: "Show a store's tenants, users and sessions, with counts and sizes",
		Long: `inspect shows what a store holds. Without --tenant: the store's size on disk
and one row per tenant. With --tenant: one row per user, plus the tenant's
shared memories and graph. With --user too: the user's totals and one row per
session.

Counts are of stored records: messages, current memories (and their earlier
versions), graph entities and facts (closed ones included). Bytes are the
keys and values a scope holds, before compression: its share of the store,
not of the files. Counting reads every record of the scopes shown, so it
takes a while on a large store.

Every view ends with the extraction queue: how many appended messages wait
for extraction (and how many of them failed at least once and are retrying),
and the jobs parked after failing too often (at once for a model's refusal),
with their session, message id, attempts and last error; with --tenant or
--user, the parked jobs of that scope. engram extract retry queues parked
jobs again. inspect itself extracts nothing.`,
		Example: `  engram inspect --dir ./data
  engram inspect --dir ./data --tenant acme
  engram inspect --dir ./data --tenant acme --user alice --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInspect(cmd, o)
		},
	}
	o.store.register(cmd, flagOptional, flagOptional, flagAbsent)
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of tables")
	return cmd
}

// storeReport is what inspect shows, and its JSON.
type storeReport struct {
	Dir       string `json:"dir"`
	DiskBytes int64  `json:"disk_bytes"`
	LSMBytes  int64  `json:"lsm_bytes"`
	VLogBytes int64  `json:"vlog_bytes"`
	Encrypted bool   `json:"encrypted"`
	// Embedder is the embedder the store's vectors come from, "" before
	// the first vector.
	Embedder string `json:"embedder,omitempty"`
	Tenants  []row  `json:"tenants,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Users    []row  `json:"users,omitempty"`
	Shared   *row   `json:"shared,omitempty"`
	User     *row   `json:"user,omitempty"`
	Sessions []sess `json:"sessions,omitempty"`
	// TotalUsage sums the tenants (or the tenant's users and shared data).
	TotalUsage *memory.Usage `json:"total,omitempty"`
	// Extraction is the extraction queue.
	Extraction queueReport `json:"extraction"`
}

// queueReport is the extraction queue: the counts are the whole store's,
// Parked the jobs of the scope shown (at most the 100 oldest of the store).
type queueReport struct {
	Pending     int         `json:"pending"`
	Retrying    int         `json:"retrying"`
	ParkedTotal int         `json:"parked_total"`
	Parked      []parkedJob `json:"parked"`
}

// parkedJob is one parked extraction job.
type parkedJob struct {
	Tenant    string    `json:"tenant"`
	User      string    `json:"user"`
	Session   string    `json:"session"`
	MessageID string    `json:"message_id"`
	Attempts  int       `json:"attempts"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
}

// row is one tenant or user and what it holds.
type row struct {
	ID string `json:"id"`
	memory.Usage
}

// sess is one session of a user.
type sess struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Messages int       `json:"messages"`
}

func runInspect(cmd *cobra.Command, o inspectOptions) (err error) {
	if err := o.store.checkScope(); err != nil {
		return err
	}
	// Sizes are taken before the store opens: an open store's memtables
	// are preallocated files, mostly holes.
	var du kv.Usage
	if o.store.dir != "" {
		du = kv.DiskUsage(o.store.dir)
	}
	st, err := o.store.openRead(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	ctx := cmd.Context()
	rep := storeReport{Dir: o.store.where(), Encrypted: st.Stats().Encrypted}
	if src, ok := st.StoredEmbedder(); ok {
		rep.Embedder = src.String()
	}
	rep.DiskBytes, rep.LSMBytes, rep.VLogBytes = du.Total, du.LSM, du.VLog
	switch {
	case o.store.user != "":
		err = inspectUser(ctx, st, o.store.scope(), &rep)
	case o.store.tenant != "":
		err = inspectTenant(ctx, st, o.store.tenant, &rep)
	default:
		err = inspectStore(ctx, st, &rep)
	}
	if err == nil {
		err = inspectQueue(ctx, st, o.store.scope(), &rep.Extraction)
	}
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	w := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeInspect(w, &rep)
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

func inspectStore(ctx context.Context, st *memory.Store, rep *storeReport) error {
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
		rep.Tenants = append(rep.Tenants, row{ID: t, Usage: u})
		total.Add(u)
	}
	rep.TotalUsage = &total
	return nil
}

func inspectTenant(ctx context.Context, st *memory.Store, tenant string, rep *storeReport) error {
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
		rep.Users = append(rep.Users, row{ID: id, Usage: u})
		shared.Sessions -= u.Sessions
		shared.Messages -= u.Messages
		shared.Memories -= u.Memories
		shared.Versions -= u.Versions
		shared.Entities -= u.Entities
		shared.Facts -= u.Facts
		shared.Bytes -= u.Bytes
	}
	rep.Shared = &row{ID: "(shared)", Usage: shared}
	rep.TotalUsage = &all
	return nil
}

func inspectUser(ctx context.Context, st *memory.Store, scope memory.Scope, rep *storeReport) error {
	rep.Tenant = scope.Tenant
	u, err := st.Usage(ctx, memory.Scope{Tenant: scope.Tenant, User: scope.User})
	if err != nil {
		return err
	}
	rep.User = &row{ID: scope.User, Usage: u}
	after := ""
	for {
		page, err := st.Sessions(ctx, scope, memory.SessionsOptions{After: after})
		if err != nil {
			return err
		}
		for _, s := range page {
			rep.Sessions = append(rep.Sessions, sess{ID: s.ID, Created: s.Created, Updated: s.Updated, Messages: s.Messages})
		}
		if len(page) < memory.DefaultPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// inspectQueue reports the extraction queue, with the parked jobs of
// scope (all of them for a scope with no tenant).
func inspectQueue(ctx context.Context, st *memory.Store, scope memory.Scope, q *queueReport) error {
	info, err := st.ExtractionQueue(ctx)
	if err != nil {
		return err
	}
	*q = queueReport{Pending: info.Pending, Retrying: info.Retrying, ParkedTotal: info.ParkedTotal, Parked: []parkedJob{}}
	for _, j := range info.Parked {
		if scope.Tenant != "" && j.Scope.Tenant != scope.Tenant || scope.User != "" && j.Scope.User != scope.User {
			continue
		}
		q.Parked = append(q.Parked, parkedJob{Tenant: j.Scope.Tenant, User: j.Scope.User, Session: j.Scope.Session,
			MessageID: j.MessageID, Attempts: j.Attempts, Error: j.Error, At: j.At})
	}
	return nil
}

// writeQueue prints the extraction queue.
func writeQueue(w io.Writer, q *queueReport) error {
	fmt.Fprintf(w, "\nExtraction queue (whole store): %d pending (%d retrying), %d parked\n", q.Pending, q.Retrying, q.ParkedTotal)
	if len(q.Parked) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARKED SESSION\tMESSAGE\tATTEMPTS\tLAST FAILURE\tERROR")
	for _, j := range q.Parked {
		fmt.Fprintf(tw, "%s/%s/%s\t%s\t%d\t%s\t%s\n", j.Tenant, j.User, j.Session, j.MessageID, j.Attempts, j.At.Format(time.RFC3339), oneLine(j.Error, 100))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if q.ParkedTotal > len(q.Parked) {
		fmt.Fprintf(w, "(%s not shown)\n", plural.Count(q.ParkedTotal-len(q.Parked), "other parked job"))
	}
	fmt.Fprintln(w, "engram extract retry --dir DIR queues them again.")
	return nil
}

// oneLine returns s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func bytesText(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

func writeInspect(w io.Writer, rep *storeReport) error {
	if err := writeUsage(w, rep); err != nil {
		return err
	}
	return writeQueue(w, &rep.Extraction)
}

// writeUsage prints what the store, tenant or user holds.
func writeUsage(w io.Writer, rep *storeReport) error {
	enc := "not encrypted"
	if rep.Encrypted {
		enc = "encrypted"
	}
	if rep.Embedder != "" {
		enc += ", vectors from " + rep.Embedder
	}
	fmt.Fprintf(w, "Store %s: %s on disk (LSM %s, value log %s), %s\n\n",
		rep.Dir, bytesText(rep.DiskBytes), bytesText(rep.LSMBytes), bytesText(rep.VLogBytes), enc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	usageRow := func(id string, u memory.Usage, users bool) {
		if users {
			fmt.Fprintf(tw, "%s\t%d\t", id, u.Users)
		} else {
			fmt.Fprintf(tw, "%s\t", id)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", u.Sessions, u.Messages, u.Memories, u.Versions, u.Entities, u.Facts, bytesText(u.Bytes))
	}
	const cols = "SESSIONS\tMESSAGES\tMEMORIES\tVERSIONS\tENTITIES\tFACTS\tBYTES\t"
	switch {
	case rep.User != nil:
		fmt.Fprintf(w, "User %s of tenant %s:\n", rep.User.ID, rep.Tenant)
		fmt.Fprintln(tw, "USER\t"+cols)
		usageRow(rep.User.ID, rep.User.Usage, false)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if len(rep.Sessions) == 0 {
			fmt.Fprintln(w, "No sessions.")
			return nil
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tCREATED\tUPDATED\tMESSAGES")
		for _, s := range rep.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", s.ID, s.Created.Format(time.RFC3339), s.Updated.Format(time.RFC3339), s.Messages)
		}
	case rep.Tenant != "":
		fmt.Fprintf(w, "Tenant %s:\n", rep.Tenant)
		fmt.Fprintln(tw, "USER\t"+cols)
		for _, r := range rep.Users {
			usageRow(r.ID, r.Usage, false)
		}
		if rep.Shared != nil {
			usageRow(rep.Shared.ID, rep.Shared.Usage, false)
		}
		if rep.TotalUsage != nil {
			usageRow("total", *rep.TotalUsage, false)
		}
	default:
		if len(rep.Tenants) == 0 {
			fmt.Fprintln(w, "No tenants.")
			return nil
		}
		fmt.Fprintln(tw, "TENANT\tUSERS\t"+cols)
		for _, r := range rep.Tenants {
			usageRow(r.ID, r.Usage, true)
		}
		if rep.TotalUsage != nil && len(rep.Tenants) > 1 {
			usageRow("total", *rep.TotalUsage, true)
		}
	}
	return tw.Flush()
}
