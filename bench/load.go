package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// defaultRequestTimeout bounds a request of the load or its verification.
const defaultRequestTimeout = 30 * time.Second

// LoadOptions configures [RunLoad]. BaseURL and Token are required; every
// other zero field means the documented default.
type LoadOptions struct {
	// BaseURL is the root of a running engram serve, such as
	// http://127.0.0.1:7437. Its host must be a loopback address or
	// localhost, and every connection is checked to reach a loopback
	// address (see [ErrNotLoopback]): the load is meant for a server on
	// the same machine, never for someone else's.
	BaseURL string
	// Token is a bearer token of the server's tokens file. Every request
	// uses it, so the whole load runs in that token's tenant.
	Token string

	// Clients is how many goroutines send requests at once, each waiting
	// for its answer before sending the next (a closed loop). Default 8.
	Clients int
	// Duration is how long clients start new requests; requests in flight
	// at the deadline finish and count. Default 10s.
	Duration time.Duration
	// AppendWeight, RecallWeight and TurnWeight are the relative
	// frequencies of the operations; all zero means appends and recalls
	// 1:1. An append sends one message to a random session; a recall asks
	// for a random user's context in a random session; a turn is an
	// agent's loop in one session: append the user's message, recall,
	// append the assistant's reply.
	AppendWeight, RecallWeight, TurnWeight int

	// Users is how many users the load spreads over (default 4), and
	// SessionsPerUser how many sessions each has (default 4). Clients
	// pick sessions at random, so two clients may append to one session
	// at once.
	Users, SessionsPerUser int
	// MemoriesPerUser and FactsPerUser are written to each user before
	// the timed phase, so that recalls have memories and a graph to
	// search: 50 memories and 100 facts (PowerLawFacts) by default.
	MemoriesPerUser, FactsPerUser int
	// MessagesPerSession are appended to each session before the timed
	// phase (user and assistant by turns, in requests of up to 50), their
	// extraction drained and each session recalled once: recalls then
	// find a window, a rolling summary and episodes to search, as in an
	// agent's session and as in the mix, whose appends fill the sessions.
	// Without them (zero, the default here; engram bench load writes 200)
	// a recalls-only run recalls empty sessions, which costs less than a
	// recall in the mix, so the mix compares badly with it. The appends
	// are verified with the timed phase's.
	MessagesPerSession int

	// RequestTimeout bounds each request (default 30s), so a stuck
	// server cannot keep the run from ending.
	RequestTimeout time.Duration
	// Seed makes the choice of operations, sessions and texts repeatable
	// (the server's timing still varies).
	Seed uint64
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// withDefaults returns o with the defaults filled in, or an error wrapping
// [ErrInvalidOptions] that names every bad field.
func (o LoadOptions) withDefaults() (LoadOptions, error) {
	var errs []error
	if o.BaseURL == "" {
		errs = append(errs, errors.New("BaseURL is required"))
	}
	if o.Token == "" {
		errs = append(errs, errors.New("Token is required"))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Clients", int64(o.Clients)}, {"Duration", int64(o.Duration)},
		{"AppendWeight", int64(o.AppendWeight)}, {"RecallWeight", int64(o.RecallWeight)}, {"TurnWeight", int64(o.TurnWeight)},
		{"Users", int64(o.Users)}, {"SessionsPerUser", int64(o.SessionsPerUser)},
		{"MemoriesPerUser", int64(o.MemoriesPerUser)}, {"FactsPerUser", int64(o.FactsPerUser)},
		{"MessagesPerSession", int64(o.MessagesPerSession)},
		{"RequestTimeout", int64(o.RequestTimeout)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative", f.name))
		}
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	o.Clients = orDefault(o.Clients, 8)
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.AppendWeight == 0 && o.RecallWeight == 0 && o.TurnWeight == 0 {
		o.AppendWeight, o.RecallWeight = 1, 1
	}
	o.Users = orDefault(o.Users, 4)
	o.SessionsPerUser = orDefault(o.SessionsPerUser, 4)
	o.MemoriesPerUser = orDefault(o.MemoriesPerUser, 50)
	o.FactsPerUser = orDefault(o.FactsPerUser, 100)
	if o.RequestTimeout == 0 {
		o.RequestTimeout = defaultRequestTimeout
	}
	return o, nil
}

// Op is an operation of the load.
type Op int

const (
	// OpAppend appends one message to a session: POST
	// /v1/users/{user}/sessions/{session}/messages.
	OpAppend Op = iota
	// OpRecall recalls the context of a user's session: POST /v1/recall.
	OpRecall
	// OpTurn is an agent's turn in one session: append the user's
	// message, recall, append the assistant's reply; three requests, one
	// after the other, timed as one.
	OpTurn

	numOps = iota
)

// String returns "append", "recall" or "turn".
func (op Op) String() string {
	switch op {
	case OpAppend:
		return "append"
	case OpRecall:
		return "recall"
	case OpTurn:
		return "turn"
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

// OpStats is what a load measured of one operation. Latency runs from
// sending the request to reading the last byte of the answer, on the
// client; percentiles are nearest-rank over the successful requests.
type OpStats struct {
	// Op is the operation measured.
	Op Op
	// Count is how many requests succeeded (a 2xx answer of the expected
	// shape), and Errors how many did not.
	Count, Errors int
	// Throughput is Count over the run's Elapsed time, per second.
	Throughput float64
	// P50, P99 and Max are latencies of the successful requests.
	P50, P99, Max time.Duration
}

// LoadResult is what [RunLoad] measured. Its Err method says whether the
// run passed.
type LoadResult struct {
	// Options are the options the run used, defaults filled in (the
	// token left out).
	Options LoadOptions
	// Setup is how long writing the users' memories and facts, and a
	// warm-up recall for each, took.
	Setup time.Duration
	// Elapsed is the wall time of the timed phase: Duration plus the
	// requests in flight at the deadline.
	Elapsed time.Duration
	// CPU is the CPU time (user and system) this process used in the
	// timed phase, zero where it cannot be read. With engram bench load
	// the server runs in this process, so it is the clients' and the
	// server's: on a machine shared with other work, CPU per request
	// varies less than throughput does.
	CPU time.Duration
	// Ops holds one entry per operation, in Op order.
	Ops []OpStats
	// ErrorKinds counts the failed requests by operation and kind, such
	// as "append 409 conflict" or "recall transport timeout", and
	// ErrorSamples holds the first message of each kind.
	ErrorKinds   map[string]int
	ErrorSamples map[string]string
	// Acks are the acknowledged appends: each message the server answered
	// with an id. The caller may check them again with [Verify], after a
	// restart for instance.
	Acks []Ack
	// Backlog is how many messages still waited for extraction when the
	// timed phase ended, and Drain how long the server then took to
	// extract them (POST /v1/admin/flush until it answers done); Backlog
	// is -1 when the server would not say (GET /v1/admin/stats needs an
	// admin token), and Drain zero when it would not flush.
	Backlog int
	Drain   time.Duration
	// Background is what the server's background work did in the timed
	// phase, one entry per kind, from its /metrics before and after
	// (engram_background_busy_seconds_total and _paused_); nil when the
	// server does not say.
	Background []BackgroundUse
	// Verification is RunLoad's [Verify] of Acks right after the timed
	// phase.
	Verification Verification
	// Reverified, when set, is a second Verify of Acks, which RunLoad
	// leaves nil; engram bench load sets it after restarting the server
	// on the same store.
	Reverified *Verification
	// Note, when set, is a line of free text the reports carry, such as
	// how the server ran; RunLoad leaves it empty.
	Note string
}

// CPUPerRequest returns CPU over the successful and failed requests of
// the timed phase; zero when either is unknown.
func (r *LoadResult) CPUPerRequest() time.Duration {
	n := 0
	for _, s := range r.Ops {
		n += s.Count + s.Errors
	}
	if n == 0 {
		return 0
	}
	return r.CPU / time.Duration(n)
}

// Errors returns the number of failed requests of every operation.
func (r *LoadResult) Errors() int {
	n := 0
	for _, s := range r.Ops {
		n += s.Errors
	}
	return n
}

// Err returns nil when the run passed: no request failed and every
// acknowledged append was read back (also by Reverified, when set).
// Otherwise it returns an error wrapping [ErrLoadFailed] that says what
// went wrong.
func (r *LoadResult) Err() error {
	var problems []string
	if n := r.Errors(); n > 0 {
		kinds := make([]string, 0, len(r.ErrorKinds))
		for k, c := range r.ErrorKinds {
			kinds = append(kinds, fmt.Sprintf("%d× %s", c, k))
		}
		slices.Sort(kinds)
		problems = append(problems, fmt.Sprintf("%d requests failed (%s)", n, strings.Join(kinds, ", ")))
	}
	for _, v := range []*Verification{&r.Verification, r.Reverified} {
		if v == nil {
			continue
		}
		if p := v.problem(); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrLoadFailed, strings.Join(problems, "; "))
}

// RunLoad drives the server at opts.BaseURL: it writes each user's
// memories and facts and recalls once for each (which warms the server
// up), then runs opts.Clients clients for opts.Duration, each sending
// appends and recalls in the proportion of the weights, one request at a
// time, and finally verifies that every acknowledged append can be read
// back through the API with the content sent. It stops by itself: no
// request starts after the deadline, and each is bounded by
// RequestTimeout.
//
// Failed requests are counted in the result, not returned: RunLoad
// returns an error only for bad options (wrapping [ErrInvalidOptions]),
// a non-loopback server ([ErrNotLoopback]), a failed setup or
// verification request, or ctx's end. Check [LoadResult.Err] for the
// verdict.
//
// The sessions' ids carry a tag of the run, so runs against one store
// never mix their messages.
func RunLoad(ctx context.Context, opts LoadOptions) (*LoadResult, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := newLoadClient(o.BaseURL, o.Token, o.Clients, o.RequestTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	res := &LoadResult{Options: o, ErrorKinds: map[string]int{}, ErrorSamples: map[string]string{}}
	res.Options.Token = ""
	res.Options.Progress = nil

	began := time.Now()
	users, sessions, acks, err := setUp(ctx, c, o, progress)
	if err != nil {
		return nil, fmt.Errorf("load setup: %w", err)
	}
	res.Acks = acks
	res.Setup = time.Since(began)
	progress("load: %d clients for %v, append:recall:turn %d:%d:%d, over %d sessions of %d users", o.Clients, o.Duration,
		o.AppendWeight, o.RecallWeight, o.TurnWeight, len(sessions), len(users))
	workers := make([]*loadWorker, o.Clients)
	for i := range workers {
		workers[i] = &loadWorker{
			id: i, c: c, opts: &o, sessions: sessions,
			rng:    rand.New(rand.NewPCG(o.Seed, uint64(i)+1)),
			errors: map[string]int{}, samples: map[string]string{},
		}
	}
	// Read before the deadline starts, so that the scrape does not eat
	// into the timed phase (TestRunLoad caught a phase 0.1 ms short).
	bgBefore := c.background(ctx)
	deadline, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	began = time.Now()
	cpu := processCPU()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, deadline)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(began)
	res.CPU = processCPU() - cpu
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Background = backgroundUse(bgBefore, c.background(ctx))

	var lat [numOps][]time.Duration
	errs := [numOps]int{}
	for _, w := range workers {
		for op := range lat {
			lat[op] = append(lat[op], w.latency[op]...)
			errs[op] += w.failed[op]
		}
		res.Acks = append(res.Acks, w.acks...)
		for k, n := range w.errors {
			if res.ErrorKinds[k] == 0 {
				res.ErrorSamples[k] = w.samples[k]
			}
			res.ErrorKinds[k] += n
		}
	}
	for op := range lat {
		if Op(op) == OpTurn && o.TurnWeight == 0 {
			continue // reported only by runs that make turns
		}
		d := lat[op]
		slices.Sort(d)
		s := OpStats{Op: Op(op), Count: len(d), Errors: errs[op],
			Throughput: float64(len(d)) / res.Elapsed.Seconds(),
			P50:        percentile(d, 50), P99: percentile(d, 99)}
		if len(d) > 0 {
			s.Max = d[len(d)-1]
		}
		res.Ops = append(res.Ops, s)
	}

	progress("load: waiting for the extraction backlog to drain")
	if res.Backlog, res.Drain, err = c.drain(ctx); err != nil {
		return nil, err
	}
	progress("load: reading back %d acknowledged appends", len(res.Acks))
	if res.Verification, err = c.verify(ctx, res.Acks); err != nil {
		return nil, err
	}
	return res, nil
}

// loadUser is a user of the load with the entities of its graph, which
// recall texts name.
type loadUser struct {
	id       string
	entities []string
}

type loadSession struct {
	user *loadUser
	id   string
}

// setUp writes the users' memories and facts, warms the server up with a
// recall per user, names the sessions of the run and seeds them (see
// LoadOptions.MessagesPerSession), returning the seeded appends' acks.
func setUp(ctx context.Context, c *loadClient, o LoadOptions, progress func(string, ...any)) ([]loadUser, []loadSession, []Ack, error) {
	progress("load: writing %d memories and %d facts for each of %d users", o.MemoriesPerUser, o.FactsPerUser, o.Users)
	users, err := seedUsers(ctx, c, o)
	if err != nil {
		return nil, nil, nil, err
	}
	// One recall per user before the clock starts: the server loads its
	// tokenizer on first use (about 0.5 s on a 2-core machine), which
	// would otherwise stall the first request of every client.
	for _, u := range users {
		if _, err := c.post(ctx, "/v1/recall", map[string]string{"user": u.id, "text": "warm up " + u.entities[0]}, 200); err != nil {
			return nil, nil, nil, fmt.Errorf("warm-up recall: %w", err)
		}
	}
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	var sessions []loadSession
	for u := range users {
		for s := range o.SessionsPerUser {
			sessions = append(sessions, loadSession{user: &users[u], id: "load-" + tag + "-" + strconv.Itoa(s)})
		}
	}
	if o.MessagesPerSession == 0 {
		return users, sessions, nil, nil
	}
	progress("load: writing %d messages to each of %d sessions", o.MessagesPerSession, len(sessions))
	acks, err := seedSessions(ctx, c, o, sessions)
	return users, sessions, acks, err
}

// seedUsers writes each user's memories and facts, o.Clients requests at a
// time.
func seedUsers(ctx context.Context, c *loadClient, o LoadOptions) ([]loadUser, error) {
	users := make([]loadUser, o.Users)
	type job struct {
		path string
		body any
	}
	var jobs []job
	for u := range users {
		id := "load-user-" + strconv.Itoa(u)
		userPath := "/v1/users/" + url.PathEscape(id)
		r := rand.New(rand.NewPCG(o.Seed, uint64(1000+u)))
		for range o.MemoriesPerUser {
			jobs = append(jobs, job{userPath + "/memories", map[string]any{
				"text": loadText(r, 6+r.IntN(10)), "importance": r.Float64(),
			}})
		}
		facts := PowerLawFacts(o.FactsPerUser, o.Seed+uint64(u))
		for _, f := range facts {
			jobs = append(jobs, job{userPath + "/facts", map[string]string{
				"subject": f.Subject, "predicate": f.Predicate, "object": f.Object,
			}})
		}
		users[u] = loadUser{id: id, entities: GraphSeeds(facts, 16, o.Seed+uint64(u))}
	}
	err := forEachParallel(ctx, len(jobs), o.Clients, func(ctx context.Context, i int) error {
		if _, err := c.post(ctx, jobs[i].path, jobs[i].body, 201); err != nil {
			return fmt.Errorf("POST %s: %w", jobs[i].path, err)
		}
		return nil
	})
	return users, err
}

// seedBatch bounds the messages of one setup append.
const seedBatch = 50

// seedSessions appends o.MessagesPerSession messages to each session,
// o.Clients requests at a time, waits for their extraction, then recalls
// each session once, so that its rolling summary is up to date when the
// clock starts. It returns the appends' acks.
func seedSessions(ctx context.Context, c *loadClient, o LoadOptions, sessions []loadSession) ([]Ack, error) {
	type batch struct {
		s        loadSession
		contents []string
	}
	var batches []batch
	for i, s := range sessions {
		r := rand.New(rand.NewPCG(o.Seed, uint64(2000+i)))
		for n := 0; n < o.MessagesPerSession; n += seedBatch {
			b := batch{s: s}
			for k := n; k < min(n+seedBatch, o.MessagesPerSession); k++ {
				b.contents = append(b.contents, fmt.Sprintf("seed-%d: %s", k, loadText(r, 8+r.IntN(24))))
			}
			batches = append(batches, b)
		}
	}
	acks := make([][]Ack, len(batches))
	err := forEachParallel(ctx, len(batches), o.Clients, func(ctx context.Context, i int) error {
		b := batches[i]
		msgs := make([]map[string]string, len(b.contents))
		for k, content := range b.contents {
			msgs[k] = map[string]string{"role": [2]string{"user", "assistant"}[k%2], "content": content}
		}
		body, err := c.post(ctx, sessionPath(b.s.user.id, b.s.id), map[string]any{"messages": msgs}, 201)
		if err != nil {
			return fmt.Errorf("append to %s: %w", b.s.id, err)
		}
		var resp struct {
			IDs []string `json:"ids"`
		}
		if err := decodeJSON(body, &resp); err != nil {
			return err
		}
		if len(resp.IDs) != len(b.contents) {
			return &shapeError{fmt.Sprintf("append answered %d ids for %d messages", len(resp.IDs), len(b.contents))}
		}
		for k, id := range resp.IDs {
			acks[i] = append(acks[i], Ack{User: b.s.user.id, Session: b.s.id, ID: id, Content: b.contents[k]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, _, err := c.drain(ctx); err != nil {
		return nil, err
	}
	for _, s := range sessions {
		if _, err := c.post(ctx, "/v1/recall", map[string]string{"user": s.user.id, "session": s.id, "text": "warm up " + s.user.entities[0]}, 200); err != nil {
			return nil, fmt.Errorf("warm-up recall of %s: %w", s.id, err)
		}
	}
	return slices.Concat(acks...), nil
}

// loadText returns n words of the synthetic vocabulary, one of them a
// number.
func loadText(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = recallVocab[r.IntN(len(recallVocab))]
	}
	w[r.IntN(n)] = strconv.Itoa(r.IntN(10000))
	return strings.Join(w, " ")
}

// loadWorker is one client of the load. Its fields are its own until
// RunLoad's WaitGroup says it finished.
type loadWorker struct {
	id       int
	c        *loadClient
	opts     *LoadOptions
	sessions []loadSession
	rng      *rand.Rand

	seq     int // appends sent, which make each message's content unique
	latency [numOps][]time.Duration
	failed  [numOps]int
	acks    []Ack
	errors  map[string]int
	samples map[string]string
}

// run sends requests until deadline is done. Requests run under ctx, not
// deadline, so the ones in flight at the deadline finish.
func (w *loadWorker) run(ctx, deadline context.Context) {
	for deadline.Err() == nil {
		op := w.pick()
		s := w.sessions[w.rng.IntN(len(w.sessions))]
		start := time.Now()
		var err error
		switch op {
		case OpAppend:
			err = w.append(ctx, s, "")
		case OpRecall:
			err = w.recall(ctx, s)
		case OpTurn:
			err = w.turn(ctx, s)
		}
		took := time.Since(start)
		if ctx.Err() != nil {
			return // the caller gave up; RunLoad reports ctx's error
		}
		if err != nil {
			w.failed[op]++
			kind := op.String() + " " + errorKind(err)
			if w.errors[kind] == 0 {
				w.samples[kind] = err.Error()
			}
			w.errors[kind]++
			continue
		}
		w.latency[op] = append(w.latency[op], took)
	}
}

// pick draws the next operation by the options' weights.
func (w *loadWorker) pick() Op {
	o := w.opts
	n := w.rng.IntN(o.AppendWeight + o.RecallWeight + o.TurnWeight)
	switch {
	case n < o.AppendWeight:
		return OpAppend
	case n < o.AppendWeight+o.RecallWeight:
		return OpRecall
	}
	return OpTurn
}

// turn is an agent's loop in session s: the user's message, a recall
// for it, the assistant's reply.
func (w *loadWorker) turn(ctx context.Context, s loadSession) error {
	if err := w.append(ctx, s, "user"); err != nil {
		return err
	}
	if err := w.recall(ctx, s); err != nil {
		return err
	}
	return w.append(ctx, s, "assistant")
}

// append sends one message to session s in role, or, with role empty,
// in user and assistant roles by turns.
func (w *loadWorker) append(ctx context.Context, s loadSession, role string) error {
	w.seq++
	if role == "" {
		role = "user"
		if w.seq%2 == 0 {
			role = "assistant"
		}
	}
	// The prefix makes every content unique, so a read-back that returns
	// another message's text under an id is caught.
	content := fmt.Sprintf("c%d-n%d: %s", w.id, w.seq, loadText(w.rng, 8+w.rng.IntN(24)))
	body, err := w.c.post(ctx, sessionPath(s.user.id, s.id), map[string]any{
		"messages": []map[string]string{{"role": role, "content": content}},
	}, 201)
	if err != nil {
		return err
	}
	var resp struct {
		IDs []string `json:"ids"`
	}
	if err := decodeJSON(body, &resp); err != nil {
		return err
	}
	if len(resp.IDs) != 1 || resp.IDs[0] == "" {
		return &shapeError{fmt.Sprintf("append answered %d ids for one message", len(resp.IDs))}
	}
	w.acks = append(w.acks, Ack{User: s.user.id, Session: s.id, ID: resp.IDs[0], Content: content})
	return nil
}

func (w *loadWorker) recall(ctx context.Context, s loadSession) error {
	text := fmt.Sprintf("What about the %s %s of %s?", recallVocab[w.rng.IntN(len(recallVocab))],
		recallVocab[w.rng.IntN(len(recallVocab))], s.user.entities[w.rng.IntN(len(s.user.entities))])
	body, err := w.c.post(ctx, "/v1/recall", map[string]string{"user": s.user.id, "session": s.id, "text": text}, 200)
	if err != nil {
		return err
	}
	var resp struct {
		Messages []struct{} `json:"messages"`
		Items    []struct{} `json:"items"`
	}
	if err := decodeJSON(body, &resp); err != nil {
		return err
	}
	if resp.Messages == nil || resp.Items == nil {
		return &shapeError{"recall answered without messages or items"}
	}
	return nil
}
