package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeAPI is the part of engram serve's API the load uses, over maps, with
// faults to inject. Its listings page as the real one does: next is the
// last id of a full page.
type fakeAPI struct {
	token string
	// dropEvery acknowledges every nth append without storing it;
	// changeEvery stores every nth with other content; failRecallEvery
	// answers every nth recall 500; hangRecalls never answers a recall.
	dropEvery, changeEvery, failRecallEvery int
	hangRecalls                             bool
	// backlog, when positive, is the extraction queue GET
	// /v1/admin/stats reports, and busyFlushes how many flushes answer
	// 503 extraction_pending before one answers 204; with backlog zero
	// neither route exists.
	backlog, busyFlushes int
	flushes              int
	// metrics, when set, serves GET /metrics: each scrape adds 0.5 s of
	// extraction work and 2 s of pauses to the counters.
	metrics bool
	scrapes int

	mu       sync.Mutex
	seq      int
	recalls  int
	memories map[string]int
	facts    map[string]int
	messages map[string][]fakeMessage // by user/session, in id order
	roles    []string                 // of every append, in arrival order
	warmed   map[string]int           // user/session → messages held when warmed up
}

type fakeMessage struct{ ID, Content string }

const fakeToken = "fake-token-0123456789"

func newFakeAPI() *fakeAPI {
	return &fakeAPI{token: fakeToken, memories: map[string]int{}, facts: map[string]int{}, messages: map[string][]fakeMessage{}, warmed: map[string]int{}}
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/admin/stats", func(w http.ResponseWriter, r *http.Request) {
		if f.backlog == 0 {
			http.NotFound(w, r)
			return
		}
		fakeJSON(w, 200, map[string]any{"extraction": map[string]int{"pending": f.backlog - 1, "retrying": 1}})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.metrics {
			http.NotFound(w, r)
			return
		}
		f.scrapes++
		fmt.Fprintf(w, "# HELP engram_background_busy_seconds_total busy\n"+
			"engram_background_busy_seconds_total{work=\"extract\"} %g\n"+
			"engram_background_busy_seconds_total{work=\"sweep\"} 0\n"+
			"engram_background_paused_seconds_total{work=\"extract\"} %g\n"+
			"engram_background_paused_seconds_total{work=\"sweep\"} 0\n"+
			"engram_store_views_total 12\n", 0.5*float64(f.scrapes), 2*float64(f.scrapes))
	})
	mux.HandleFunc("POST /v1/admin/flush", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.backlog == 0 {
			http.NotFound(w, r)
			return
		}
		if f.flushes++; f.flushes <= f.busyFlushes {
			fakeJSON(w, 503, map[string]any{"error": map[string]string{"code": "extraction_pending", "message": "wait"}})
			return
		}
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /v1/users/{user}/memories", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.memories[r.PathValue("user")]++
		f.mu.Unlock()
		fakeJSON(w, 201, map[string]string{"id": "m"})
	})
	mux.HandleFunc("POST /v1/users/{user}/facts", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.facts[r.PathValue("user")]++
		f.mu.Unlock()
		fakeJSON(w, 201, map[string]string{"id": "f"})
	})
	mux.HandleFunc("POST /v1/users/{user}/sessions/{session}/messages", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || len(req.Messages) > 100 {
			fakeJSON(w, 400, map[string]any{"error": map[string]string{"code": "invalid_message", "message": fmt.Sprint(err)}})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var ids []string
		for _, m := range req.Messages {
			if m.Content == "" {
				fakeJSON(w, 400, map[string]any{"error": map[string]string{"code": "invalid_message", "message": "empty"}})
				return
			}
			f.seq++
			f.roles = append(f.roles, m.Role)
			id := fmt.Sprintf("%010d", f.seq)
			key := r.PathValue("user") + "/" + r.PathValue("session")
			content := m.Content
			if f.changeEvery > 0 && f.seq%f.changeEvery == 0 {
				content += " (changed)"
			}
			if f.dropEvery == 0 || f.seq%f.dropEvery != 0 {
				f.messages[key] = append(f.messages[key], fakeMessage{id, content})
			}
			ids = append(ids, id)
		}
		fakeJSON(w, 201, map[string]any{"ids": ids, "facts": []any{}})
	})
	mux.HandleFunc("GET /v1/users/{user}/sessions/{session}/messages", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		after := r.URL.Query().Get("after")
		f.mu.Lock()
		var page []map[string]string
		for _, m := range f.messages[r.PathValue("user")+"/"+r.PathValue("session")] {
			if m.ID > after && len(page) < limit {
				page = append(page, map[string]string{"id": m.ID, "role": "user", "content": m.Content})
			}
		}
		f.mu.Unlock()
		resp := map[string]any{"messages": append([]map[string]string{}, page...)}
		if len(page) == limit {
			resp["next"] = page[len(page)-1]["id"]
		}
		fakeJSON(w, 200, resp)
	})
	mux.HandleFunc("POST /v1/recall", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ User, Session, Text string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.User == "" || req.Text == "" {
			fakeJSON(w, 400, map[string]any{"error": map[string]string{"code": "invalid_query", "message": fmt.Sprint(err)}})
			return
		}
		// RunLoad's warm-up recalls name no session, or say "warm up";
		// the timed ones name a session and do not.
		if req.Session != "" && strings.HasPrefix(req.Text, "warm up") {
			f.mu.Lock()
			f.warmed[req.User+"/"+req.Session] = len(f.messages[req.User+"/"+req.Session])
			f.mu.Unlock()
		}
		if f.hangRecalls && req.Session != "" {
			// With the body read, the server watches the connection,
			// and the client's hang-up cancels the context.
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		f.mu.Lock()
		f.recalls++
		n := f.recalls
		f.mu.Unlock()
		if f.failRecallEvery > 0 && n%f.failRecallEvery == 0 {
			fakeJSON(w, 500, map[string]any{"error": map[string]string{"code": "internal", "message": "internal error"}})
			return
		}
		fakeJSON(w, 200, map[string]any{"messages": []any{}, "items": []any{}, "trace": map[string]any{}})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			fakeJSON(w, 401, map[string]any{"error": map[string]string{"code": "unauthorized", "message": "no"}})
			return
		}
		if r.Method == "POST" && r.ContentLength != 0 && r.Header.Get("Content-Type") != "application/json" {
			fakeJSON(w, 415, map[string]any{"error": map[string]string{"code": "unsupported_media_type", "message": "no"}})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func fakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// smallLoad are options for a run of a fraction of a second against srv.
func smallLoad(srv *httptest.Server) LoadOptions {
	return LoadOptions{
		BaseURL: srv.URL, Token: fakeToken, Clients: 3, Duration: 200 * time.Millisecond,
		Users: 2, SessionsPerUser: 3, MemoriesPerUser: 3, FactsPerUser: 10, Seed: 7,
	}
}

// smallPages makes Verify read pages of 7 messages, so that every session
// takes several.
func smallPages(t *testing.T) {
	old := verifyPageSize
	verifyPageSize = 7
	t.Cleanup(func() { verifyPageSize = old })
}

func TestRunLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	smallPages(t)
	for _, tc := range []struct {
		name                  string
		append, recall        int
		wantAppend, wantRecal bool
	}{
		{"default mix", 0, 0, true, true},
		{"appends only", 1, 0, true, false},
		{"recalls only", 0, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI()
			srv := httptest.NewServer(f.handler())
			defer srv.Close()
			o := smallLoad(srv)
			o.AppendWeight, o.RecallWeight = tc.append, tc.recall
			var progress bytes.Buffer
			o.Progress = &progress
			began := time.Now()
			res, err := RunLoad(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("a 200ms run took %v", took)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if res.Elapsed < o.Duration || res.Options.Token != "" || res.Options.Clients != 3 {
				t.Errorf("elapsed %v, options %+v", res.Elapsed, res.Options)
			}
			if len(res.Ops) != 2 || res.Ops[0].Op != OpAppend || res.Ops[1].Op != OpRecall {
				t.Fatalf("ops %+v", res.Ops)
			}
			for i, want := range []bool{tc.wantAppend, tc.wantRecal} {
				s := res.Ops[i]
				if (s.Count > 0) != want || s.Errors != 0 {
					t.Errorf("%v: %+v, want ops: %v", s.Op, s, want)
				}
				if s.Count > 0 && (s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max || s.Throughput <= 0) {
					t.Errorf("%v: %+v", s.Op, s)
				}
			}
			v := res.Verification
			if v.Acknowledged != res.Ops[0].Count || len(res.Acks) != v.Acknowledged || v.Verified != v.Acknowledged || v.Stored != v.Acknowledged {
				t.Errorf("verification %+v, %d appends", v, res.Ops[0].Count)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if want := map[string]int{"load-user-0": 3, "load-user-1": 3}; !maps.Equal(f.memories, want) {
				t.Errorf("memories written %v, want %v", f.memories, want)
			}
			if want := map[string]int{"load-user-0": 10, "load-user-1": 10}; !maps.Equal(f.facts, want) {
				t.Errorf("facts written %v, want %v", f.facts, want)
			}
			if tc.wantAppend && len(f.messages) < 2 {
				t.Errorf("appends went to %d sessions", len(f.messages))
			}
			for _, want := range []string{"writing 3 memories and 10 facts", "3 clients for 200ms", "reading back"} {
				if !strings.Contains(progress.String(), want) {
					t.Errorf("progress lacks %q:\n%s", want, progress.String())
				}
			}
		})
	}
}

// TestRunLoadCatchesLostWrites: a server that acknowledges appends it
// loses or alters fails the run.
func TestRunLoadCatchesLostWrites(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	smallPages(t)
	for _, tc := range []struct {
		name   string
		fault  func(*fakeAPI)
		report func(Verification) int
	}{
		{"missing", func(f *fakeAPI) { f.dropEvery = 5 }, func(v Verification) int { return v.Missing }},
		{"changed", func(f *fakeAPI) { f.changeEvery = 5 }, func(v Verification) int { return v.Changed }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI()
			tc.fault(f)
			srv := httptest.NewServer(f.handler())
			defer srv.Close()
			o := smallLoad(srv)
			o.RecallWeight, o.AppendWeight = 0, 1
			res, err := RunLoad(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			v := res.Verification
			if v.Acknowledged < 10 {
				t.Fatalf("only %d appends", v.Acknowledged)
			}
			want := v.Acknowledged / 5
			if got := tc.report(v); got != want || v.Verified != v.Acknowledged-want || len(v.Examples) != min(want, 10) {
				t.Errorf("%s %d, want %d: %+v", tc.name, got, want, v)
			}
			if res.Errors() != 0 {
				t.Errorf("errors %v", res.ErrorKinds)
			}
			err = res.Err()
			if !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "not read back") || !strings.Contains(err.Error(), tc.name) || strings.Count(err.Error(), "load run failed") != 1 {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// TestVerify: an ack the server never stored, or stored otherwise, is
// counted, whatever session it names.
func TestVerify(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	smallPages(t)
	f := newFakeAPI()
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	var acks []Ack
	for i := range 20 {
		f.seq++
		m := fakeMessage{fmt.Sprintf("%010d", f.seq), fmt.Sprintf("message %d", i)}
		f.messages["u/s"] = append(f.messages["u/s"], m)
		acks = append(acks, Ack{User: "u", Session: "s", ID: m.ID, Content: m.Content})
	}
	v, err := Verify(context.Background(), srv.URL, fakeToken, acks)
	if err != nil || v.Err() != nil || v.Verified != 20 || v.Stored != 20 {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	bad := append(slices.Clone(acks),
		Ack{User: "u", Session: "s", ID: "9999999999", Content: "never stored"},
		Ack{User: "u", Session: "other", ID: acks[0].ID, Content: acks[0].Content},
		Ack{User: "u", Session: "s", ID: acks[3].ID, Content: "not what was stored"},
	)
	v, err = Verify(context.Background(), srv.URL, fakeToken, bad)
	if err != nil {
		t.Fatal(err)
	}
	if v.Acknowledged != 23 || v.Verified != 20 || v.Missing != 2 || v.Changed != 1 || len(v.Examples) != 3 {
		t.Fatalf("Verify = %+v", v)
	}
	if err := v.Err(); !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "u/s/9999999999 missing") {
		t.Errorf("Err = %v", err)
	}
	// A listing that fails is an error, not a count.
	if _, err := Verify(context.Background(), srv.URL, "wrong-token-0123456789", acks); err == nil || !strings.Contains(err.Error(), "401 unauthorized") {
		t.Errorf("Verify with a bad token = %v", err)
	}
}

// TestRunLoadCountsErrors: failed requests are counted by kind and fail
// the run.
func TestRunLoadCountsErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFakeAPI()
	f.failRecallEvery = 3 // the warm-up recalls are the first two
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	res, err := RunLoad(context.Background(), smallLoad(srv))
	if err != nil {
		t.Fatal(err)
	}
	n := res.ErrorKinds["recall 500 internal"]
	if n == 0 || res.Errors() != n || res.Ops[1].Errors != n || len(res.ErrorKinds) != 1 {
		t.Fatalf("errors %v, ops %+v", res.ErrorKinds, res.Ops)
	}
	if s := res.ErrorSamples["recall 500 internal"]; s != "status 500 internal: internal error" {
		t.Errorf("sample %q", s)
	}
	if err := res.Err(); !errors.Is(err, ErrLoadFailed) || !strings.Contains(err.Error(), "× recall 500 internal") {
		t.Errorf("Err = %v", err)
	}
	if res.Verification.Err() != nil {
		t.Errorf("verification %+v", res.Verification)
	}
}

// TestRunLoadStopsByItself: a server that never answers costs a request
// timeout, not a hung run.
func TestRunLoadStopsByItself(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFakeAPI()
	f.hangRecalls = true
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	o := smallLoad(srv)
	o.RequestTimeout = 100 * time.Millisecond
	began := time.Now()
	res, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second || res.Elapsed > o.Duration+time.Second {
		t.Errorf("took %v, elapsed %v", took, res.Elapsed)
	}
	if res.ErrorKinds["recall transport timeout"] == 0 || res.Ops[1].Count != 0 {
		t.Errorf("errors %v, ops %+v", res.ErrorKinds, res.Ops)
	}
	if !errors.Is(res.Err(), ErrLoadFailed) {
		t.Errorf("Err = %v", res.Err())
	}
}

// TestRunLoadCanceled: the caller's context ends the run at once.
func TestRunLoadCanceled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFakeAPI()
	f.hangRecalls = true
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	o := smallLoad(srv)
	o.Duration = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := RunLoad(ctx, o); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RunLoad = %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// TestRunLoadLoopbackOnly: anything but a loopback server is refused
// before a request is sent.
func TestRunLoadLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want error
	}{
		{"http://192.0.2.1:7437", ErrNotLoopback},
		{"http://10.0.0.1", ErrNotLoopback},
		{"http://[2001:db8::1]:7437", ErrNotLoopback},
		{"http://0.0.0.0:7437", ErrNotLoopback},
		{"http://example.com", ErrNotLoopback},
		{"http://127.0.0.1.example.com:7437", ErrNotLoopback},
		{"ftp://127.0.0.1:7437", ErrInvalidOptions},
		{"127.0.0.1:7437", ErrInvalidOptions},
		{"http://user:pw@127.0.0.1:7437", ErrInvalidOptions},
		{"http://127.0.0.1:7437/?x=1", ErrInvalidOptions},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := RunLoad(context.Background(), LoadOptions{BaseURL: tc.url, Token: "t"})
			if !errors.Is(err, tc.want) {
				t.Errorf("RunLoad = %v, want %v", err, tc.want)
			}
			if _, err := Verify(context.Background(), tc.url, "t", []Ack{{User: "u", Session: "s", ID: "1"}}); !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	// The dialer checks the address it connects to as well, which covers
	// a localhost that resolves elsewhere.
	c, err := newLoadClient("http://localhost:1", "t", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.base = "http://192.0.2.1:7437"
	if _, err := c.get(context.Background(), "/healthz"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("dial off the loopback = %v", err)
	}
	// localhost and [::1] are accepted.
	for _, u := range []string{"http://localhost:7437", "http://[::1]:7437", "https://127.0.0.2"} {
		if c, err := newLoadClient(u, "t", 1, time.Second); err != nil {
			t.Errorf("%s: %v", u, err)
		} else {
			c.close()
		}
	}
}

// TestRunLoadSeedsSessions: with MessagesPerSession, every session holds
// that many messages, in more than one request, before the timed phase
// (each is warmed up with a recall once they are in), and they are
// verified with the timed appends; a seeded message the server loses
// fails the run.
func TestRunLoadSeedsSessions(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	smallPages(t)
	f := newFakeAPI()
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	o := smallLoad(srv)
	o.MessagesPerSession = 60
	o.AppendWeight, o.RecallWeight = 0, 1
	var progress bytes.Buffer
	o.Progress = &progress
	res, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	sessions := o.Users * o.SessionsPerUser
	if v := res.Verification; v.Acknowledged != sessions*60 || v.Verified != v.Acknowledged || v.Stored != v.Acknowledged {
		t.Errorf("verification %+v, want %d seeded appends", v, sessions*60)
	}
	f.mu.Lock()
	if len(f.warmed) != sessions {
		t.Errorf("%d sessions warmed up, want %d", len(f.warmed), sessions)
	}
	for key, n := range f.warmed {
		if n != 60 || len(f.messages[key]) != 60 {
			t.Errorf("%s: warmed up holding %d messages, now %d", key, n, len(f.messages[key]))
		}
		for _, m := range f.messages[key] {
			if !strings.HasPrefix(m.Content, "seed-") {
				t.Errorf("%s: %q is not a seeded message", key, m.Content)
			}
		}
	}
	if f.roles[0] != "user" || f.roles[1] != "assistant" {
		t.Errorf("roles %v, want user and assistant by turns", f.roles[:2])
	}
	f.mu.Unlock()
	if !strings.Contains(progress.String(), "writing 60 messages to each of 6 sessions") {
		t.Errorf("progress:\n%s", progress.String())
	}

	f = newFakeAPI()
	f.dropEvery = 50
	srv2 := httptest.NewServer(f.handler())
	defer srv2.Close()
	o = smallLoad(srv2)
	o.MessagesPerSession, o.AppendWeight, o.RecallWeight = 60, 0, 1
	if res, err = RunLoad(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if res.Verification.Missing == 0 || res.Err() == nil {
		t.Errorf("a lost seeded message passed: %+v", res.Verification)
	}
}

func TestLoadOptionsInvalid(t *testing.T) {
	_, err := RunLoad(context.Background(), LoadOptions{Clients: -1, Duration: -1, RecallWeight: -2, FactsPerUser: -1, MessagesPerSession: -1})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("RunLoad = %v", err)
	}
	for _, want := range []string{"BaseURL is required", "Token is required", "Clients is negative", "Duration is negative", "RecallWeight is negative", "FactsPerUser is negative", "MessagesPerSession is negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestLoadReports: the table and the JSON carry the numbers and the
// verdict.
func TestLoadReports(t *testing.T) {
	res := &LoadResult{
		Options: LoadOptions{Clients: 8, Duration: 30 * time.Second, AppendWeight: 1, RecallWeight: 1, Users: 4,
			SessionsPerUser: 4, MemoriesPerUser: 50, FactsPerUser: 100},
		Elapsed: 30*time.Second + 12*time.Millisecond,
		Ops: []OpStats{
			{Op: OpAppend, Count: 3000, Throughput: 100, P50: 12345 * time.Microsecond, P99: 40 * time.Millisecond, Max: 90 * time.Millisecond},
			{Op: OpRecall, Count: 2999, Errors: 1, Throughput: 99.97, P50: 800 * time.Microsecond, P99: 3 * time.Millisecond, Max: 4 * time.Millisecond},
		},
		ErrorKinds:   map[string]int{"recall 500 internal": 1},
		ErrorSamples: map[string]string{"recall 500 internal": "status 500 internal: boom"},
		Verification: Verification{Acknowledged: 3000, Verified: 3000, Stored: 3000},
		Reverified:   &Verification{Acknowledged: 3000, Verified: 2999, Missing: 1, Stored: 2999, Examples: []string{"u/s/x missing"}},
		Note:         "server: test",
	}
	var table bytes.Buffer
	if err := WriteLoadTable(&table, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| append | 3000 | 0 | 100.0 | 12.35ms | 40ms | 90ms |",
		"| recall | 2999 | 1 | 100.0 | 800µs | 3ms | 4ms |",
		"| all | 5999 | 1 | 200.0 |",
		"clients 8 for 30s (elapsed 30.01s), append:recall 1:1, 4 users × 4 sessions",
		"server: test",
		"read back after the run: 3000 of 3000",
		"read back after a restart: 2999 of 3000 acknowledged appends (missing 1",
		"not read back: u/s/x missing",
		"error: 1× recall 500 internal, first: status 500 internal: boom",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := WriteLoadJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"append_weight", "clients", "cpu_seconds", "duration_seconds", "elapsed_seconds", "error_kinds", "error_samples",
		"extraction_backlog", "extraction_drain_s", "facts_per_user", "gomaxprocs", "memories_per_user", "messages_per_session", "note", "ops", "passed", "recall_weight", "reverified",
		"seed", "sessions_per_user", "setup_seconds", "users", "verification"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("JSON keys %v, want %v", keys, want)
	}
	ops := got["ops"].([]any)
	if a := ops[0].(map[string]any); a["op"] != "append" || a["p50_ms"] != 12.345 || a["ops_per_second"] != 100.0 || a["count"] != 3000.0 {
		t.Errorf("append %v", a)
	}
	if got["passed"] != false || got["reverified"].(map[string]any)["missing"] != 1.0 {
		t.Errorf("JSON %s", js.String())
	}
	res.ErrorKinds, res.Ops[1].Errors, res.Reverified = nil, 0, nil
	js.Reset()
	if err := WriteLoadJSON(&js, res); err != nil || !strings.Contains(js.String(), `"passed": true`) || !strings.Contains(js.String(), `"error_kinds": {}`) {
		t.Errorf("JSON of a passing run: %v\n%s", err, js.String())
	}
}

// TestRunLoadTurns: an agent turn is the user's message, a recall and the
// assistant's reply, in that order, counted once as a turn; with one
// client the server sees user, recall, assistant, turn after turn.
func TestRunLoadTurns(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := newFakeAPI()
	srv := httptest.NewServer(api.handler())
	defer srv.Close()
	o := smallLoad(srv)
	o.Clients, o.TurnWeight = 1, 1
	res, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	turns := opStats(res, OpTurn)
	if turns.Count == 0 || len(res.Ops) != 3 || opStats(res, OpAppend).Count != 0 || opStats(res, OpRecall).Count != 0 {
		t.Fatalf("ops %+v: want turns only", res.Ops)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	warm := o.Users // one warm-up recall per user before the clock
	if api.recalls-warm != turns.Count || len(api.roles) != 2*turns.Count || len(res.Acks) != 2*turns.Count {
		t.Fatalf("%d turns made %d recalls and %d appends (%d acknowledged)", turns.Count, api.recalls-warm, len(api.roles), len(res.Acks))
	}
	for i, r := range api.roles {
		if want := []string{"user", "assistant"}[i%2]; r != want {
			t.Fatalf("append %d is the %s's, want the %s's: %v", i, r, want, api.roles)
		}
	}
	for i := 0; i < len(res.Acks); i += 2 {
		if a, b := res.Acks[i], res.Acks[i+1]; a.User != b.User || a.Session != b.Session {
			t.Fatalf("a turn's two messages went to %s/%s and %s/%s", a.User, a.Session, b.User, b.Session)
		}
	}
	var b strings.Builder
	if err := WriteLoadTable(&b, res); err != nil || !strings.Contains(b.String(), "| turn |") || !strings.Contains(b.String(), "append:recall:turn 0:0:1") {
		t.Errorf("table (err %v):\n%s", err, b.String())
	}
}

// TestRunLoadDrain: a run reports the extraction backlog the server had
// when the clients stopped, and flushes until the server says it is done
// (past a 503 extraction_pending); a server that has neither route
// reports it unknown and unflushed.
func TestRunLoadDrain(t *testing.T) {
	for _, tc := range []struct {
		backlog, busy int
		want          string
	}{
		{0, 0, "extraction backlog when the clients stopped: unknown (GET /v1/admin/stats refused), not flushed"},
		{7, 2, "extraction backlog when the clients stopped: 7 messages, drained in "},
	} {
		api := newFakeAPI()
		api.backlog, api.busyFlushes = tc.backlog, tc.busy
		srv := httptest.NewServer(api.handler())
		res, err := RunLoad(context.Background(), smallLoad(srv))
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteLoadTable(&b, res); err != nil || !strings.Contains(b.String(), tc.want) {
			t.Errorf("backlog %d: table (err %v) lacks %q:\n%s", tc.backlog, err, tc.want, b.String())
		}
		if tc.backlog > 0 && (api.flushes != tc.busy+1 || res.Drain <= 0) {
			t.Errorf("backlog %d: %d flushes, drain %v; want %d flushes", tc.backlog, api.flushes, res.Drain, tc.busy+1)
		}
	}
}

// TestRunLoadBackground: a run reports what the server's background work
// did in the timed phase, from its /metrics before and after; a server
// without them gets no line.
func TestRunLoadBackground(t *testing.T) {
	for _, metrics := range []bool{true, false} {
		api := newFakeAPI()
		api.metrics = metrics
		srv := httptest.NewServer(api.handler())
		res, err := RunLoad(context.Background(), smallLoad(srv))
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteLoadTable(&b, res); err != nil {
			t.Fatal(err)
		}
		const want = "background work in the timed phase: extract busy 500ms ("
		if got := strings.Contains(b.String(), want); got != metrics {
			t.Errorf("metrics %v: table has %q: %v\n%s", metrics, want, got, b.String())
		}
		if metrics && (len(res.Background) != 2 || res.Background[0] != (BackgroundUse{Work: "extract", Busy: 500 * time.Millisecond, Paused: 2 * time.Second}) ||
			res.Background[1] != (BackgroundUse{Work: "sweep"})) {
			t.Errorf("background %+v", res.Background)
		}
		var js bytes.Buffer
		if err := WriteLoadJSON(&js, res); err != nil || strings.Contains(js.String(), `"paused_seconds": 2`) != metrics {
			t.Errorf("metrics %v: JSON (err %v):\n%s", metrics, err, js.String())
		}
	}
}
