package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/inspection"
	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

type inspectOptions struct {
	store  storeFlags
	remote remoteFlags
	json   bool
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
jobs again. inspect itself extracts nothing.

With --url instead of --dir, inspect reports on a running engram serve
through its GET /v1/admin/stats, with an admin token in $ENGRAM_TOKEN or the
variable --token-env names; the sizes are of the running store's files.`,
		Example: `  engram inspect --dir ./data
  engram inspect --dir ./data --tenant acme
  engram inspect --dir ./data --tenant acme --user alice --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.remote.set() {
				return runInspectURL(cmd, o)
			}
			if err := o.remote.checkLocal(cmd); err != nil {
				return err
			}
			return runInspect(cmd, o)
		},
	}
	o.store.register(cmd, flagOptional, flagOptional, flagAbsent)
	o.remote.register(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of tables")
	return cmd
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
	rep, err := inspection.Build(cmd.Context(), st, inspection.Options{Scope: o.store.scope(), Where: o.store.where(), Disk: du})
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	w := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeInspect(w, rep)
}

// writeQueue prints the extraction queue.
func writeQueue(w io.Writer, q *inspection.Queue) error {
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

func writeInspect(w io.Writer, rep *inspection.Report) error {
	if err := writeUsage(w, rep); err != nil {
		return err
	}
	return writeQueue(w, &rep.Extraction)
}

// writeUsage prints what the store, tenant or user holds.
func writeUsage(w io.Writer, rep *inspection.Report) error {
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
