package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// sweepRun is a passing run with the given throughputs and recall p99.
func sweepRun(clients, wa, wr int, appends, recalls float64, recallP99 time.Duration) *LoadResult {
	n := int(appends * 10)
	return &LoadResult{
		Options: LoadOptions{Clients: clients, Duration: 10 * time.Second, AppendWeight: wa, RecallWeight: wr,
			Users: 4, SessionsPerUser: 4, MemoriesPerUser: 50, FactsPerUser: 100, Seed: 1},
		Elapsed: 10 * time.Second,
		Ops: []OpStats{
			{Op: OpAppend, Count: n, Throughput: appends, P50: time.Millisecond, P99: 5 * time.Millisecond},
			{Op: OpRecall, Count: int(recalls * 10), Throughput: recalls, P50: 2 * time.Millisecond, P99: recallP99},
		},
		Verification: Verification{Acknowledged: n, Verified: n, Stored: n},
		Reverified:   &Verification{Acknowledged: n, Verified: n, Stored: n},
		Note:         "server: test",
	}
}

// TestSweepTargets checks the targets against figures worked by hand.
func TestSweepTargets(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		s                      Sweep
		mix, recallP99, scaled float64 // NaN: not computable
		met                    [3]bool
	}{{
		// Harmonic 2 / (1/100 + 1/300) = 150; the mix makes 120 of it.
		name: "1:1",
		s: Sweep{
			AppendOnly: sweepRun(8, 1, 0, 100, 0, 0),
			RecallOnly: sweepRun(8, 0, 1, 0, 300, 9*time.Millisecond),
			Mix:        sweepRun(8, 1, 1, 60, 60, 15*time.Millisecond),
			AppendOne:  sweepRun(1, 1, 0, 25, 0, 0),
		},
		mix: 0.8, recallP99: 15, scaled: 4, met: [3]bool{false, true, true},
	}, {
		// The figures: 1232 / 1760 = 0.70, 1405 / 1073 = 1.31.
		name: "issue",
		s: Sweep{
			AppendOnly: sweepRun(8, 1, 0, 1405, 0, 0),
			RecallOnly: sweepRun(8, 0, 1, 0, 2356, 9600*time.Microsecond),
			Mix:        sweepRun(8, 1, 1, 616, 616, 22*time.Millisecond),
			AppendOne:  sweepRun(1, 1, 0, 1073, 0, 0),
		},
		mix: 1232 / (2 / (1/1405.0 + 1/2356.0)), recallP99: 22, scaled: 1405 / 1073.0,
	}, {
		// Weighted 3:1: 4 / (3/100 + 1/300) = 120; the mix makes 108 + 36.
		// Exactly at the limits: 0.9 of it is 108, 20 ms, 3×.
		name: "3:1 at the limits",
		s: Sweep{
			AppendOnly: sweepRun(8, 1, 0, 100, 0, 0),
			RecallOnly: sweepRun(8, 0, 1, 0, 300, 0),
			Mix:        sweepRun(8, 3, 1, 81, 27, 20*time.Millisecond),
			AppendOne:  sweepRun(1, 1, 0, 100.0/3, 0, 0),
		},
		mix: 0.9, recallP99: 20, scaled: 3, met: [3]bool{true, true, true},
	}, {
		name: "nothing to divide by",
		s: Sweep{
			AppendOnly: sweepRun(8, 1, 0, 100, 0, 0),
			RecallOnly: sweepRun(8, 0, 1, 0, 0, 0),
			Mix:        sweepRun(8, 1, 1, 60, 0, 0),
			AppendOne:  sweepRun(1, 1, 0, 0, 0, 0),
		},
		mix: math.NaN(), recallP99: math.NaN(), scaled: math.NaN(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.Targets()
			if len(got) != 3 {
				t.Fatalf("%d targets", len(got))
			}
			for i, want := range []float64{tc.mix, tc.recallP99, tc.scaled} {
				g := got[i]
				if math.IsNaN(want) != math.IsNaN(g.Value) || !math.IsNaN(want) && math.Abs(g.Value-want) > 1e-9 {
					t.Errorf("%s = %v, want %v", g.Name, g.Value, want)
				}
				if g.Met() != tc.met[i] {
					t.Errorf("%s = %v met %v, want %v", g.Name, g.Value, g.Met(), tc.met[i])
				}
			}
		})
	}
	if got := harmonicThroughput(100, 300, 1, 1); got != 150 {
		t.Errorf("harmonic 1:1 = %v", got)
	}
	if got := harmonicThroughput(100, 0, 1, 0); got != 100 {
		t.Errorf("harmonic 1:0 = %v", got)
	}
}

