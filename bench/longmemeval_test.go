package bench

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// tinyLongMemEval is a LongMemEval file written for these tests: three
// scored questions (one whose answer session is named "question", one
// with two answer sessions and a session id given twice, one whose answer
// session ranks seventh), an abstention question and one whose answer
// session is not in its haystack; dates in the published form and in ISO
// form, an answer that is a number, has_answer absent on most turns, an
// empty turn.
const tinyLongMemEval = "testdata/longmemeval-tiny.json"

func loadTiny(t *testing.T) []LongMemEvalQuestion {
	t.Helper()
	qs, err := LoadLongMemEval(tinyLongMemEval)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func date(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestLoadLongMemEval(t *testing.T) {
	qs := loadTiny(t)
	if len(qs) != 5 {
		t.Fatalf("%d questions", len(qs))
	}
	q := qs[0]
	if q.ID != "tiny_single" || q.Type != "single-session-user" || q.Answer != "3" || !q.Time.Equal(date("2023-05-30 10:00")) {
		t.Errorf("question 0: %+v", q)
	}
	if len(q.Sessions) != 3 || q.Sessions[1].ID != "question" || !q.Sessions[1].Time.Equal(date("2023-05-10 12:30")) || q.Sessions[1].Date != "2023/05/10 (Wed) 12:30" {
		t.Errorf("sessions: %+v", q.Sessions)
	}
	if tu := q.Sessions[1].Turns; len(tu) != 3 || tu[1].Role != memory.RoleAssistant || tu[0].HasAnswer || !tu[2].HasAnswer {
		t.Errorf("turns: %+v", tu)
	}
	if !qs[1].Time.Equal(date("2023-06-30 09:00")) || !slices.Equal(qs[1].AnswerSessions, []string{"first", "second"}) {
		t.Errorf("question 1: %v %v", qs[1].Time, qs[1].AnswerSessions)
	}
	if qs[0].Abstention() || !qs[3].Abstention() {
		t.Error("only tiny_cello_abs is an abstention question")
	}

	// The same file gzip-compressed (gzip -kn9), and under a name that
	// does not say so.
	gz, err := os.ReadFile(tinyLongMemEval + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.json")
	if err := os.WriteFile(path, gz, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadLongMemEval(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, qs) {
		t.Error("the gzip-compressed file reads differently")
	}
}

func TestLoadLongMemEvalInvalid(t *testing.T) {
	one := func(edit string) string {
		return `[{"question_id": "q", "question": "?", "question_date": "2023/05/30 (Tue) 10:00",
			"haystack_session_ids": ["a"], "haystack_dates": ["2023/05/01 (Mon) 09:00"],
			"haystack_sessions": [[{"role": "user", "content": "hi"}]], "answer_session_ids": ["a"]` + edit + `}]`
	}
	for name, data := range map[string]string{
		"not json":       "{",
		"not an array":   `{"question_id": "q"}`,
		"empty":          `[]`,
		"bad date":       one(`, "question_date": "yesterday"`),
		"bad role":       one(`, "haystack_sessions": [[{"role": "system", "content": "hi"}]]`),
		"short dates":    one(`, "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"]`),
		"short ids":      one(`, "haystack_session_ids": ["a", "b"]`),
		"object answer":  one(`, "answer": {"x": 1}`),
		"truncated gzip": "\x1f\x8b\x08",
	} {
		path := filepath.Join(t.TempDir(), "lme.json")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadLongMemEval(path); !errors.Is(err, ErrInvalidLongMemEval) {
			t.Errorf("%s: %v, want ErrInvalidLongMemEval", name, err)
		}
	}
	// Leniency: no ids, no dates, a date without weekday or time.
	path := filepath.Join(t.TempDir(), "lme.json")
	data := `[{"question_id": 7, "question": "?", "question_date": "2023/05/30",
		"haystack_sessions": [[{"role": "User", "content": "hi"}]], "answer_session_ids": ["session_0"]}]`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	qs, err := LoadLongMemEval(path)
	if err != nil {
		t.Fatal(err)
	}
	if q := qs[0]; q.ID != "7" || q.Type != "unknown" || !q.Time.Equal(date("2023-05-30 00:00")) || q.Sessions[0].ID != "session_0" || !q.Sessions[0].Time.IsZero() || q.Sessions[0].Turns[0].Role != memory.RoleUser {
		t.Errorf("%+v", q)
	}
}

// TestIngestLongMemEval: every turn with text is a message of its role in
// its own session, dated by its session's date plus its index in seconds;
// a session id given twice is two sessions of the store, both ranked as
// the one id.
func TestIngestLongMemEval(t *testing.T) {
	qs := loadTiny(t)
	ctx := context.Background()
	store, err := memory.Open("", &memory.Options{SweepInterval: -1, Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, qi := range []int{0, 1} {
		q := &qs[qi]
		keys, err := IngestLongMemEval(ctx, store, longMemEvalTenant, q)
		if err != nil {
			t.Fatal(err)
		}
		names, _ := q.storeSessions()
		n := 0
		for j, s := range q.Sessions {
			msgs, err := store.Session(memory.Scope{Tenant: longMemEvalTenant, User: q.ID, Session: names[j]}).Messages(ctx, memory.MessagesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want []LongMemEvalTurn
			var times []time.Time
			for i, tu := range s.Turns {
				if tu.Content != "" {
					want = append(want, tu)
					times = append(times, s.Time.Add(time.Duration(i)*time.Second))
				}
			}
			if len(msgs) != len(want) {
				t.Fatalf("%s session %s: %d messages, want %d", q.ID, names[j], len(msgs), len(want))
			}
			for i, m := range msgs {
				if m.Role != want[i].Role || m.Content != want[i].Content || !m.Time.Equal(times[i]) {
					t.Errorf("%s session %s message %d: %s %q at %v, want %s %q at %v", q.ID, names[j], i, m.Role, m.Content, m.Time, want[i].Role, want[i].Content, times[i])
				}
				if keys[m.ID] != s.ID {
					t.Errorf("message %s ranks as %q, want %q", m.ID, keys[m.ID], s.ID)
				}
			}
			n += len(msgs)
		}
		if len(keys) != n {
			t.Errorf("%s: %d keys for %d messages", q.ID, len(keys), n)
		}
	}
	if names, _ := qs[1].storeSessions(); !slices.Equal(names, []string{"plan", "first", "shop", "second", "shop#4"}) {
		t.Errorf("store sessions %v", names)
	}
}

// TestLongMemEvalQuery: the question is asked at its date, from a session
// of its own user that is none of the haystack's (tiny_single has a
// haystack session named "question").
func TestLongMemEvalQuery(t *testing.T) {
	for _, q := range loadTiny(t) {
		rq, ok := q.query("bm25")
		if !ok || rq.Text != q.Question || !rq.Now.Equal(q.Time) || rq.Now.IsZero() || rq.TopK != longMemEvalTopK {
			t.Errorf("%s: %+v", q.ID, rq)
		}
		names, asked := q.storeSessions()
		if rq.Scope != (memory.Scope{Tenant: longMemEvalTenant, User: q.ID, Session: asked}) || slices.Contains(names, asked) {
			t.Errorf("%s: asked from %+v; haystack sessions %v", q.ID, rq.Scope, names)
		}
	}
	if _, ok := (&LongMemEvalQuestion{}).query("psychic"); ok {
		t.Error("an unknown mode")
	}
}

// TestNDCG checks the arithmetic by hand: a relevant session at rank r
// gains 1/log2(r+1); the ideal ranking puts min(k, relevant) first.
func TestNDCG(t *testing.T) {
	rel := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	log3 := math.Log2(3)
	for _, c := range []struct {
		name     string
		ranked   []string
		relevant map[string]bool
		k        int
		want     float64
	}{
		{"first", []string{"a", "x"}, rel("a"), 10, 1},
		{"second", []string{"x", "a"}, rel("a"), 10, 1 / log3},                                                    // 0.631
		{"seventh", []string{"1", "2", "3", "4", "5", "6", "a"}, rel("a"), 10, 1.0 / 3},                           // 1/log2(8)
		{"two of two at 2 and 3", []string{"x", "a", "b", "y"}, rel("a", "b"), 10, (1/log3 + 0.5) / (1 + 1/log3)}, // 0.693
		{"one of two", []string{"a"}, rel("a", "b"), 10, 1 / (1 + 1/log3)},                                        // 0.613
		{"past k", []string{"x", "y", "a"}, rel("a"), 2, 0},
		{"more relevant than k", []string{"x", "a"}, rel("a", "b", "c"), 2, (1 / log3) / (1 + 1/log3)},
		{"nothing ranked", nil, rel("a"), 10, 0},
		{"nothing relevant", []string{"a"}, rel(), 10, 0},
	} {
		if got := ndcg(c.ranked, c.relevant, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: ndcg %v, want %v", c.name, got, c.want)
		}
	}
	got := sessionScores([]string{"x", "y", "a", "b"}, rel("a", "b"))
	want := []float64{0, 1, 1, (0.5 + 1/math.Log2(5)) / (1 + 1/log3)}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("sessionScores %v, want %v", got, want)
		}
	}
}

// TestLongMemEvalRanking pins the sessions BM25 ranks for the tiny file's
// questions, from which TestRunLongMemEvalTiny's figures follow.
func TestLongMemEvalRanking(t *testing.T) {
	ctx := context.Background()
	want := map[string][]string{
		"tiny_single": {"question"},
		"tiny_multi":  {"plan", "first", "second", "shop"},
		"tiny_late":   {"c1", "c3", "c5", "c6", "c4", "c2", "lesson"},
	}
	for _, q := range loadTiny(t) {
		w, ok := want[q.ID]
		if !ok {
			continue
		}
		store, err := memory.Open("", &memory.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := IngestLongMemEval(ctx, store, longMemEvalTenant, &q)
		if err == nil {
			err = store.Flush(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		rq, _ := q.query("bm25")
		rec, err := store.Recall(ctx, rq)
		if err != nil {
			t.Fatal(err)
		}
		if got := rankedKeys(rec, keys); !slices.Equal(got, w) {
			t.Errorf("%s: ranked %v, want %v", q.ID, got, w)
		}
		store.Close()
	}
}

// TestRunLongMemEvalTiny: the figures of the tiny file, by hand from
// TestLongMemEvalRanking's rankings. tiny_single finds its session first
// (1, 1, 1, NDCG 1); tiny_multi ranks its two answer sessions 2nd and 3rd
// (0, 1, 1, NDCG (1/log2 3 + 1/log2 4) / (1 + 1/log2 3) = 0.693);
// tiny_late ranks its session 7th (0, 0, 1, NDCG 1/log2 8 = 1/3). The
// abstention question and the one without its answer session in the
// haystack are skipped. The rows are the same whatever the workers.
func TestRunLongMemEvalTiny(t *testing.T) {
	qs := loadTiny(t)
	multi := (1/math.Log2(3) + 0.5) / (1 + 1/math.Log2(3))
	want := map[string][]float64{
		"multi-session":       {0, 1, 1, multi},
		"single-session-user": {1, 1, 1, 1},
		"temporal-reasoning":  {0, 0, 1, 1.0 / 3},
		"all":                 {1.0 / 3, 2.0 / 3, 1, (1 + multi + 1.0/3) / 3},
	}
	var progress strings.Builder
	rows, err := RunLongMemEval(context.Background(), qs, LongMemEvalOptions{Modes: []string{"bm25", "default"}, Workers: 1, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(want)*len(LongMemEvalMetrics) {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for i, r := range rows {
		w, ok := want[r.Type]
		c := i % len(LongMemEvalMetrics)
		name := LongMemEvalMetrics[c]
		if !ok || !strings.HasPrefix(name, r.Metric+"@") || r.K != LongMemEvalKs[min(c, len(LongMemEvalKs)-1)] {
			t.Fatalf("row %d: %+v", i, r)
		}
		n := 1
		if r.Type == "all" {
			n = 3
		}
		if math.Abs(r.Value-w[c]) > 1e-12 || r.Questions != n {
			t.Errorf("%s %s %s: %v over %d questions, want %v over %d", r.Mode, r.Type, name, r.Value, r.Questions, w[c], n)
		}
	}
	if rows[len(rows)-1].Type != "all" || rows[0].Mode != "bm25" || rows[len(rows)-1].Mode != "default" {
		t.Errorf("order: first %+v, last %+v", rows[0], rows[len(rows)-1])
	}
	if !strings.Contains(progress.String(), "tiny_cello_abs temporal-reasoning: skipped, an abstention question") ||
		!strings.Contains(progress.String(), "3 questions scored, 2 skipped") {
		t.Errorf("progress:\n%s", progress.String())
	}
	again, err := RunLongMemEval(context.Background(), qs, LongMemEvalOptions{Modes: []string{"bm25", "default"}, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, rows) {
		t.Errorf("4 workers:\n%+v\n1 worker:\n%+v", again, rows)
	}
	var table strings.Builder
	if err := WriteLongMemEvalTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "| bm25 | all | 3 | 0.333 | 0.667 | 1.000 | 0.676 |\n") {
		t.Errorf("table:\n%s", table.String())
	}

	if _, err := RunLongMemEval(context.Background(), qs, LongMemEvalOptions{Modes: []string{"psychic"}}); err == nil {
		t.Error("an unknown mode")
	}
	if _, err := RunLongMemEval(context.Background(), qs[3:], LongMemEvalOptions{}); !errors.Is(err, ErrInvalidLongMemEval) {
		t.Errorf("nothing to score: %v", err)
	}
}

// TestForEachParallel: every index once, on at most the given goroutines;
// an error stops the indices not yet begun and is returned.
func TestForEachParallel(t *testing.T) {
	ctx := context.Background()
	seen := make([]int, 50)
	if err := forEachParallel(ctx, len(seen), 3, func(_ context.Context, i int) error { seen[i]++; return nil }); err != nil {
		t.Fatal(err)
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("index %d ran %d times", i, n)
		}
	}
	boom := errors.New("boom")
	ran := 0
	err := forEachParallel(ctx, 1000, 1, func(ctx context.Context, i int) error {
		ran++
		if i == 3 {
			return boom
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) || ran != 4 {
		t.Errorf("err %v after %d calls", err, ran)
	}
}
