package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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

	sweep bool
	curve []int // --clients-curve

	// Set when the flags were given, which --clients-curve refuses.
	clientsSet, mixSet bool

	cpuProfile, blockProfile, mutexProfile string
}

// defaultFsyncProbe is how long each fsync probe of --clients-curve runs,
// unless --duration is shorter.
const defaultFsyncProbe = 2 * time.Second

func newBenchLoadCmd() *cobra.Command {
	var o benchLoadOptions
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Load engram serve on loopback: throughput, p50 and p99 of append and recall",
		Long: `load starts engram serve in this process on 127.0.0.1 (a real listener, a
store on disk, bearer authentication with a generated token, access logs
formatted and dropped), writes memories and facts for --users users and
--messages messages to each session (then waits for their extraction and
recalls each session once, so that recalls find a window, a summary and
episodes, as in the mix, whose appends fill the sessions), then runs
--clients clients for --duration: each sends an append of one message to a
random session, a recall for a random user and session, or an agent's turn
(the user's message, a recall, the reply, in one session, timed as one), in
the proportion of --mix, waits for the answer, and sends the next. After --duration no
request starts; those in flight finish and count.

It then reads every session back through the API and checks that each
append the server acknowledged is there with the content sent; restarts the
server on the same store and checks again. It prints, per operation, the
successful requests, errors, throughput and p50, p99 and maximum latency
(client side, from sending the request to reading the answer), and fails
when a request failed or an acknowledged append was not read back.

--sweep makes five such runs back to back, each on a fresh store with the
same seed and --duration: appends only, recalls only and the --mix (1:1 by
default) at --clients, appends only from one client, then agent turns only
at --clients. It prints one table of the runs and issue 15's targets, each
marked met or not: the mix's throughput over the harmonic combination of
the two alone (at least 0.9), recall p99 in the mix (at most 20 ms), and
append-only throughput at --clients over one client's (at least 3, at 8
clients); then the turns' p50 and p99 and their CPU per turn beside that of
their parts alone (two appends and a recall, from the first two runs).

--clients-curve 1,2,4,8 makes an append-only run at each client count, back
to back on fresh stores, and before each measures the disk in the same
directory: as many goroutines as clients, each writing 4 KiB to a file of
its own and fsyncing it, for 2s (or --duration if shorter). A one-writer
probe comes first. The table sets append throughput beside the fsync rate.

Every run of a sweep or curve verifies its appends as a single run does.
Clients and server share this machine's cores, so the numbers are a floor
for a server with cores of its own. The store goes in a temporary directory,
removed afterwards, unless --dir names one (a sweep or curve puts one store
per run in new subdirectories of it).

--cpuprofile, --blockprofile and --mutexprofile write pprof profiles of the
whole command, setup and verification included; the server runs in this
process, so they show its costs. The block and mutex profiles record every
event, which slows the run.`,
		Example: `  engram bench load
  engram bench load --clients 8 --duration 30s --json load.json
  engram bench load --clients 1 --duration 30s --mix append=1,recall=0
  engram bench load --sweep --json sweep.json
  engram bench load --clients-curve 1,2,4,8,16,32 --json curve.json
  engram bench load --mix append=1,recall=0 --cpuprofile cpu.pprof --blockprofile block.pprof`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.clientsSet, o.mixSet = cmd.Flags().Changed("clients"), cmd.Flags().Changed("mix")
			return runBenchLoad(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.load.Clients, "clients", 8, "concurrent clients, each one request at a time")
	f.DurationVar(&o.load.Duration, "duration", 10*time.Second, "how long clients start requests (in each run of a sweep or curve)")
	f.StringToIntVar(&o.mix, "mix", map[string]int{"append": 1, "recall": 1}, "relative weights of the operations: append=N,recall=N,turn=N (a turn: the user's message, a recall, the reply)")
	f.IntVar(&o.load.Users, "users", 4, "users the load spreads over")
	f.IntVar(&o.load.SessionsPerUser, "sessions", 4, "sessions per user; clients pick one at random for each request")
	f.IntVar(&o.load.MemoriesPerUser, "memories", 50, "memories written to each user before the timed phase")
	f.IntVar(&o.load.FactsPerUser, "facts", 100, "graph facts written to each user before the timed phase")
	f.IntVar(&o.load.MessagesPerSession, "messages", 200, "messages appended to each session before the timed phase (recalls then find a window, a summary and episodes; 0: empty sessions)")
	f.DurationVar(&o.load.RequestTimeout, "request-timeout", 30*time.Second, "bound on each request")
	f.Uint64Var(&o.load.Seed, "seed", 1, "seed of the operations, sessions and texts")
	f.StringVar(&o.dir, "dir", "", "store directory, kept afterwards (default: a temporary directory, removed)")
	f.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	f.StringVar(&o.durability, "durability", "sync", "the server's --durability: sync or async")
	f.BoolVar(&o.sweep, "sweep", false, "run appends only, recalls only and the mix at --clients, appends only at 1 client, and agent turns at --clients; report issue 15's targets and a turn's cost beside its parts")
	f.IntSliceVar(&o.curve, "clients-curve", nil, "run appends only at each of these client counts, beside the disk's fsync rate (e.g. 1,2,4,8,16,32)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the command, server included, to this file")
	f.StringVar(&o.blockProfile, "blockprofile", "", "write a goroutine blocking profile to this file")
	f.StringVar(&o.mutexProfile, "mutexprofile", "", "write a mutex contention profile to this file")
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
	if l.MessagesPerSession < 0 {
		errs = append(errs, fmt.Errorf("--messages %d is negative", l.MessagesPerSession))
	}
	return errors.Join(append(errs, o.runErrors()...)...)
}

