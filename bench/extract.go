package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engramdb/engram/memory"
)

// ExtractTurn is one message of the conversation [RunExtract] works on,
// with the session it is appended to.
type ExtractTurn struct {
	User, Session string
	Message       memory.Message
}

// LocomoTurns returns the turns of LoCoMo samples as [RunExtract] takes
// them: one user per sample and one session per LoCoMo session, the first
// speaker's turns user messages and the second's assistant messages, named
// after the speaker, at the session's date (as [IngestLocomo] writes them).
func LocomoTurns(samples []LocomoSample) []ExtractTurn {
	var out []ExtractTurn
	for _, s := range samples {
		for _, sess := range s.Sessions {
			for i := range sess.Turns {
				if m, ok := s.message(&sess, i); ok {
					out = append(out, ExtractTurn{User: s.ID, Session: fmt.Sprintf("session_%d", sess.N), Message: m})
				}
			}
		}
	}
	return out
}

// SyntheticTurns returns a seeded conversation of n messages between users
// and a support assistant, in sessions of 20 messages: the first person
// states owners, employers, homes, preferences and dated events, the kind
// of sentence the offline extractor looks for, mixed with small talk and
// questions it should pass over.
func SyntheticTurns(n int, seed uint64) []ExtractTurn {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"Dana", "Priya", "Tomás", "Mei", "Kofi", "Lena", "Omar", "Sofia", "Jonas", "Aiko"}
	places := []string{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Lyon", "Austin", "Porto"}
	things := []string{"renewal owner", "account manager", "manager", "dentist", "landlord", "team lead"}
	orgs := []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"}
	days := []string{"Monday", "Tuesday", "Friday", "Saturday", "Sunday"}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	user := []func() string{
		func() string { return fmt.Sprintf("My %s is %s.", pick(things), pick(names)) },
		func() string { return fmt.Sprintf("I work at %s now.", pick(orgs)) },
		func() string { return fmt.Sprintf("I moved to %s last year.", pick(places)) },
		func() string { return "I prefer email over phone calls." },
		func() string { return fmt.Sprintf("Please don't call me before %d am.", 8+r.IntN(3)) },
		func() string {
			return fmt.Sprintf("Last %s I met %s at the %s office.", pick(days), pick(names), pick(places))
		},
		func() string { return fmt.Sprintf("Can you check account %d for me?", 1000+r.IntN(9000)) },
		func() string { return fmt.Sprintf("%s manages the %s project.", pick(names), pick(places)) },
		func() string { return "Thanks, that helps a lot." },
		func() string { return "What did we decide about the invoices?" },
	}
	assistant := []string{
		"Sure, I have noted that.",
		"Thanks, I will keep that in mind for next time.",
		"Account %d renews on the first of next month.",
		"Happy to help with anything else.",
	}
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	out := make([]ExtractTurn, 0, n)
	for i := range n {
		t := ExtractTurn{
			User:    fmt.Sprintf("user%02d", i/200),
			Session: fmt.Sprintf("s%04d", i/20),
			Message: memory.Message{Time: start.Add(time.Duration(i) * time.Minute)},
		}
		if i%2 == 0 {
			t.Message.Role, t.Message.Content = memory.RoleUser, user[r.IntN(len(user))]()
		} else {
			a := pick(assistant)
			if strings.Contains(a, "%d") {
				a = fmt.Sprintf(a, 1000+r.IntN(9000))
			}
			t.Message.Role, t.Message.Content = memory.RoleAssistant, a
		}
		out = append(out, t)
	}
	return out
}

