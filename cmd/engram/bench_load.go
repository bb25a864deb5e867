package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
)

type benchLoadOptions struct {
	load       bench.LoadOptions // BaseURL and Token are set by runBenchLoad
	mix        map[string]int
	dir        string
	jsonPath   string
	durability string
}

func newBenchLoadCmd() *cobra.Command {
	var o benchLoadOptions
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Load engram serve on loopback: throughput, p50 and p99 of append and recall",
		Long: `load starts engram serve in this process on 127.0.0.1 (a real listener, a
store on disk, bearer authentication with a generated token, access logs
formatted and dropped), writes memories and facts for --users users, then runs
--clients clients for --duration: each sends an append of one message to a
random session or a recall for a random user and session (in the proportion
of --mix), waits for the answer, and sends the next. After --duration no
request starts; those in flight finish and count.

It then reads every session back through the API and checks that each
append the server acknowledged is there with the content sent; restarts the
server on the same store and checks again. It prints, per operation, the
successful requests, errors, throughput and p50, p99 and maximum latency
(client side, from sending the request to reading the answer), and fails
when a request failed or an acknowledged append was not read back.

Clients and server share this machine's cores, so the numbers are a floor
for a server with cores of its own. The store goes in a temporary directory,
removed afterwards, unless --dir names one.`,
		Example: `  engram bench load
  engram bench load --clients 8 --duration 30s --json load.json
  engram bench load --clients 1 --duration 30s --mix append=1,recall=0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchLoad(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.load.Clients, "clients", 8, "concurrent clients, each one request at a time")
	f.DurationVar(&o.load.Duration, "duration", 10*time.Second, "how long clients start requests")
	f.StringToIntVar(&o.mix, "mix", map[string]int{"append": 1, "recall": 1}, "relative weights of the operations: append=N,recall=N")
	f.IntVar(&o.load.Users, "users", 4, "users the load spreads over")
	f.IntVar(&o.load.SessionsPerUser, "sessions", 4, "sessions per user; clients pick one at random for each request")
	f.IntVar(&o.load.MemoriesPerUser, "memories", 50, "memories written to each user before the timed phase")
	f.IntVar(&o.load.FactsPerUser, "facts", 100, "graph facts written to each user before the timed phase")
	f.DurationVar(&o.load.RequestTimeout, "request-timeout", 30*time.Second, "bound on each request")
	f.Uint64Var(&o.load.Seed, "seed", 1, "seed of the operations, sessions and texts")
	f.StringVar(&o.dir, "dir", "", "store directory, kept afterwards (default: a temporary directory, removed)")
	f.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	f.StringVar(&o.durability, "durability", "sync", "the server's --durability: sync or async")
	return cmd
}

func (o *benchLoadOptions) validate() error {
	var errs []error
	l := o.load
	if l.Clients < 1 {
		errs = append(errs, fmt.Errorf("--clients %d must be at least 1", l.Clients))
	}
	if l.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %s must be positive", l.Duration))
	}
	if l.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", l.RequestTimeout))
	}
	if l.Users < 1 || l.SessionsPerUser < 1 || l.MemoriesPerUser < 1 || l.FactsPerUser < 1 {
		errs = append(errs, errors.New("--users, --sessions, --memories and --facts must be at least 1"))
	}
	total := 0
	for k, v := range o.mix {
		switch {
		case k != "append" && k != "recall":
			errs = append(errs, fmt.Errorf("--mix: unknown operation %q (append or recall)", k))
		case v < 0:
			errs = append(errs, fmt.Errorf("--mix: %s=%d is negative", k, v))
		}
		total += max(v, 0)
	}
	if total == 0 {
		errs = append(errs, errors.New("--mix: give append or recall a positive weight"))
	}
	if o.durability != "sync" && o.durability != "async" {
		errs = append(errs, fmt.Errorf("--durability %q is not sync or async", o.durability))
	}
	return errors.Join(errs...)
}

func runBenchLoad(ctx context.Context, stdout, stderr io.Writer, o benchLoadOptions) (err error) {
	if err := o.validate(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	o.load.AppendWeight, o.load.RecallWeight = o.mix["append"], o.mix["recall"]
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "engram-bench-load-*"); err != nil {
			return fmt.Errorf("bench load: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	// The tokens file goes apart from the store, so --dir holds only the
	// store.
	secrets, err := os.MkdirTemp("", "engram-bench-load-tokens-*")
	if err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	defer os.RemoveAll(secrets)
	token, tokensPath, err := writeLoadTokens(secrets)
	if err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	logs := &serverLogFilter{w: stderr}
	so := serveOptions{
		dir:             dir,
		addr:            "127.0.0.1:0",
		tokens:          tokensPath,
		maxBodyBytes:    httpapi.DefaultMaxBodyBytes,
		shutdownTimeout: 30 * time.Second,
		metrics:         "public",
		logFormat:       "text",
		durability:      o.durability,
	}

	srv, err := startLoadServer(ctx, stderr, logs, so)
	if err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	o.load.BaseURL, o.load.Token = "http://"+srv.addr, token
	o.load.Progress = stderr
	res, runErr := bench.RunLoad(ctx, o.load)
	if err := srv.stop(); err != nil || runErr != nil {
		return fmt.Errorf("bench load: %w", errors.Join(runErr, err))
	}

	fmt.Fprintln(stderr, "load: restarting the server on the same store to read back again")
	if srv, err = startLoadServer(ctx, stderr, logs, so); err != nil {
		return fmt.Errorf("bench load: restart: %w", err)
	}
	v, verr := bench.Verify(ctx, "http://"+srv.addr, token, res.Acks)
	if err := srv.stop(); err != nil || verr != nil {
		return fmt.Errorf("bench load: after restart: %w", errors.Join(verr, err))
	}
	res.Reverified = &v

	where := "a temporary directory"
	if o.dir != "" {
		where = o.dir
	}
	res.Note = fmt.Sprintf("server: engram serve in this process on 127.0.0.1, --durability %s, store on disk in %s; clients share the machine's %d cores with it; server log: %d warnings or errors",
		o.durability, where, runtime.NumCPU(), logs.count())
	if err := bench.WriteLoadTable(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := fileio.WriteAtomic(o.jsonPath, func(w io.Writer) error { return bench.WriteLoadJSON(w, res) }); err != nil {
			return fmt.Errorf("bench load: --json: %w", err)
		}
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	return nil
}

// writeLoadTokens writes a tokens file with one new random token for
// tenant "bench" in dir, mode 0600 as serve requires.
func writeLoadTokens(dir string) (token, path string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	path = filepath.Join(dir, "tokens.json")
	data := fmt.Sprintf(`{"tokens": [{"token": %q, "tenant": "bench", "name": "bench-load"}]}`, token)
	return token, path, os.WriteFile(path, []byte(data), 0o600)
}

// loadServer is engram serve running in this process.
type loadServer struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// startLoadServer runs serve with o until stop, and returns once it
// accepts connections. Its own lines ("serving ...") go to out, its logs
// to logs.
func startLoadServer(ctx context.Context, out, logs io.Writer, o serveOptions) (*loadServer, error) {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan net.Addr, 1)
	o.ready = func(a net.Addr) { ready <- a }
	s := &loadServer{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- runServe(ctx, out, logs, o) }()
	select {
	case a := <-ready:
		s.addr = a.String()
		return s, nil
	case err := <-s.done:
		cancel()
		if err == nil {
			err = errors.New("serve stopped before it was ready")
		}
		return nil, err
	}
}

// stop shuts the server down gracefully and returns serve's error.
func (s *loadServer) stop() error {
	s.cancel()
	return <-s.done
}

// serverLogFilter passes the warnings and errors of serve's text logs to
// w and drops the rest (the access log's line per request). slog hands
// each record to one Write; the store's and the server's loggers are
// separate handlers, hence the lock.
type serverLogFilter struct {
	mu struct {
		sync.Mutex
		n int
	}
	w io.Writer
}

func (f *serverLogFilter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("level=WARN")) && !bytes.Contains(p, []byte("level=ERROR")) {
		return len(p), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.n++
	if _, err := f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *serverLogFilter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.n
}