func TestSweepReports(t *testing.T) {
	s := &Sweep{
		AppendOnly: sweepRun(8, 1, 0, 100, 0, 0),
		RecallOnly: sweepRun(8, 0, 1, 0, 300, 9*time.Millisecond),
		Mix:        sweepRun(8, 1, 1, 60, 60, 15*time.Millisecond),
		AppendOne:  sweepRun(1, 1, 0, 25, 0, 0),
	}
	s.RecallOnly.Ops[0] = OpStats{Op: OpAppend}
	s.RecallOnly.Verification, s.RecallOnly.Reverified = Verification{}, &Verification{}
	var table bytes.Buffer
	if err := WriteSweepTable(&table, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| append only | 8 | 1:0 | 100.0 | 1ms | 5ms | – | – | – | 100.0 | – | 0 | 1000/1000, 1000/1000 |",
		"| recall only | 8 | 0:1 | – | – | – | 300.0 | 2ms | 9ms | 300.0 | – | 0 | 0/0, 0/0 |",
		"| mix | 8 | 1:1 | 60.0 | 1ms | 5ms | 60.0 | 2ms | 15ms | 120.0 | – | 0 | 600/600, 600/600 |",
		"| append only, 1 client | 1 | 1:0 |",
		"| mix throughput / harmonic combination of append only and recall only (1:1) | 0.80 | 120.0 / 150.0 ops/s | ≥ 0.9 | no |",
		"| recall p99 in the mix | 15.00 ms | 600 recalls | ≤ 20 ms | yes |",
		"| append only throughput, 8 clients / 1 client | 4.00 | 100.0 / 25.0 ops/s | ≥ 3 | yes |",
		"each run: a fresh store, 10s",
		"server: test",
		"errors: none; every acknowledged append read back",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := WriteSweepJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs []struct {
			Name    string `json:"name"`
			Clients int    `json:"clients"`
			Passed  bool   `json:"passed"`
		} `json:"runs"`
		Targets []struct {
			Name   string   `json:"name"`
			Value  *float64 `json:"value"`
			Limit  float64  `json:"limit"`
			AtMost bool     `json:"at_most"`
			Met    bool     `json:"met"`
		} `json:"targets"`
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Passed || len(got.Runs) != 4 || got.Runs[2].Name != "mix" || got.Runs[3].Clients != 1 || len(got.Targets) != 3 {
		t.Fatalf("JSON %s", js.String())
	}
	if tg := got.Targets[1]; tg.Value == nil || *tg.Value != 15 || tg.Limit != 20 || !tg.AtMost || !tg.Met {
		t.Errorf("recall p99 target %+v", tg)
	}

	// A run that failed fails the sweep, and the report says which.
	s.Mix.Reverified = &Verification{Acknowledged: 600, Verified: 599, Missing: 1, Examples: []string{"u/s/x missing"}}
	s.RecallOnly.Ops[1].Throughput = 0
	table.Reset()
	js.Reset()
	if err := WriteSweepTable(&table, s); err != nil || !strings.Contains(table.String(), "mix: 1 of 600 acknowledged appends not read back") ||
		!strings.Contains(table.String(), "| n/a | 120.0 / 0.0 ops/s | ≥ 0.9 | no |") {
		t.Errorf("table of a failed sweep: %v\n%s", err, table.String())
	}
	if err := s.Err(); err == nil || !strings.HasPrefix(err.Error(), "mix: ") {
		t.Errorf("Err = %v", err)
	}
	if err := WriteSweepJSON(&js, s); err != nil || !strings.Contains(js.String(), `"value": null`) || !strings.Contains(js.String(), `"passed": false`) {
		t.Errorf("JSON of a failed sweep: %v\n%s", err, js.String())
	}
}

func TestCurveReports(t *testing.T) {
	c := &ClientsCurve{
		Serial: FsyncRate{Writers: 1, Fsyncs: 10000, Elapsed: 2 * time.Second, PerSecond: 5000, P50: 200 * time.Microsecond, P99: time.Millisecond},
		Points: []CurvePoint{
			{Load: sweepRun(1, 1, 0, 400, 0, 0), Fsync: FsyncRate{Writers: 1, PerSecond: 4000, P50: 250 * time.Microsecond}},
			{Load: sweepRun(4, 1, 0, 1000, 0, 0), Fsync: FsyncRate{Writers: 4, PerSecond: 8000, P50: 500 * time.Microsecond}},
		},
	}
	var table bytes.Buffer
	if err := WriteCurveTable(&table, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1 | 400.0 | 1.00 | 1ms | 5ms | 0 | 4000/4000, 4000/4000 | 4000 | 250µs | 0.10 |",
		"| 4 | 1000.0 | 2.50 | 1ms | 5ms | 0 | 10000/10000, 10000/10000 | 8000 | 500µs | 0.12 |",
		"disk: one writer 5000 fsyncs/s (p50 200µs, p99 1ms, 10000 in 2s)",
		"each run: appends only, a fresh store, 10s",
		"errors: none",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := WriteCurveJSON(&js, c); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Serial struct {
			PerSecond float64 `json:"fsyncs_per_second"`
			P50MS     float64 `json:"p50_ms"`
		} `json:"serial_fsync"`
		Points []struct {
			Clients int `json:"clients"`
			Fsync   struct {
				Writers   int     `json:"writers"`
				PerSecond float64 `json:"fsyncs_per_second"`
			} `json:"fsync"`
			Run struct {
				Ops []struct {
					OpsPerSecond float64 `json:"ops_per_second"`
				} `json:"ops"`
			} `json:"run"`
		} `json:"points"`
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Passed || got.Serial.PerSecond != 5000 || got.Serial.P50MS != 0.2 || len(got.Points) != 2 ||
		got.Points[1].Clients != 4 || got.Points[1].Fsync.Writers != 4 || got.Points[1].Run.Ops[0].OpsPerSecond != 1000 {
		t.Errorf("JSON %s", js.String())
	}
	c.Points[1].Load.ErrorKinds = map[string]int{"append 500 internal": 2}
	c.Points[1].Load.Ops[0].Errors = 2
	if err := c.Err(); err == nil || !strings.HasPrefix(err.Error(), "4 clients: ") {
		t.Errorf("Err = %v", err)
	}
}

// TestSweepTurns: a sweep with a run of agent turns lists it and sets its
// CPU per turn beside its parts' alone: two appends and a recall.
func TestSweepTurns(t *testing.T) {
	s := &Sweep{
		AppendOnly: sweepRun(8, 1, 0, 100, 0, 0),
		RecallOnly: sweepRun(8, 0, 1, 0, 300, 9*time.Millisecond),
		Mix:        sweepRun(8, 1, 1, 60, 60, 15*time.Millisecond),
		AppendOne:  sweepRun(1, 1, 0, 25, 0, 0),
		Turns:      sweepRun(8, 0, 0, 0, 0, 0),
	}
	s.Turns.Options.TurnWeight = 1
	s.Turns.Ops = append(s.Turns.Ops, OpStats{Op: OpTurn, Count: 400, Throughput: 40, P50: 20 * time.Millisecond, P99: 60 * time.Millisecond})
	// CPU per request: 1 ms an append, 2 ms a recall, 5 ms a turn.
	s.AppendOnly.CPU = 1000 * time.Millisecond
	s.RecallOnly.CPU = 6000 * time.Millisecond
	s.Turns.CPU = 2000 * time.Millisecond
	turn, parts := s.TurnCost()
	if turn != 5*time.Millisecond || parts != 4*time.Millisecond {
		t.Fatalf("TurnCost = %v, %v; want 5ms against 2×1ms + 2ms", turn, parts)
	}
	var table bytes.Buffer
	if err := WriteSweepTable(&table, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| agent turns | 8 | turns | – | – | – | – | – | – | 40.0 | 5ms | 0 |",
		"agent turns (the user's message, a recall, the reply; 8 clients): 40.0 turns/s, p50 20ms, p99 60ms; CPU per turn 5ms against 4ms for its parts alone (2 appends + 1 recall), 1.25×",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if s.Turns = nil; len(s.Runs()) != 4 {
		t.Errorf("a sweep without turns has %d runs", len(s.Runs()))
	}
}
