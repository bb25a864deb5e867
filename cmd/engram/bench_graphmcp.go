package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
)

// graphMCPFiles are the Node side of bench graph-mcp: the pinned packages
// (the reference server and the TypeScript SDK) and the driver script.
//
//go:embed testdata/graphmcp/package.json testdata/graphmcp/package-lock.json testdata/graphmcp/driver.mjs
var graphMCPFiles embed.FS

type benchGraphMCPOptions struct {
	entities, queries, batch int
	engram                   string // the engram binary to run as a server; "" is this one
}

func newBenchGraphMCPCmd() *cobra.Command {
	var o benchGraphMCPOptions
	cmd := &cobra.Command{
		Use:   "graph-mcp",
		Short: "Compare Engram's MCP graph tools with the reference memory server, side by side",
		Long: `graph-mcp runs "engram mcp" on a new store and the reference MCP memory server
(@modelcontextprotocol/server-memory 2026.8.31, from npm) side by side, both over
stdio and both driven by the TypeScript SDK (@modelcontextprotocol/sdk 1.32.2),
through a small Node script. It writes the same graph to each (--entities
entities "entity-N" with two observations each, and a chain of relations, in
create_entities and create_relations calls of --batch), then alternates
search_nodes calls (a query matching 5 entities) and open_nodes calls (5 names)
between the servers, and prints a markdown table: write rate, p50 and p99 of
each tool, and the p50 of an MCP ping (the round trip's floor: SDK, stdio and
JSON on both sides).

The packages are installed once with npm ci into a folder under the user's
cache directory. Without Node.js and npm, or when npm cannot reach the registry,
it prints why and does nothing.`,
		Example: `  engram bench graph-mcp --entities 20000
  engram bench graph-mcp --entities 2000 --queries 500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchGraphMCP(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.entities, "entities", 20000, "entities written to each server")
	f.IntVar(&o.queries, "queries", 200, "timed calls of each tool on each server")
	f.IntVar(&o.batch, "batch", 50, "entities or relations per write call")
	f.StringVar(&o.engram, "engram", "", "the engram binary to run as the server (default: this one)")
	return cmd
}

// graphMCPResult is the driver's output.
type graphMCPResult struct {
	Entities int `json:"entities"`
	Batch    int `json:"batch"`
	Queries  int `json:"queries"`
	Results  []struct {
		Name         string    `json:"name"`
		WriteSeconds float64   `json:"writeSeconds"`
		Relations    int       `json:"relations"`
		Search       []float64 `json:"search"`
		Open         []float64 `json:"open"`
		Ping         []float64 `json:"ping"`
	} `json:"results"`
}

// graphMCPServer is how the driver starts one server.
type graphMCPServer struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func runBenchGraphMCP(ctx context.Context, stdout, stderr io.Writer, o benchGraphMCPOptions) error {
	if o.entities < 5 || o.queries < 1 || o.batch < 1 {
		return fmt.Errorf("--entities must be at least 5, --queries and --batch at least 1")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(stdout, "skipped: %s is not installed (%v); bench graph-mcp needs Node.js 20 or later and npm\n", tool, err)
			return nil
		}
	}
	dir, skip, err := graphMCPModules(ctx, stderr)
	if err != nil || skip != "" {
		if skip != "" {
			fmt.Fprintln(stdout, skip)
		}
		return err
	}
	engram := o.engram
	if engram == "" {
		if engram, err = os.Executable(); err != nil {
			return fmt.Errorf("find the engram binary: %w", err)
		}
	}
	work, err := os.MkdirTemp("", "engram-bench-graph-mcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	cfg, err := json.Marshal(map[string]any{
		"entities": o.entities, "batch": o.batch, "queries": o.queries, "seed": 29,
		"servers": []graphMCPServer{
			{Name: "Engram", Command: engram, Args: []string{"mcp", "--dir", filepath.Join(work, "engram")}},
			{Name: "reference", Command: "node", Args: []string{filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")},
				Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(work, "memory.jsonl")}},
		},
	})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "driver.mjs"), string(cfg))
	cmd.Dir = dir
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("bench graph-mcp: the driver failed: %w", err)
	}
	var res graphMCPResult
	if err := json.Unmarshal(out, &res); err != nil || len(res.Results) != 2 {
		return fmt.Errorf("bench graph-mcp: the driver's output: %v: %s", err, out)
	}
	printGraphMCP(stdout, &res)
	return nil
}

// graphMCPModules installs the pinned packages with npm ci, once per lock
// file, into a folder under the user's cache directory, and returns it
// with the driver script in it. It returns a message saying why instead
// when npm cannot reach the registry.
func graphMCPModules(ctx context.Context, log io.Writer) (dir, skip string, err error) {
	h := sha256.New()
	files := []string{"package.json", "package-lock.json", "driver.mjs"}
	contents := map[string][]byte{}
	for _, f := range files {
		b, err := graphMCPFiles.ReadFile("testdata/graphmcp/" + f)
		if err != nil {
			return "", "", err
		}
		contents[f] = b
		h.Write(b)
	}
	cacheRoot, err := os.UserCacheDir()
	if err != nil {
		cacheRoot = os.TempDir()
	}
	dir = filepath.Join(cacheRoot, "engram", "bench-graph-mcp-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return dir, "", nil
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(vctx, "npm", "view", "@modelcontextprotocol/server-memory@2026.8.31", "version").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("skipped: npm cannot reach the registry within 30s (%v): %s", err, bytes.TrimSpace(out)), nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", err
	}
	// npm ci into a folder of this run's own, renamed into place when
	// complete, so that a failed or concurrent install leaves no
	// half-installed cache.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), contents[f], 0o644); err != nil {
			return "", "", err
		}
	}
	fmt.Fprintf(log, "installing the reference server and the TypeScript SDK with npm ci into %s\n", dir)
	install := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = tmp
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := install.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("npm ci: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			return "", "", fmt.Errorf("cache the packages: %w", err)
		}
	}
	return dir, "", nil
}

// percentile returns the p-th percentile (0-100) of ms, nearest rank.
func percentile(ms []float64, p float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func printGraphMCP(w io.Writer, res *graphMCPResult) {
	e, r := res.Results[0], res.Results[1]
	fmt.Fprintf(w, "%d entities with two observations each and %d relations, written in calls of %d; %d timed calls of each tool per server, alternating between the servers\n\n",
		res.Entities, e.Relations, res.Batch, res.Queries)
	fmt.Fprintf(w, "| | %s | %s | %s's advantage |\n|---|---:|---:|---:|\n", e.Name, r.Name, e.Name)
	we, wr := float64(res.Entities)/e.WriteSeconds, float64(res.Entities)/r.WriteSeconds
	fmt.Fprintf(w, "| writes (entities/s) | %.0f | %.0f | %.1f× |\n", we, wr, we/wr)
	for _, row := range []struct {
		name   string
		ea, ra []float64
		p      float64
	}{
		{"search_nodes p50 (ms)", e.Search, r.Search, 50},
		{"search_nodes p99 (ms)", e.Search, r.Search, 99},
		{"open_nodes p50 (ms)", e.Open, r.Open, 50},
		{"open_nodes p99 (ms)", e.Open, r.Open, 99},
		{"ping p50 (ms): the round trip's floor", e.Ping, r.Ping, 50},
	} {
		a, b := percentile(row.ea, row.p), percentile(row.ra, row.p)
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.1f× |\n", row.name, a, b, b/a)
	}
}
