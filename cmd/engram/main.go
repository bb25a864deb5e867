// Command engram is Engram's command line: a demo of the memory engine, an
// HTTP API (serve), an MCP server (mcp), import and export, recall,
// inspect, backup and restore, and the benchmarks.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	mcpserver.Version = releaseVersion() // serverInfo of engram mcp and serve's /mcp
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// errPrefix starts every error line main prints.
const errPrefix = "engram: "

// storePrefix starts the text of the sentinel errors of package engine,
// which package memory re-exports: those about the store as a whole
// ("engine: store is locked by another process").
const storePrefix = "engine: "

// errorLine returns the line main prints for a command's error: one
// "engram: " in front and no sentinel prefix inside. The library's
// sentinels carry "engine: " for programs that embed Engram; here the
// command wraps them with what it was doing, so printed as they are the
// line would read "engram: mcp: engine: store is locked". The sentinel
// prefix is dropped where it starts the text, a line of a joined error, or
// a wrapped part (after ": ").
func errorLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for _, p := range []string{errPrefix, storePrefix} {
			for strings.HasPrefix(l, p) {
				l = l[len(p):]
			}
			for strings.Contains(l, ": "+p) {
				l = strings.ReplaceAll(l, ": "+p, ": ")
			}
		}
		lines[i] = l
	}
	return errPrefix + strings.Join(lines, "\n")
}
