package bench

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"
)

// WriteLoadTable writes r as a Markdown table, one row per operation and
// one for both, followed by the run's conditions, the read-back counts and
// each kind of error with its first message.
func WriteLoadTable(w io.Writer, r *LoadResult) error {
	var b strings.Builder
	o := r.Options
	b.WriteString("| op | ok | errors | ops/s | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	var all OpStats
	for _, s := range r.Ops {
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %v | %v | %v |\n", s.Op, s.Count, s.Errors, s.Throughput,
			roundDuration(s.P50), roundDuration(s.P99), roundDuration(s.Max))
		all.Count += s.Count
		all.Errors += s.Errors
		all.Throughput += s.Throughput
	}
	fmt.Fprintf(&b, "| all | %d | %d | %.1f | | | |\n\n", all.Count, all.Errors, all.Throughput)
	fmt.Fprintf(&b, "clients %d for %v (elapsed %v), %s, %d users × %d sessions; setup %d memories and %d facts per user, %d messages per session, in %v; GOMAXPROCS %d\n",
		o.Clients, o.Duration, roundDuration(r.Elapsed), mixLabel(o), o.Users, o.SessionsPerUser,
		o.MemoriesPerUser, o.FactsPerUser, o.MessagesPerSession, roundDuration(r.Setup), runtime.GOMAXPROCS(0))
	if r.CPU > 0 {
		fmt.Fprintf(&b, "process CPU in the timed phase (clients and server): %v, %v per request\n", roundDuration(r.CPU), roundDuration(r.CPUPerRequest()))
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "%s\n", r.Note)
	}
	fmt.Fprintf(&b, "extraction backlog when the clients stopped: %s\n", backlogText(r))
	if t := backgroundText(r); t != "" {
		fmt.Fprintf(&b, "background work in the timed phase: %s\n", t)
	}
	writeVerification(&b, "read back after the run", &r.Verification)
	if r.Reverified != nil {
		writeVerification(&b, "read back after a restart", r.Reverified)
	}
	if len(r.ErrorKinds) == 0 {
		b.WriteString("errors: none\n")
	}
	for _, k := range slices.Sorted(maps.Keys(r.ErrorKinds)) {
		fmt.Fprintf(&b, "error: %d× %s, first: %s\n", r.ErrorKinds[k], k, r.ErrorSamples[k])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// backgroundText says how long each kind of background work worked and
// stood aside in r's timed phase, and the share of the phase it worked:
// "extract busy 820ms (8% of the run), paused 1.9s; ...". Empty when
// unknown.
func backgroundText(r *LoadResult) string {
	var parts []string
	for _, u := range r.Background {
		share := 0.0
		if r.Elapsed > 0 {
			share = 100 * u.Busy.Seconds() / r.Elapsed.Seconds()
		}
		parts = append(parts, fmt.Sprintf("%s busy %v (%.0f%% of the run), paused %v",
			u.Work, roundDuration(u.Busy), share, roundDuration(u.Paused)))
	}
	return strings.Join(parts, "; ")
}

// backlogText says how many messages waited for extraction at the end of
// r's timed phase and how long they took to drain.
func backlogText(r *LoadResult) string {
	n := "unknown (GET /v1/admin/stats refused)"
	if r.Backlog >= 0 {
		n = plural(r.Backlog, "message")
	}
	if r.Drain == 0 {
		return n + ", not flushed"
	}
	return n + ", drained in " + roundDuration(r.Drain).String()
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// mixLabel names a run's weights: "append:recall 1:1", with ":turn N"
// when it makes turns.
func mixLabel(o LoadOptions) string {
	if o.TurnWeight == 0 {
		return fmt.Sprintf("append:recall %d:%d", o.AppendWeight, o.RecallWeight)
	}
	return fmt.Sprintf("append:recall:turn %d:%d:%d", o.AppendWeight, o.RecallWeight, o.TurnWeight)
}

func writeVerification(b *strings.Builder, what string, v *Verification) {
	fmt.Fprintf(b, "%s: %d of %d acknowledged appends (missing %d, changed %d; the sessions hold %d)\n",
		what, v.Verified, v.Acknowledged, v.Missing, v.Changed, v.Stored)
	for _, e := range v.Examples {
		fmt.Fprintf(b, "  not read back: %s\n", e)
	}
}

// roundDuration keeps three or four significant digits.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// loadJSON is the JSON schema of a LoadResult: times in seconds or
// milliseconds, as their names say.
type loadJSON struct {
	Clients            int               `json:"clients"`
	DurationSeconds    float64           `json:"duration_seconds"`
	ElapsedSeconds     float64           `json:"elapsed_seconds"`
	CPUSeconds         float64           `json:"cpu_seconds"`
	AppendWeight       int               `json:"append_weight"`
	RecallWeight       int               `json:"recall_weight"`
	TurnWeight         int               `json:"turn_weight,omitempty"`
	Backlog            int               `json:"extraction_backlog"` // -1: unknown
	DrainSeconds       float64           `json:"extraction_drain_s"`
	Background         []backgroundJSON  `json:"background,omitempty"`
	Users              int               `json:"users"`
	SessionsPerUser    int               `json:"sessions_per_user"`
	MemoriesPerUser    int               `json:"memories_per_user"`
	FactsPerUser       int               `json:"facts_per_user"`
	MessagesPerSession int               `json:"messages_per_session"`
	Seed               uint64            `json:"seed"`
	SetupSeconds       float64           `json:"setup_seconds"`
	GOMAXPROCS         int               `json:"gomaxprocs"`
	Note               string            `json:"note,omitempty"`
	Ops                []opJSON          `json:"ops"`
	ErrorKinds         map[string]int    `json:"error_kinds"`
	ErrorSamples       map[string]string `json:"error_samples"`
	Verification       Verification      `json:"verification"`
	Reverified         *Verification     `json:"reverified,omitempty"`
	Passed             bool              `json:"passed"`
}

type backgroundJSON struct {
	Work          string  `json:"work"`
	BusySeconds   float64 `json:"busy_seconds"`
	PausedSeconds float64 `json:"paused_seconds"`
}

type opJSON struct {
	Op           string  `json:"op"`
	Count        int     `json:"count"`
	Errors       int     `json:"errors"`
	OpsPerSecond float64 `json:"ops_per_second"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	MaxMS        float64 `json:"max_ms"`
}

// WriteLoadJSON writes r as an indented JSON object: the run's options
// (without the token), one entry per operation with latencies in
// milliseconds, the errors, the verifications and "passed", which is
// r.Err() == nil. The acks are left out.
func WriteLoadJSON(w io.Writer, r *LoadResult) error {
	return writeIndentedJSON(w, newLoadJSON(r))
}

// newLoadJSON converts r to its JSON schema.
func newLoadJSON(r *LoadResult) loadJSON {
	o := r.Options
	out := loadJSON{
		Clients: o.Clients, DurationSeconds: o.Duration.Seconds(), ElapsedSeconds: r.Elapsed.Seconds(),
		CPUSeconds: r.CPU.Seconds(), AppendWeight: o.AppendWeight, RecallWeight: o.RecallWeight, TurnWeight: o.TurnWeight,
		Backlog: r.Backlog, DrainSeconds: r.Drain.Seconds(), Users: o.Users, SessionsPerUser: o.SessionsPerUser,
		MemoriesPerUser: o.MemoriesPerUser, FactsPerUser: o.FactsPerUser, MessagesPerSession: o.MessagesPerSession, Seed: o.Seed,
		SetupSeconds: r.Setup.Seconds(), GOMAXPROCS: runtime.GOMAXPROCS(0), Note: r.Note,
		Ops:        []opJSON{},
		ErrorKinds: r.ErrorKinds, ErrorSamples: r.ErrorSamples,
		Verification: r.Verification, Reverified: r.Reverified, Passed: r.Err() == nil,
	}
	if out.ErrorKinds == nil {
		out.ErrorKinds = map[string]int{}
	}
	if out.ErrorSamples == nil {
		out.ErrorSamples = map[string]string{}
	}
	for _, u := range r.Background {
		out.Background = append(out.Background, backgroundJSON{Work: u.Work, BusySeconds: u.Busy.Seconds(), PausedSeconds: u.Paused.Seconds()})
	}
	for _, s := range r.Ops {
		out.Ops = append(out.Ops, opJSON{Op: s.Op.String(), Count: s.Count, Errors: s.Errors, OpsPerSecond: s.Throughput,
			P50MS: ms(s.P50), P99MS: ms(s.P99), MaxMS: ms(s.Max)})
	}
	return out
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