// runErrors checks the choice of runs: the --mix, the durability, and
// --sweep and --clients-curve with what they may be given.
func (o *benchLoadOptions) runErrors() []error {
	var errs []error
	total := 0
	for k, v := range o.mix {
		switch {
		case k != "append" && k != "recall" && k != "turn":
			errs = append(errs, fmt.Errorf("--mix: unknown operation %q (append, recall or turn)", k))
		case v < 0:
			errs = append(errs, fmt.Errorf("--mix: %s=%d is negative", k, v))
		}
		total += max(v, 0)
	}
	if total == 0 {
		errs = append(errs, errors.New("--mix: give append, recall or turn a positive weight"))
	}
	if o.durability != "sync" && o.durability != "async" {
		errs = append(errs, fmt.Errorf("--durability %q is not sync or async", o.durability))
	}
	if o.sweep && (o.mix["append"] <= 0 || o.mix["recall"] <= 0 || o.mix["turn"] != 0) {
		errs = append(errs, errors.New("--sweep: the --mix must give both append and recall a positive weight, and no turn (the sweep makes a run of turns of its own)"))
	}
	if o.curve != nil {
		if o.sweep {
			errs = append(errs, errors.New("--sweep and --clients-curve are separate runs; give one"))
		}
		if o.clientsSet || o.mixSet {
			errs = append(errs, errors.New("--clients-curve sets the clients and sends appends only; drop --clients and --mix"))
		}
		if len(o.curve) == 0 {
			errs = append(errs, errors.New("--clients-curve: give at least one client count"))
		}
		for _, n := range o.curve {
			if n < 1 {
				errs = append(errs, fmt.Errorf("--clients-curve: %d clients must be at least 1", n))
			}
		}
	}
	return errs
}

// loadEnv is what the runs of one bench load share: the tokens, the
// server's options and its log filter.
type loadEnv struct {
	stderr io.Writer
	logs   *serverLogFilter
	serve  serveOptions // dir is set per run
	token  string
}

