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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// errPrefix starts the text of the sentinel errors of packages engine and
// memory that are about the store as a whole ("engram: store is locked by
// another process").
const errPrefix = "engram: "

// errorLine returns the line main prints for a command's error: one
// "engram: " in front and none inside. The library's sentinels carry the
// prefix for programs that embed Engram; here the command wraps them with
// what it was doing, so printed as they are the prefix would repeat
// ("engram: mcp: engram: store is locked"). It is dropped where it starts
// the text, a line of a joined error, or a wrapped part (after ": ").
func errorLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for strings.HasPrefix(l, errPrefix) {
			l = l[len(errPrefix):]
		}
		for strings.Contains(l, ": "+errPrefix) {
			l = strings.ReplaceAll(l, ": "+errPrefix, ": ")
		}
		lines[i] = l
	}
	return errPrefix + strings.Join(lines, "\n")
}
