package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
)

type extractRetryOptions struct {
	store storeFlags
}

func newExtractCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "extract",
		Short: "Manage a store's extraction queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newExtractRetryCmd())
	return cmd
}

func newExtractRetryCmd() *cobra.Command {
	var o extractRetryOptions
	cmd := &cobra.Command{
		Use:   "retry --dir D",
		Short: "Queue the parked extraction jobs again",
		Long: `retry moves every parked extraction job (one that failed too often, or that
a model refused; engram inspect lists them) back to the extraction queue,
with its count of attempts reset. It extracts nothing itself: the next
engram serve or engram mcp on the store works through the queue.

The store must not be open in another process (engram serve, engram mcp).`,
		Example: `  engram inspect --dir ./data
  engram extract retry --dir ./data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExtractRetry(cmd, o)
		},
	}
	o.store.register(cmd, flagAbsent, flagAbsent, flagAbsent)
	return cmd
}

func runExtractRetry(cmd *cobra.Command, o extractRetryOptions) (err error) {
	st, err := o.store.openStore(existingStore)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	n, err := st.RetryParked(cmd.Context())
	if err != nil {
		return fmt.Errorf("extract retry: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "queued %s again in %s\n", plural.Count(n, "parked extraction job"), o.store.where())
	return nil
}