// ExtractOptions configures [RunExtract].
type ExtractOptions struct {
	// Turns is the conversation; required.
	Turns []ExtractTurn
	// Extractor is measured alone in the throughput phase; nil means
	// [memory.RuleExtractor], the stores' default. The stores of the
	// other phases use their default extractor.
	Extractor memory.Extractor
	// Rounds of the latency phase (default 10); each appends AppendsPerRound
	// messages (default 100) to a store with extraction on, and as many to
	// one with it off, in alternating order.
	Rounds, AppendsPerRound int
	// Durability of the stores of the latency and pipeline phases.
	Durability memory.Durability
	// Dir holds the stores; "" means a temporary directory, removed after.
	Dir string
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Latency summarises a set of Append latencies.
type Latency struct {
	N             int           `json:"n"`
	P50, P95, P99 time.Duration `json:"-"`
	P50Micros     float64       `json:"p50_us"`
	P95Micros     float64       `json:"p95_us"`
	P99Micros     float64       `json:"p99_us"`
}

// ExtractReport is what [RunExtract] measured.
type ExtractReport struct {
	// Messages is how many messages the throughput phase extracted, on
	// one core (GOMAXPROCS 1), in ExtractSeconds, ExtractPerSecond a
	// second; Produced counts what the extractor returned.
	Messages         int     `json:"messages"`
	ExtractSeconds   float64 `json:"extract_seconds"`
	ExtractPerSecond float64 `json:"extract_per_second"`
	Produced         struct {
		Memories int `json:"memories"`
		Entities int `json:"entities"`
		Facts    int `json:"facts"`
	} `json:"produced"`
	// Async and Off are the Append latencies with ExtractAsync and with
	// ExtractOff, measured in the same rounds; P50Ratio is Async.P50 /
	// Off.P50.
	Async    Latency `json:"append_async"`
	Off      Latency `json:"append_off"`
	P50Ratio float64 `json:"p50_ratio"`
	// Durability of the latency and pipeline stores: "sync" or "async".
	Durability string `json:"durability"`
	// PipelineMessages were appended to a fresh store with ExtractAsync and
	// then flushed in PipelineSeconds: PipelinePerSecond end to end, on
	// every core.
	PipelineMessages  int     `json:"pipeline_messages"`
	PipelineSeconds   float64 `json:"pipeline_seconds"`
	PipelinePerSecond float64 `json:"pipeline_per_second"`
	GOMAXPROCS        int     `json:"gomaxprocs"`
}

// RunExtract measures memory formation in three phases:
//
//  1. throughput: the extractor alone over every turn, on one core
//     (runtime.GOMAXPROCS(1) for the phase), each message given the
//     previous messages of its session as the store gives them and an
//     empty Known (the store's Known reads are in phase 3);
//  2. Append latency with ExtractAsync against ExtractOff: two stores of
//     the same durability, open side by side, appended to in alternating
//     rounds (the order swapped every round) so that machine noise falls
//     on both alike; the async store's worker runs during the rounds, as
//     it would in a server;
//  3. the pipeline: every turn appended to a fresh ExtractAsync store,
//     then Flush: messages a second, end to end.
func RunExtract(ctx context.Context, opts ExtractOptions) (*ExtractReport, error) {
	if len(opts.Turns) == 0 {
		return nil, errors.New("bench: extract: no turns")
	}
	x := opts.Extractor
	if x == nil {
		x = memory.RuleExtractor{}
	}
	rounds := cmpOr(opts.Rounds, 10)
	per := cmpOr(opts.AppendsPerRound, 100)
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "engram-bench-extract-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}
	rep := &ExtractReport{GOMAXPROCS: runtime.GOMAXPROCS(0), Durability: "sync"}
	if opts.Durability == memory.Async {
		rep.Durability = "async"
	}

	progress("extract: %d messages through the extractor on one core", len(opts.Turns))
	if err := extractThroughput(ctx, x, opts.Turns, rep); err != nil {
		return nil, err
	}

	progress("extract: Append latency, %d rounds of %d appends, extraction async and off (durability %s)", rounds, per, rep.Durability)
	if err := appendLatency(ctx, dir, opts, rounds, per, rep); err != nil {
		return nil, err
	}

	progress("extract: the pipeline, %d appends then Flush", len(opts.Turns))
	st, err := memory.Open(dir+"/pipeline", &memory.Options{Durability: opts.Durability, SweepInterval: -1})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for _, t := range opts.Turns {
		if err := st.Session(extractScope(t)).Append(ctx, t.Message); err != nil {
			st.Close()
			return nil, err
		}
	}
	err = st.Flush(ctx)
	el := time.Since(start)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	rep.PipelineMessages = len(opts.Turns)
	rep.PipelineSeconds = el.Seconds()
	rep.PipelinePerSecond = float64(len(opts.Turns)) / el.Seconds()
	return rep, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func extractScope(t ExtractTurn) memory.Scope {
	return memory.Scope{Tenant: "bench", User: t.User, Session: t.Session}
}

// extractThroughput runs x over every turn on one core.
func extractThroughput(ctx context.Context, x memory.Extractor, turns []ExtractTurn, rep *ExtractReport) error {
	// The inputs are built before the clock starts: what is timed is the
	// extractor.
	ins := make([]memory.ExtractInput, len(turns))
	prev := map[string][]memory.Message{}
	for i, t := range turns {
		key := t.User + "\x00" + t.Session
		p := prev[key]
		m := t.Message
		m.ID = fmt.Sprintf("m%d", i)
		speaker := m.Name
		if speaker == "" && m.Role == memory.RoleUser {
			speaker = t.User
		}
		ins[i] = memory.ExtractInput{
			Scope: extractScope(t), Message: m, Speaker: speaker, User: t.User,
			Previous: slices.Clone(p), Known: noKnown{},
		}
		p = append(p, m)
		if len(p) > memory.ExtractContextMessages {
			p = p[1:]
		}
		prev[key] = p
	}
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	runtime.GC()
	start := time.Now()
	for i := range ins {
		out, err := x.Extract(ctx, &ins[i])
		if err != nil {
			return fmt.Errorf("bench: extract message %d: %w", i, err)
		}
		if out != nil {
			rep.Produced.Memories += len(out.Memories)
			rep.Produced.Entities += len(out.Entities)
			rep.Produced.Facts += len(out.Facts)
		}
	}
	el := time.Since(start)
	rep.Messages = len(ins)
	rep.ExtractSeconds = el.Seconds()
	rep.ExtractPerSecond = float64(len(ins)) / el.Seconds()
	return nil
}

// noKnown is an empty [memory.Known]: a user with nothing stored.
type noKnown struct{}

func (noKnown) Entities(string) []string { return nil }
func (noKnown) Facts(context.Context, []string, int) ([]memory.Fact, error) {
	return nil, nil
}
func (noKnown) Memories(context.Context, string, int) ([]memory.Memory, error) {
	return nil, nil
}

// appendLatency times Appends to two stores, extraction async and off, in
// interleaved rounds.
func appendLatency(ctx context.Context, dir string, opts ExtractOptions, rounds, per int, rep *ExtractReport) (err error) {
	open := func(name string, mode memory.ExtractionMode) (*memory.Store, error) {
		return memory.Open(dir+"/"+name, &memory.Options{Durability: opts.Durability, Extraction: mode, SweepInterval: -1})
	}
	async, err := open("async", memory.ExtractAsync)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, async.Close()) }()
	off, err := open("off", memory.ExtractOff)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, off.Close()) }()

	var tAsync, tOff []time.Duration
	next := 0
	run := func(st *memory.Store, lat *[]time.Duration, from int) error {
		for i := range per {
			t := opts.Turns[(from+i)%len(opts.Turns)]
			sess := st.Session(extractScope(t))
			start := time.Now()
			if err := sess.Append(ctx, t.Message); err != nil {
				return err
			}
			*lat = append(*lat, time.Since(start))
		}
		return nil
	}
	for r := range rounds {
		// Both stores get the same messages; who goes first alternates.
		first, second := async, off
		l1, l2 := &tAsync, &tOff
		if r%2 == 1 {
			first, second, l1, l2 = off, async, &tOff, &tAsync
		}
		if err := run(first, l1, next); err != nil {
			return err
		}
		if err := run(second, l2, next); err != nil {
			return err
		}
		next += per
	}
	if err := async.Flush(ctx); err != nil {
		return err
	}
	rep.Async, rep.Off = latency(tAsync), latency(tOff)
	if rep.Off.P50 > 0 {
		rep.P50Ratio = float64(rep.Async.P50) / float64(rep.Off.P50)
	}
	return nil
}

