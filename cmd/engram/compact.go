package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

type compactOptions struct {
	store storeFlags
}

func newCompactCmd() *cobra.Command {
	var o compactOptions
	cmd := &cobra.Command{
		Use:   "compact --dir D",
		Short: "Take the bytes of erased and expired data out of a store's files now",
		Long: `compact finishes erasure at once: it flushes the store's memtables, compacts
its tables into one level and garbage-collects its value log, so that no file
of the store holds data that was forgotten, deleted or expired. A running
store does this by itself within its sweep interval (one minute by default)
of every erasure; engram compact is for a store that is not running, or to
be sure before a disk is handed on. A running server does the same on
POST /v1/admin/compact.

The store must not be open in another process (engram serve, engram mcp).`,
		Example: `  engram compact --dir ./data`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCompact(cmd, o)
		},
	}
	o.store.register(cmd, flagAbsent, flagAbsent, flagAbsent)
	return cmd
}

func runCompact(cmd *cobra.Command, o compactOptions) (err error) {
	st, err := o.store.openStore(existingStore)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	before := st.Stats()
	if err := st.Compact(cmd.Context()); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	after := st.Stats()
	fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: tables %s -> %s, value log %s -> %s\n", o.store.where(),
		bytesText(before.LSMBytes), bytesText(after.LSMBytes), bytesText(before.ValueLogBytes), bytesText(after.ValueLogBytes))
	return nil
}
