package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/memory"
)

// loadArgs run a short load: a second, two clients, a small setup.
var loadArgs = []string{"bench", "load", "--clients", "2", "--duration", "1s", "--users", "2", "--sessions", "2",
	"--memories", "3", "--facts", "10", "--messages", "4"}

// TestBenchLoad runs the load against the real server and store: no
// errors, every acknowledged append read back before and after a restart,
// the temporary store removed.
func TestBenchLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	out, err := runCLI(t, append(loadArgs, "--json", jsonPath)...)
	if err != nil {
		t.Fatalf("bench load: %v\n%s", err, out)
	}
	r := readLoadJSON(t, jsonPath)
	checkLoadPassed(t, r, out)
	for _, want := range []string{"| append | ", "| recall | ", "errors: none", "--durability sync",
		"read back after a restart: ", "load: restarting the server", "engram: stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 0 {
		t.Errorf("temporary files left: %v %v", entries, err)
	}
}

// TestBenchLoadDir keeps the store in --dir, and the store itself holds
// exactly the messages the run read back.
func TestBenchLoadDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	out, err := runCLI(t, append(loadArgs, "--dir", dir, "--json", jsonPath, "--mix", "append=3,recall=1", "--durability", "async")...)
	if err != nil {
		t.Fatalf("bench load: %v\n%s", err, out)
	}
	r := readLoadJSON(t, jsonPath)
	checkLoadPassed(t, r, out)
	if r.AppendWeight != 3 || r.RecallWeight != 1 || !strings.Contains(r.Note, "--durability async") || !strings.Contains(r.Note, dir) {
		t.Errorf("JSON %+v", r)
	}
	st, err := memory.Open(dir, &memory.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := 0
	for _, user := range []string{"load-user-0", "load-user-1"} {
		sessions, err := st.Sessions(context.Background(), memory.Scope{Tenant: "bench", User: user}, memory.SessionsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			stored += s.Messages
		}
	}
	if stored != r.Verification.Acknowledged {
		t.Errorf("the store holds %d messages; the run acknowledged %d", stored, r.Verification.Acknowledged)
	}
}

