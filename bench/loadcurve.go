package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
)

// ClientsCurve is what engram bench load --clients-curve measured:
// append-only runs at several client counts, made back to back, each on a
// fresh store with the same seed and duration, and beside each the disk's
// fsync rate with as many writers, measured in the same directory. The
// runs are the caller's; a ClientsCurve only reads them.
type ClientsCurve struct {
	// Serial is [ProbeFsync] with one writer, before the first point: the
	// rate at which the disk completes synced commits that share no
	// fsync.
	Serial FsyncRate
	// Points are the runs in the order made.
	Points []CurvePoint
}

// CurvePoint is one client count of a [ClientsCurve].
type CurvePoint struct {
	// Load is the append-only run; its Options.Clients is the point's
	// client count.
	Load *LoadResult
	// Fsync is [ProbeFsync] with as many writers as the run has clients,
	// made just before the run in its store's directory.
	Fsync FsyncRate
}

// Err returns nil when every run passed (see [LoadResult.Err]), and
// otherwise the errors of the runs that did not, each naming its client
// count.
func (c *ClientsCurve) Err() error {
	var errs []error
	for _, p := range c.Points {
		if err := p.Load.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%d clients: %w", p.Load.Options.Clients, err))
		}
	}
	return errors.Join(errs...)
}

// runs names the points as a sweep's runs are named, for the reports.
func (c *ClientsCurve) runs() []SweepRun {
	var runs []SweepRun
	for _, p := range c.Points {
		runs = append(runs, SweepRun{Name: fmt.Sprintf("%d clients", p.Load.Options.Clients), Result: p.Load})
	}
	return runs
}

// WriteCurveTable writes c as a Markdown table, one row per client count:
// append-only throughput, its ratio to the first row's, p50 and p99; the
// fsync rate of as many writers on as many files and its p50; and appends
// per fsync (throughput over that rate). Then the serial fsync rate, the
// runs' shared conditions, and each run's errors and acknowledged appends
// not read back.
func WriteCurveTable(w io.Writer, c *ClientsCurve) error {
	var b strings.Builder
	b.WriteString("| clients | append ops/s | × first row | append p50 | append p99 | errors | read back | fsyncs/s, as many writers | fsync p50 | appends per fsync |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	var first float64
	for i, p := range c.Points {
		st := opStats(p.Load, OpAppend)
		if i == 0 {
			first = st.Throughput
		}
		fmt.Fprintf(&b, "| %d | %.1f | %s | %v | %v | %d | %s | %.0f | %v | %s |\n",
			p.Load.Options.Clients, st.Throughput, fixed2(ratio(st.Throughput, first)), roundDuration(st.P50), roundDuration(st.P99),
			p.Load.Errors(), readBack(p.Load), p.Fsync.PerSecond, roundDuration(p.Fsync.P50), fixed2(ratio(st.Throughput, p.Fsync.PerSecond)))
	}
	fmt.Fprintf(&b, "\ndisk: one writer %.0f fsyncs/s (p50 %v, p99 %v, %d in %v), each a 4 KiB write and an fsync, in the stores' directory\n",
		c.Serial.PerSecond, roundDuration(c.Serial.P50), roundDuration(c.Serial.P99), c.Serial.Fsyncs, roundDuration(c.Serial.Elapsed))
	if len(c.Points) > 0 {
		o := c.Points[0].Load.Options
		fmt.Fprintf(&b, "each run: appends only, a fresh store, %v, %d users × %d sessions, setup %d memories and %d facts per user, %d messages per session, seed %d; GOMAXPROCS %d\n",
			o.Duration, o.Users, o.SessionsPerUser, o.MemoriesPerUser, o.FactsPerUser, o.MessagesPerSession, o.Seed, runtime.GOMAXPROCS(0))
		if n := c.Points[0].Load.Note; n != "" {
			fmt.Fprintf(&b, "%s\n", n)
		}
	}
	b.WriteString("read back: verified/acknowledged appends after the run, then after a restart on the same store\n")
	writeRunProblems(&b, c.runs())
	_, err := io.WriteString(w, b.String())
	return err
}

// fixed2 formats v with two decimals, or "n/a" for NaN.
func fixed2(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// curveJSON is the JSON schema of a ClientsCurve.
type curveJSON struct {
	SerialFsync fsyncJSON   `json:"serial_fsync"`
	Points      []pointJSON `json:"points"`
	Passed      bool        `json:"passed"`
}

type pointJSON struct {
	Clients int       `json:"clients"`
	Fsync   fsyncJSON `json:"fsync"`
	Run     loadJSON  `json:"run"`
}

type fsyncJSON struct {
	Writers         int     `json:"writers"`
	Fsyncs          int     `json:"fsyncs"`
	ElapsedSeconds  float64 `json:"elapsed_seconds"`
	FsyncsPerSecond float64 `json:"fsyncs_per_second"`
	P50MS           float64 `json:"p50_ms"`
	P99MS           float64 `json:"p99_ms"`
}

func newFsyncJSON(f FsyncRate) fsyncJSON {
	return fsyncJSON{Writers: f.Writers, Fsyncs: f.Fsyncs, ElapsedSeconds: f.Elapsed.Seconds(), FsyncsPerSecond: f.PerSecond,
		P50MS: ms(f.P50), P99MS: ms(f.P99)}
}

// WriteCurveJSON writes c as an indented JSON object: "serial_fsync" (the
// one-writer probe), "points", each with its "clients", its "fsync" probe
// and its "run" as [WriteLoadJSON] writes it, and "passed", which is
// c.Err() == nil.
func WriteCurveJSON(w io.Writer, c *ClientsCurve) error {
	out := curveJSON{SerialFsync: newFsyncJSON(c.Serial), Points: []pointJSON{}, Passed: c.Err() == nil}
	for _, p := range c.Points {
		out.Points = append(out.Points, pointJSON{Clients: p.Load.Options.Clients, Fsync: newFsyncJSON(p.Fsync), Run: newLoadJSON(p.Load)})
	}
	return writeIndentedJSON(w, out)
}