func latency(d []time.Duration) Latency {
	slices.Sort(d)
	q := func(p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	l := Latency{N: len(d), P50: q(0.50), P95: q(0.95), P99: q(0.99)}
	us := func(v time.Duration) float64 { return float64(v.Nanoseconds()) / 1e3 }
	l.P50Micros, l.P95Micros, l.P99Micros = us(l.P50), us(l.P95), us(l.P99)
	return l
}

// WriteExtractTable prints a report of [RunExtract].
func WriteExtractTable(w io.Writer, rep *ExtractReport) error {
	fmt.Fprintf(w, "Extraction alone, one core: %d messages in %.3f s = %.0f messages/s (%d memories, %d entities, %d facts)\n",
		rep.Messages, rep.ExtractSeconds, rep.ExtractPerSecond, rep.Produced.Memories, rep.Produced.Entities, rep.Produced.Facts)
	fmt.Fprintf(w, "\nAppend latency (durability %s, GOMAXPROCS %d, interleaved rounds):\n", rep.Durability, rep.GOMAXPROCS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "extraction\tappends\tp50\tp95\tp99\t")
	for _, r := range []struct {
		name string
		l    Latency
	}{{"async", rep.Async}, {"off", rep.Off}} {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t\n", r.name, r.l.N, r.l.P50.Round(100*time.Nanosecond),
			r.l.P95.Round(100*time.Nanosecond), r.l.P99.Round(100*time.Nanosecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "p50 async / off = %.3f\n", rep.P50Ratio)
	_, err := fmt.Fprintf(w, "\nPipeline (Append each, then Flush): %d messages in %.3f s = %.0f messages/s\n",
		rep.PipelineMessages, rep.PipelineSeconds, rep.PipelinePerSecond)
	return err
}
