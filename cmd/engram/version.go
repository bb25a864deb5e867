package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/index/wordnet"
)

func newVersionCmd() *cobra.Command {
	var notices bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of engram and of Go it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if _, err := fmt.Fprintln(w, versionString()); err != nil || !notices {
				return err
			}
			_, err := fmt.Fprintf(w, "\nThis binary includes data under its own licence.\n\n%s", wordnet.Notice)
			return err
		},
	}
	cmd.Flags().BoolVar(&notices, "notices", false, "also print the licence notices of the data built into the binary (WordNet's)")
	return cmd
}

// versionString reports the module version (or "devel"), the VCS revision
// when the binary was built from a checkout, and the Go version.
func versionString() string {
	version, revision, dirty := "devel", "", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
	}
	out := "engram " + version
	if revision != "" {
		out += fmt.Sprintf(" (%.12s%s)", revision, dirty)
	}
	return out + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
