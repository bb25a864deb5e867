package main

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/inspection"
)

// runInspectURL is engram inspect --url: the report of a running server's
// store, from GET /v1/admin/stats (an admin token), printed as inspect
// --dir prints it. Its disk sizes are of the running store's files.
func runInspectURL(cmd *cobra.Command, o inspectOptions) error {
	if err := o.remote.check(cmd); err != nil {
		return err
	}
	if err := o.store.checkScope(); err != nil {
		return err
	}
	q := url.Values{}
	if o.store.tenant != "" {
		q.Set("tenant", o.store.tenant)
	}
	if o.store.user != "" {
		q.Set("user", o.store.user)
	}
	resp, err := o.remote.get(cmd.Context(), "/v1/admin/stats", q)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer resp.Body.Close()
	var rep inspection.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return fmt.Errorf("inspect: the server's report: %w", err)
	}
	w := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeInspect(w, &rep)
}
