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

// Stamped at link time by release builds (.goreleaser.yaml) from the tag:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)" ./cmd/engram
//
// Left empty, versionString falls back to what the Go toolchain recorded
// (the module version of go install module@version, the VCS revision of a
// build in a checkout), and to "devel" when there is none.
var (
	version string
	commit  string
)

// versionString reports the version, the commit and the Go version the
// binary was built with, on one line: "engram v1.2.3 (commit
// 0123456789ab) go1.26.8 linux/amd64". The version is "devel" only for a
// build that nothing stamped; the commit is left out when unknown.
func versionString() string {
	v, rev, dirty := buildVersion()
	v = releaseVersion()
	if commit != "" {
		rev, dirty = commit, ""
	}
	out := "engram " + v
	if rev != "" {
		out += fmt.Sprintf(" (commit %.12s%s)", rev, dirty)
	}
	return out + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// releaseVersion is the version alone: stamped at link time, else what the
// Go toolchain recorded, else "devel".
func releaseVersion() string {
	if version != "" {
		return version
	}
	v, _, _ := buildVersion()
	return v
}

// buildVersion returns what the Go toolchain recorded in the binary: the
// main module's version (or "devel"), the VCS revision, and "+dirty" when
// the checkout had uncommitted changes.
func buildVersion() (v, revision, dirty string) {
	v = "devel"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v, "", ""
	}
	if mv := info.Main.Version; mv != "" && mv != "(devel)" {
		v = mv
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
	return v, revision, dirty
}