// TestBenchLoadVerifyRealServer: against the real API, Verify counts an
// acknowledged id the store does not hold and a message whose content
// differs, so a lost write cannot pass.
func TestBenchLoadVerifyRealServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	token, tokens, err := writeLoadTokens(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startLoadServer(context.Background(), io.Discard, io.Discard, serveOptions{
		dir: t.TempDir(), addr: "127.0.0.1:0", tokens: tokens, maxBodyBytes: 1 << 20,
		shutdownTimeout: 10 * time.Second, metrics: "public", logFormat: "text", durability: "sync",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + srv.addr
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("POST", base+"/v1/users/u/sessions/s/messages",
		strings.NewReader(`{"messages": [{"role": "user", "content": "kept"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ack struct{ IDs []string }
	err = json.NewDecoder(resp.Body).Decode(&ack)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 201 || len(ack.IDs) != 1 {
		t.Fatalf("append = %d %+v %v", resp.StatusCode, ack, err)
	}
	id := ack.IDs[0]

	good := []bench.Ack{{User: "u", Session: "s", ID: id, Content: "kept"}}
	if v, err := bench.Verify(context.Background(), base, token, good); err != nil || v.Err() != nil || v.Verified != 1 {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	bad := append(good,
		bench.Ack{User: "u", Session: "s", ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Content: "never written"},
		bench.Ack{User: "u", Session: "s", ID: id, Content: "other content"},
		bench.Ack{User: "u", Session: "nobody", ID: id, Content: "kept"},
	)
	v, err := bench.Verify(context.Background(), base, token, bad)
	if err != nil {
		t.Fatal(err)
	}
	if v.Acknowledged != 4 || v.Verified != 1 || v.Missing != 2 || v.Changed != 1 {
		t.Fatalf("Verify = %+v", v)
	}
	if err := v.Err(); !errors.Is(err, bench.ErrLoadFailed) || !strings.Contains(err.Error(), "01ARZ3NDEKTSV4RRFFQ69G5FAV missing") {
		t.Errorf("Err = %v", err)
	}
}

func TestBenchLoadBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no clients", []string{"--clients", "0"}, "--clients 0"},
		{"no duration", []string{"--duration", "0s"}, "--duration 0s"},
		{"no timeout", []string{"--request-timeout", "-1s"}, "--request-timeout -1s"},
		{"no users", []string{"--users", "0"}, "--users, --sessions"},
		{"unknown op", []string{"--mix", "append=1,forget=1"}, `unknown operation "forget"`},
		{"negative weight", []string{"--mix", "append=-1,recall=1"}, "append=-1 is negative"},
		{"zero weights", []string{"--mix", "append=0,recall=0"}, "positive weight"},
		{"durability", []string{"--durability", "never"}, `--durability "never"`},
		{"sweep without recalls", []string{"--sweep", "--mix", "append=1,recall=0"}, "--sweep: the --mix must give both"},
		{"sweep and curve", []string{"--sweep", "--clients-curve", "1,2"}, "give one"},
		{"curve with clients", []string{"--clients-curve", "1,2", "--clients", "4"}, "drop --clients and --mix"},
		{"curve of no clients", []string{"--clients-curve", "1,0"}, "--clients-curve: 0 clients"},
		{"argument", []string{"extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"bench", "load"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
}

// loadJSON is the part of bench load's --json the tests read.
type loadJSON struct {
	AppendWeight int    `json:"append_weight"`
	RecallWeight int    `json:"recall_weight"`
	TurnWeight   int    `json:"turn_weight"`
	Note         string `json:"note"`
	Passed       bool   `json:"passed"`
	// Seeded is how many messages the setup appended: sessions ×
	// --messages.
	Users              int `json:"users"`
	SessionsPerUser    int `json:"sessions_per_user"`
	MessagesPerSession int `json:"messages_per_session"`
	Ops                []struct {
		Op           string  `json:"op"`
		Count        int     `json:"count"`
		Errors       int     `json:"errors"`
		OpsPerSecond float64 `json:"ops_per_second"`
		P50MS        float64 `json:"p50_ms"`
		P99MS        float64 `json:"p99_ms"`
	} `json:"ops"`
	ErrorKinds   map[string]int      `json:"error_kinds"`
	Verification bench.Verification  `json:"verification"`
	Reverified   *bench.Verification `json:"reverified"`
}

// appends is how many appends the run should read back: its own and the
// setup's, which must be there (--messages).
func (r *loadJSON) appends(timed int) int {
	if r.MessagesPerSession == 0 || r.Users == 0 || r.SessionsPerUser == 0 {
		return -1 // the JSON must say how many were seeded
	}
	return timed + r.Users*r.SessionsPerUser*r.MessagesPerSession
}

func readLoadJSON(t *testing.T, path string) loadJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r loadJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// checkLoadPassed checks a run had both operations, no errors, and every
// acknowledged append read back twice.
func checkLoadPassed(t *testing.T, r loadJSON, out string) {
	t.Helper()
	if !r.Passed || len(r.ErrorKinds) != 0 || len(r.Ops) != 2 {
		t.Fatalf("run %+v\n%s", r, out)
	}
	for _, op := range r.Ops {
		if op.Count == 0 || op.Errors != 0 || op.OpsPerSecond <= 0 || op.P50MS <= 0 || op.P99MS < op.P50MS {
			t.Errorf("op %+v", op)
		}
	}
	v := r.Verification
	if r.Ops[0].Op != "append" || v.Acknowledged != r.appends(r.Ops[0].Count) || v.Verified != v.Acknowledged || v.Stored != v.Acknowledged {
		t.Errorf("verification %+v of %d appends", v, r.Ops[0].Count)
	}
	if rv := r.Reverified; rv == nil || rv.Acknowledged != v.Acknowledged || rv.Verified != v.Verified || rv.Stored != v.Stored {
		t.Errorf("after the restart %+v, before %+v", r.Reverified, v)
	}
}

// tinyLoadArgs are the smallest load that still exercises every path.
var tinyLoadArgs = []string{"--duration", "200ms", "--users", "2", "--sessions", "2", "--memories", "2", "--facts", "5", "--messages", "3"}

// TestBenchLoadSweep runs --sweep: four runs that each pass and read back
// their appends, one table, and targets computed from the runs.
func TestBenchLoadSweep(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("TMPDIR", t.TempDir())
	jsonPath := filepath.Join(t.TempDir(), "sweep.json")
	dir := filepath.Join(t.TempDir(), "stores")
	args := append([]string{"bench", "load", "--sweep", "--clients", "2", "--json", jsonPath, "--dir", dir}, tinyLoadArgs...)
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("bench load --sweep: %v\n%s", err, out)
	}
	for _, want := range []string{"| append only | 2 | 1:0 | ", "| recall only | 2 | 0:1 | ", "| mix | 2 | 1:1 | ",
		"| append only, 1 client | 1 | 1:0 | ", "| mix throughput / harmonic combination of append only and recall only (1:1) | ",
		"| recall p99 in the mix | ", "| append only throughput, 2 clients / 1 client | ", "≥ 0.9 |", "≤ 20 ms |", "≥ 3 |",
		"errors: none; every acknowledged append read back", "a fresh directory per run under " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, sub := range []string{"append-2", "recall-2", "mix-2", "append-1", "turn-2"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("store of %s: %v", sub, err)
		}
	}

	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Runs []struct {
			Name string `json:"name"`
			loadJSON
			Clients int `json:"clients"`
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
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Passed || len(r.Runs) != 5 || len(r.Targets) != 3 {
		t.Fatalf("JSON %s", b)
	}
	wantRuns := []struct {
		name             string
		clients, wa, wr  int
		appends, recalls bool
	}{{"append only", 2, 1, 0, true, false}, {"recall only", 2, 0, 1, false, true}, {"mix", 2, 1, 1, true, true}, {"append only, 1 client", 1, 1, 0, true, false}}
	for i, w := range wantRuns {
		run := r.Runs[i]
		if run.Name != w.name || run.Clients != w.clients || run.AppendWeight != w.wa || run.RecallWeight != w.wr || !run.Passed ||
			(run.Ops[0].Count > 0) != w.appends || (run.Ops[1].Count > 0) != w.recalls {
			t.Errorf("run %d: %+v, want %+v", i, run, w)
		}
		v := run.Verification
		if v.Acknowledged != run.appends(run.Ops[0].Count) || v.Verified != v.Acknowledged || run.Reverified == nil || run.Reverified.Verified != v.Acknowledged {
			t.Errorf("run %s read back %+v, then %+v, of %d appends", run.Name, v, run.Reverified, run.Ops[0].Count)
		}
	}
	// The last run makes agent turns only: two appends each, all read back.
	if turns := r.Runs[4]; turns.Name != "agent turns" || turns.TurnWeight != 1 || len(turns.Ops) != 3 || turns.Ops[2].Count == 0 ||
		turns.Verification.Acknowledged != turns.appends(2*turns.Ops[2].Count) || turns.Verification.Verified != turns.Verification.Acknowledged {
		t.Errorf("turns run %+v", turns)
	}
	if !strings.Contains(out, "| agent turns | 2 | turns | ") || !strings.Contains(out, "CPU per turn ") || !strings.Contains(out, "extraction backlog when the clients stopped: append only ") {
		t.Errorf("output lacks the turns run, its cost or the backlog:\n%s", out)
	}
	// The targets come from the runs: recompute them from the JSON.
	a, rc, mix, one := r.Runs[0].Ops[0].OpsPerSecond, r.Runs[1].Ops[1].OpsPerSecond, r.Runs[2], r.Runs[3].Ops[0].OpsPerSecond
	for i, want := range []float64{
		(mix.Ops[0].OpsPerSecond + mix.Ops[1].OpsPerSecond) / (2 / (1/a + 1/rc)),
		mix.Ops[1].P99MS,
		a / one,
	} {
		tg := r.Targets[i]
		if tg.Value == nil || math.Abs(*tg.Value-want) > 1e-9*want {
			t.Errorf("target %s = %v, want %v", tg.Name, tg.Value, want)
			continue
		}
		met := *tg.Value >= tg.Limit
		if tg.AtMost {
			met = *tg.Value <= tg.Limit
		}
		if tg.Met != met {
			t.Errorf("target %+v: met is wrong", tg)
		}
	}
	if tg := r.Targets[1]; tg.Limit != 20 || !tg.AtMost || r.Targets[0].Limit != 0.9 || r.Targets[2].Limit != 3 {
		t.Errorf("targets %+v", r.Targets)
	}

	// A second sweep into the same --dir refuses to reuse the stores.
	if out, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second sweep: %v\n%s", err, out)
	}
}

// TestBenchLoadCurve runs --clients-curve with the profiles: a row and a
// fsync probe per client count, every run read back, and profiles that
// pprof can read.
func TestBenchLoadCurve(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := t.TempDir()
	jsonPath := filepath.Join(out, "curve.json")
	profiles := map[string]string{}
	args := append([]string{"bench", "load", "--clients-curve", "1,3", "--json", jsonPath}, tinyLoadArgs...)
	for _, p := range []string{"cpu", "block", "mutex"} {
		profiles[p] = filepath.Join(out, p+".pprof")
		args = append(args, "--"+p+"profile", profiles[p])
	}
	text, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("bench load --clients-curve: %v\n%s", err, text)
	}
	for _, want := range []string{"| clients | append ops/s | × first row |", "\n| 1 | ", " | 1.00 | ", "\n| 3 | ",
		"disk: one writer ", "each run: appends only, a fresh store, 200ms", "errors: none; every acknowledged append read back"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Serial struct {
			Writers   int     `json:"writers"`
			Fsyncs    int     `json:"fsyncs"`
			PerSecond float64 `json:"fsyncs_per_second"`
		} `json:"serial_fsync"`
		Points []struct {
			Clients int `json:"clients"`
			Fsync   struct {
				Writers   int     `json:"writers"`
				PerSecond float64 `json:"fsyncs_per_second"`
				P50MS     float64 `json:"p50_ms"`
			} `json:"fsync"`
			Run loadJSON `json:"run"`
		} `json:"points"`
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Passed || r.Serial.Writers != 1 || r.Serial.Fsyncs == 0 || r.Serial.PerSecond <= 0 || len(r.Points) != 2 {
		t.Fatalf("JSON %s", b)
	}
	for i, clients := range []int{1, 3} {
		p := r.Points[i]
		if p.Clients != clients || p.Fsync.Writers != clients || p.Fsync.PerSecond <= 0 || p.Fsync.P50MS <= 0 {
			t.Errorf("point %d: %+v", i, p)
		}
		run := p.Run
		v := run.Verification
		if !run.Passed || run.AppendWeight != 1 || run.RecallWeight != 0 || run.Ops[0].Count == 0 || run.Ops[1].Count != 0 ||
			v.Verified != run.appends(run.Ops[0].Count) || run.Reverified == nil || run.Reverified.Verified != v.Verified {
			t.Errorf("point %d run %+v", i, run)
		}
	}
	for name, path := range profiles {
		// A pprof file is gzip-compressed protobuf.
		if b, err := os.ReadFile(path); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s profile: %d bytes, %v", name, len(b), err)
		}
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 0 {
		t.Errorf("temporary files left: %v %v", entries, err)
	}
}