func runBenchLoad(ctx context.Context, stdout, stderr io.Writer, o benchLoadOptions) (err error) {
	if err := o.validate(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	o.load.AppendWeight, o.load.RecallWeight, o.load.TurnWeight = o.mix["append"], o.mix["recall"], o.mix["turn"]
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
	stopProfiles, err := startLoadProfiles(o)
	if err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	defer func() {
		if perr := stopProfiles(); perr != nil {
			err = errors.Join(err, fmt.Errorf("bench load: %w", perr))
		}
	}()
	env := &loadEnv{
		stderr: stderr,
		logs:   &serverLogFilter{w: stderr},
		serve: serveOptions{
			addr:            "127.0.0.1:0",
			tokens:          tokensPath,
			maxBodyBytes:    httpapi.DefaultMaxBodyBytes,
			shutdownTimeout: 30 * time.Second,
			metrics:         "public",
			logFormat:       "text",
			durability:      o.durability,
		},
		token: token,
	}
	o.load.Progress = stderr
	switch {
	case o.sweep:
		return runLoadSweep(ctx, stdout, env, o, dir)
	case o.curve != nil:
		return runLoadCurve(ctx, stdout, env, o, dir)
	}

	where := "a temporary directory"
	if o.dir != "" {
		where = o.dir
	}
	res, err := env.run(ctx, o.load, dir, where)
	if err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	if err := bench.WriteLoadTable(stdout, res); err != nil {
		return err
	}
	if err := writeLoadJSONFile(o.jsonPath, func(w io.Writer) error { return bench.WriteLoadJSON(w, res) }); err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	return nil
}

// run makes one run of the load on the store in dir: it starts the
// server, runs the load, stops the server, starts it again on the same
// store and verifies the acknowledged appends once more. where names the
// store in the result's note.
func (e *loadEnv) run(ctx context.Context, load bench.LoadOptions, dir, where string) (*bench.LoadResult, error) {
	so := e.serve
	so.dir = dir
	warnings := e.logs.count()
	srv, err := startLoadServer(ctx, e.stderr, e.logs, so)
	if err != nil {
		return nil, err
	}
	load.BaseURL, load.Token = "http://"+srv.addr, e.token
	res, runErr := bench.RunLoad(ctx, load)
	if err := srv.stop(); err != nil || runErr != nil {
		return nil, errors.Join(runErr, err)
	}

	fmt.Fprintln(e.stderr, "load: restarting the server on the same store to read back again")
	if srv, err = startLoadServer(ctx, e.stderr, e.logs, so); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	v, verr := bench.Verify(ctx, "http://"+srv.addr, e.token, res.Acks)
	if err := srv.stop(); err != nil || verr != nil {
		return nil, fmt.Errorf("after restart: %w", errors.Join(verr, err))
	}
	res.Reverified = &v
	res.Note = fmt.Sprintf("server: engram serve in this process on 127.0.0.1, --durability %s, store on disk in %s; clients share the machine's %d cores with it; server log: %d warnings or errors",
		so.durability, where, runtime.NumCPU(), e.logs.count()-warnings)
	return res, nil
}

// runDir returns the directory of a sweep's or curve's run named name
// under base, which must not exist yet (each run has a fresh store), and
// how the note names it.
func runDir(o benchLoadOptions, base, name string) (dir, where string, err error) {
	dir = filepath.Join(base, name)
	if _, err := os.Lstat(dir); err == nil {
		return "", "", fmt.Errorf("%s already exists; each run needs a fresh store", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if o.dir == "" {
		return dir, "a fresh temporary directory per run", nil
	}
	return dir, "a fresh directory per run under " + o.dir, nil
}

// runLoadSweep makes the runs of --sweep and reports them.
func runLoadSweep(ctx context.Context, stdout io.Writer, env *loadEnv, o benchLoadOptions, base string) error {
	var s bench.Sweep
	n := o.load.Clients
	runs := []struct {
		dir                 string
		clients, wa, wr, wt int
		res                 **bench.LoadResult
	}{
		{fmt.Sprintf("append-%d", n), n, 1, 0, 0, &s.AppendOnly},
		{fmt.Sprintf("recall-%d", n), n, 0, 1, 0, &s.RecallOnly},
		{fmt.Sprintf("mix-%d", n), n, o.load.AppendWeight, o.load.RecallWeight, 0, &s.Mix},
		{"append-1", 1, 1, 0, 0, &s.AppendOne},
		{fmt.Sprintf("turn-%d", n), n, 0, 0, 1, &s.Turns},
	}
	for i, r := range runs {
		dir, where, err := runDir(o, base, r.dir)
		if err != nil {
			return fmt.Errorf("bench load: --sweep: %w", err)
		}
		fmt.Fprintf(env.stderr, "load: sweep run %d of %d: %d clients, append:recall:turn %d:%d:%d\n", i+1, len(runs), r.clients, r.wa, r.wr, r.wt)
		load := o.load
		load.Clients, load.AppendWeight, load.RecallWeight, load.TurnWeight = r.clients, r.wa, r.wr, r.wt
		if *r.res, err = env.run(ctx, load, dir, where); err != nil {
			return fmt.Errorf("bench load: --sweep: %s: %w", r.dir, err)
		}
	}
	if err := bench.WriteSweepTable(stdout, &s); err != nil {
		return err
	}
	if err := writeLoadJSONFile(o.jsonPath, func(w io.Writer) error { return bench.WriteSweepJSON(w, &s) }); err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	return nil
}

// runLoadCurve makes the runs of --clients-curve, each after an fsync
// probe in its store's directory, and reports them.
func runLoadCurve(ctx context.Context, stdout io.Writer, env *loadEnv, o benchLoadOptions, base string) error {
	probe := min(defaultFsyncProbe, o.load.Duration)
	var c bench.ClientsCurve
	var err error
	fmt.Fprintf(env.stderr, "load: fsync probe, 1 writer for %v\n", probe)
	if c.Serial, err = bench.ProbeFsync(ctx, base, 1, probe); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	for i, n := range o.curve {
		dir, where, err := runDir(o, base, fmt.Sprintf("curve-%d", n))
		if err != nil {
			return fmt.Errorf("bench load: --clients-curve: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("bench load: %w", err)
		}
		fmt.Fprintf(env.stderr, "load: curve point %d of %d: fsync probe, %d writers for %v, then %d clients appending\n",
			i+1, len(o.curve), n, probe, n)
		p := bench.CurvePoint{}
		if p.Fsync, err = bench.ProbeFsync(ctx, dir, n, probe); err != nil {
			return fmt.Errorf("bench load: %w", err)
		}
		load := o.load
		load.Clients, load.AppendWeight, load.RecallWeight = n, 1, 0
		if p.Load, err = env.run(ctx, load, dir, where); err != nil {
			return fmt.Errorf("bench load: --clients-curve: %d clients: %w", n, err)
		}
		c.Points = append(c.Points, p)
	}
	if err := bench.WriteCurveTable(stdout, &c); err != nil {
		return err
	}
	if err := writeLoadJSONFile(o.jsonPath, func(w io.Writer) error { return bench.WriteCurveJSON(w, &c) }); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("bench load: %w", err)
	}
	return nil
}

// writeLoadJSONFile writes --json, if given, atomically.
func writeLoadJSONFile(path string, fill func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	if err := fileio.WriteAtomic(path, fill); err != nil {
		return fmt.Errorf("bench load: --json: %w", err)
	}
	return nil
}

// startLoadProfiles starts the profiles o asks for and returns the
// function that stops them and writes them out. The CPU profile streams
// to its file from the start; the block and mutex profiles record every
// event until stopped (as go test -blockprofile does) and are written
// then.
func startLoadProfiles(o benchLoadOptions) (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	if o.cpuProfile != "" {
		s, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
	}
	if o.blockProfile != "" {
		runtime.SetBlockProfileRate(1)
		stops = append(stops, func() error {
			defer runtime.SetBlockProfileRate(0)
			return writeProfile("block", o.blockProfile)
		})
	}
	if o.mutexProfile != "" {
		prev := runtime.SetMutexProfileFraction(1)
		stops = append(stops, func() error {
			defer runtime.SetMutexProfileFraction(prev)
			return writeProfile("mutex", o.mutexProfile)
		})
	}
	return stop, nil
}

// startCPUProfile starts a CPU profile streaming to path and returns the
// function that stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// writeProfile writes the named runtime profile to path.
func writeProfile(name, path string) error {
	if err := fileio.WriteAtomic(path, func(w io.Writer) error { return pprof.Lookup(name).WriteTo(w, 0) }); err != nil {
		return fmt.Errorf("--%sprofile: %w", name, err)
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
	// Admin, for the extraction backlog in GET /v1/admin/stats.
	data := fmt.Sprintf(`{"tokens": [{"token": %q, "tenant": "bench", "name": "bench-load", "admin": true}]}`, token)
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
