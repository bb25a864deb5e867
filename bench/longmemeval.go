package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/memory"
)

// LongMemEvalQuestion is one question of the LongMemEval benchmark (Wu et
// al., ICLR 2025) with its haystack: the chat sessions, user and
// assistant, that came before it, some of which hold its answer.
type LongMemEvalQuestion struct {
	ID       string
	Type     string // question_type: "temporal-reasoning", "multi-session", ...
	Question string
	Answer   string    // as written; a number as its JSON text
	Date     string    // question_date as written, "2023/05/20 (Sat) 02:21"
	Time     time.Time // Date parsed (UTC); zero when the data has none
	Sessions []LongMemEvalSession
	// AnswerSessions are the ids of the sessions that hold the answer.
	AnswerSessions []string
}

// LongMemEvalSession is one dated haystack session.
type LongMemEvalSession struct {
	ID    string    // from haystack_session_ids, else "session_<index>"
	Date  string    // as written
	Time  time.Time // Date parsed (UTC); zero when the data has none
	Turns []LongMemEvalTurn
}

// LongMemEvalTurn is one message of a haystack session.
type LongMemEvalTurn struct {
	Role      memory.Role
	Content   string
	HasAnswer bool // the turn holds evidence (has_answer; optional)
}

// Abstention reports whether q is an abstention question (its id ends in
// "_abs"): its answer is not in the history, so it has no answer session
// to retrieve.
func (q *LongMemEvalQuestion) Abstention() bool { return strings.HasSuffix(q.ID, "_abs") }

// LongMemEvalKs are the cut-offs session recall_any is reported at; NDCG
// is reported at the largest.
var LongMemEvalKs = []int{1, 5, 10}

// longMemEvalTopK is how many items each Recall asks for. A session holds
// about ten turns and a question's best items cluster in a few sessions,
// so the items' distinct sessions are far fewer than the items. On the
// LongMemEval_S dev fifth, 89 of the 91 scored questions reach ten
// distinct sessions in mode default (BM25 finds the other two's words in
// only 3 and 8 sessions) and all 91 in mode vector; 50 items gave the
// same counts, and 100 leave room.
const longMemEvalTopK = 100

// LongMemEvalMetrics are the columns of a LongMemEval table, in order:
// recall_any at each of LongMemEvalKs, then NDCG at the largest.
var LongMemEvalMetrics = []string{"recall_any@1", "recall_any@5", "recall_any@10", "ndcg@10"}

// LongMemEvalRow is one figure of a LongMemEval run: a metric of a mode
// averaged over the questions of a type (or "all").
type LongMemEvalRow struct {
	Mode      string  `json:"mode"`
	Type      string  `json:"question_type"`
	Metric    string  `json:"metric"` // "recall_any" or "ndcg"
	K         int     `json:"k"`
	Value     float64 `json:"value"`
	Questions int     `json:"questions"`
}

// looseString decodes a JSON string as itself and any other scalar (a
// number, a boolean) as its JSON text; null is "".
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*s = ""
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = looseString(v)
		return nil
	}
	if len(b) > 0 && (b[0] == '[' || b[0] == '{') {
		return fmt.Errorf("want a string or a number, got %.20s", b)
	}
	*s = looseString(b)
	return nil
}

// looseBool decodes true, "true" and 1 as true, anything else as false.
type looseBool bool

func (v *looseBool) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(b), `"`)) {
	case "true", "1":
		*v = true
	default:
		*v = false
	}
	return nil
}

// longMemEvalRaw is one question as the published files write it.
type longMemEvalRaw struct {
	QuestionID         looseString    `json:"question_id"`
	QuestionType       string         `json:"question_type"`
	Question           string         `json:"question"`
	Answer             looseString    `json:"answer"`
	QuestionDate       string         `json:"question_date"`
	HaystackDates      []string       `json:"haystack_dates"`
	HaystackSessionIDs []looseString  `json:"haystack_session_ids"`
	HaystackSessions   [][]rawLMETurn `json:"haystack_sessions"`
	AnswerSessionIDs   []looseString  `json:"answer_session_ids"`
}

type rawLMETurn struct {
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	HasAnswer looseBool `json:"has_answer"`
}

// LoadLongMemEval reads a LongMemEval file in the published format (a
// JSON array of questions, longmemeval_s.json and its kin), plain or
// gzip-compressed (told by its first bytes, whatever its name). It reads
// leniently where files differ: dates such as "2023/05/20 (Sat) 02:21"
// with or without the weekday, seconds or time of day, or in ISO form;
// answers and ids that are numbers; has_answer absent. A question without
// haystack_session_ids names its sessions "session_<index>"; one
// without dates leaves them zero (messages are then dated when
// ingested). Input that is not such a file returns an error wrapping
// [ErrInvalidLongMemEval].
func LoadLongMemEval(path string) ([]LongMemEvalQuestion, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLongMemEval, path, err)
		}
		defer gz.Close()
		r = gz
	}
	// One read and one Unmarshal: a json.Decoder over the one large value
	// spends most of its time moving its growing buffer.
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLongMemEval, path, err)
	}
	var raw []longMemEvalRaw
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLongMemEval, path, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: %s: no questions", ErrInvalidLongMemEval, path)
	}
	out := make([]LongMemEvalQuestion, len(raw))
	for i := range raw {
		if out[i], err = raw[i].question(i); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLongMemEval, path, err)
		}
	}
	return out, nil
}

// question converts the i-th raw question.
func (r *longMemEvalRaw) question(i int) (LongMemEvalQuestion, error) {
	q := LongMemEvalQuestion{ID: string(r.QuestionID), Type: r.QuestionType, Question: r.Question, Answer: string(r.Answer), Date: r.QuestionDate}
	if q.ID == "" {
		q.ID = fmt.Sprintf("question_%d", i)
	}
	if q.Type == "" {
		q.Type = "unknown"
	}
	var err error
	if q.Time, err = parseLongMemEvalDate(q.Date); err != nil {
		return q, fmt.Errorf("question %s: question_date: %w", q.ID, err)
	}
	n := len(r.HaystackSessions)
	if d := len(r.HaystackDates); d != 0 && d != n {
		return q, fmt.Errorf("question %s: %d haystack_dates for %d sessions", q.ID, d, n)
	}
	if d := len(r.HaystackSessionIDs); d != 0 && d != n {
		return q, fmt.Errorf("question %s: %d haystack_session_ids for %d sessions", q.ID, d, n)
	}
	for _, a := range r.AnswerSessionIDs {
		q.AnswerSessions = append(q.AnswerSessions, string(a))
	}
	q.Sessions = make([]LongMemEvalSession, n)
	for j, turns := range r.HaystackSessions {
		s := &q.Sessions[j]
		s.ID = fmt.Sprintf("session_%d", j)
		if len(r.HaystackSessionIDs) > 0 && r.HaystackSessionIDs[j] != "" {
			s.ID = string(r.HaystackSessionIDs[j])
		}
		if len(r.HaystackDates) > 0 {
			s.Date = r.HaystackDates[j]
		}
		if s.Time, err = parseLongMemEvalDate(s.Date); err != nil {
			return q, fmt.Errorf("question %s session %s: %w", q.ID, s.ID, err)
		}
		for _, t := range turns {
			role := memory.Role(strings.ToLower(strings.TrimSpace(t.Role)))
			if role != memory.RoleUser && role != memory.RoleAssistant {
				return q, fmt.Errorf("question %s session %s: role %q is not user or assistant", q.ID, s.ID, t.Role)
			}
			s.Turns = append(s.Turns, LongMemEvalTurn{Role: role, Content: t.Content, HasAnswer: bool(t.HasAnswer)})
		}
	}
	return q, nil
}

// weekday matches the "(Sat)" of "2023/05/20 (Sat) 02:21".
var weekday = regexp.MustCompile(`\s*\([A-Za-z]+\)\s*`)

// longMemEvalLayouts are the date layouts LoadLongMemEval accepts once a
// weekday in parentheses is dropped.
var longMemEvalLayouts = []string{
	"2006/01/02 15:04", "2006/01/02 15:04:05", "2006/01/02",
	"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02",
	"2006-01-02T15:04:05", "2006-01-02T15:04", time.RFC3339,
}

// parseLongMemEvalDate parses a LongMemEval date as UTC; "" is the zero
// time.
func parseLongMemEvalDate(s string) (time.Time, error) {
	s = strings.TrimSpace(weekday.ReplaceAllString(s, " "))
	if s == "" {
		return time.Time{}, nil
	}
	for _, l := range longMemEvalLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q is not like 2023/05/20 (Sat) 02:21", s)
}

// longMemEvalTenant is the tenant questions are ingested under.
const longMemEvalTenant = "longmemeval"

// storeSessions returns the name of each haystack session in the store
// and the name of the session the question is asked from, all distinct:
// a session's id, followed by "#<index>" when the id repeats (a few
// haystacks hold one session twice, at two dates).
func (q *LongMemEvalQuestion) storeSessions() (names []string, asked string) {
	used := map[string]bool{}
	for j, s := range q.Sessions {
		name := s.ID
		if used[name] {
			name = fmt.Sprintf("%s#%d", s.ID, j)
		}
		used[name] = true
		names = append(names, name)
	}
	asked = "question"
	for used[asked] {
		asked += "'"
	}
	return names, asked
}

// IngestLongMemEval writes a question's haystack into store: one user
// (the question's id) under tenant, one session per haystack session,
// each in one transaction, every turn a message of its role at its
// session's date plus its index in seconds (so the turns keep their
// order). Turns with no text are left out. It returns the haystack
// session id of each message id.
func IngestLongMemEval(ctx context.Context, store *memory.Store, tenant string, q *LongMemEvalQuestion) (map[string]string, error) {
	ids := map[string]string{}
	names, _ := q.storeSessions()
	for j := range q.Sessions {
		s := &q.Sessions[j]
		var msgs []memory.Message
		var keys []string
		for i, t := range s.Turns {
			if strings.TrimSpace(t.Content) == "" {
				continue
			}
			m := memory.Message{Role: t.Role, Content: t.Content}
			if !s.Time.IsZero() {
				m.Time = s.Time.Add(time.Duration(i) * time.Second)
			}
			msgs = append(msgs, m)
			keys = append(keys, s.ID)
		}
		scope := memory.Scope{Tenant: tenant, User: q.ID, Session: names[j]}
		if err := writeSession(ctx, store, scope, msgs, keys, ids); err != nil {
			return nil, fmt.Errorf("bench: ingest %s session %s: %w", q.ID, s.ID, err)
		}
	}
	return ids, nil
}

// query returns the Recall of mode for q: asked from a new session of
// q's user, at q's date.
func (q *LongMemEvalQuestion) query(mode string) (memory.Query, bool) {
	rq, ok := modeQuery(mode, longMemEvalTopK)
	_, asked := q.storeSessions()
	rq.Scope = memory.Scope{Tenant: longMemEvalTenant, User: q.ID, Session: asked}
	rq.Text = q.Question
	rq.Now = q.Time
	return rq, ok
}

// answerSessions returns the ids of q's answer sessions that are in its
// haystack: the ones that can be retrieved.
func (q *LongMemEvalQuestion) answerSessions() map[string]bool {
	in := map[string]bool{}
	for _, s := range q.Sessions {
		in[s.ID] = true
	}
	out := map[string]bool{}
	for _, a := range q.AnswerSessions {
		if in[a] {
			out[a] = true
		}
	}
	return out
}

// sessionScores returns recall_any at each of LongMemEvalKs and NDCG at
// the largest of the ranked distinct sessions against the answer
// sessions, in the order of LongMemEvalMetrics.
func sessionScores(ranked []string, answers map[string]bool) []float64 {
	out := make([]float64, 0, len(LongMemEvalMetrics))
	for _, k := range LongMemEvalKs {
		hit := 0.0
		for _, s := range ranked[:min(k, len(ranked))] {
			if answers[s] {
				hit = 1
				break
			}
		}
		out = append(out, hit)
	}
	return append(out, ndcg(ranked, answers, LongMemEvalKs[len(LongMemEvalKs)-1]))
}

// ndcg returns the normalized discounted cumulative gain at k of ranked
// with binary relevance: the sum of 1/log2(rank+1) over the relevant
// sessions among the first k, divided by that of an ideal ranking (every
// relevant session first: min(k, len(relevant)) of them). Zero when
// nothing is relevant. This is the usual discount; LongMemEval's own
// script (src/retrieval/eval_utils.py) gives rank 2 the weight of rank 1
// and ranks turns, not distinct sessions, so its NDCG is not this one.
func ndcg(ranked []string, relevant map[string]bool, k int) float64 {
	var dcg, ideal float64
	for i, s := range ranked[:min(k, len(ranked))] {
		if relevant[s] {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := range min(k, len(relevant)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// LongMemEvalOptions configures RunLongMemEval.
type LongMemEvalOptions struct {
	// Modes to run (see [ConversationModes]); nil means "default".
	Modes []string
	// Store opens the fresh store each question's haystack is ingested
	// into; nil means an in-memory store with default options. It is
	// called from several goroutines at once.
	Store func() (*memory.Store, error)
	// Workers is how many questions run at once; zero means
	// runtime.NumCPU().
	Workers int
	// Progress, when set, receives a line per question as it ends (in
	// the order they end) and a last line that counts them.
	Progress io.Writer
}

// lmeResult is what one question gave: a score per mode and metric, or
// why it was skipped.
type lmeResult struct {
	scores  [][]float64 // [mode][metric]
	skipped string
}

// RunLongMemEval ingests each question's haystack into a fresh store,
// asks Recall the question from a new session of the same user dated
// question_date, once per mode, and scores the ranked sessions: the
// distinct haystack sessions of the items, best first, each at the rank
// of its first item (see [RunLocomo] for how memories and facts point at
// the messages they came from). recall_any@k is 1 when any answer session
// is among the first k, NDCG@10 counts each answer session among the
// first 10 (see ndcg); each is averaged over the questions, per question
// type and overall ("all"), in the order of the questions whatever the
// number of workers, so the figures are the same on every run.
//
// Abstention questions (ids ending in "_abs") are skipped, as
// LongMemEval's own retrieval evaluation does: their history holds no
// answer. So is a question none of whose answer sessions is in its
// haystack.
func RunLongMemEval(ctx context.Context, questions []LongMemEvalQuestion, opts LongMemEvalOptions) ([]LongMemEvalRow, error) {
	modes, open, err := conversationSetup("longmemeval", opts.Modes, opts.Store)
	if err != nil {
		return nil, err
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	results := make([]lmeResult, len(questions))
	var mu sync.Mutex
	done := 0
	err = forEachParallel(ctx, len(questions), workers, func(ctx context.Context, i int) error {
		began := time.Now()
		r, err := runLongMemEvalQuestion(ctx, open, &questions[i], modes)
		if err != nil {
			return err
		}
		results[i] = r
		if opts.Progress != nil {
			mu.Lock()
			done++
			fmt.Fprintf(opts.Progress, "[%d/%d] %s %s: %s\n", done, len(questions), questions[i].ID, questions[i].Type, r.describe(&questions[i], time.Since(began)))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows, skipped := longMemEvalRows(questions, results, modes)
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "%d questions scored, %d skipped (abstention or no answer session in the haystack)\n", len(questions)-skipped, skipped)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no question to score (all are abstention questions or have no answer session in their haystack)", ErrInvalidLongMemEval)
	}
	return rows, nil
}

// describe says what a question's run did, for the progress line.
func (r *lmeResult) describe(q *LongMemEvalQuestion, took time.Duration) string {
	if r.skipped != "" {
		return "skipped, " + r.skipped
	}
	return fmt.Sprintf("%d sessions in %v, recall_any@5 %v", len(q.Sessions), took.Round(time.Millisecond), r.scores[0][1])
}

// runLongMemEvalQuestion ingests q's haystack into a fresh store, waits
// for extraction, and scores the Recall of each mode.
func runLongMemEvalQuestion(ctx context.Context, open func() (*memory.Store, error), q *LongMemEvalQuestion, modes []string) (lmeResult, error) {
	if q.Abstention() {
		return lmeResult{skipped: "an abstention question"}, nil
	}
	answers := q.answerSessions()
	if len(answers) == 0 {
		return lmeResult{skipped: "no answer session in the haystack"}, nil
	}
	store, err := open()
	if err != nil {
		return lmeResult{}, err
	}
	defer store.Close()
	keys, err := IngestLongMemEval(ctx, store, longMemEvalTenant, q)
	if err == nil {
		// Memories and facts are formed in the background: wait for
		// them, as an agent's next session would find them.
		err = store.Flush(ctx)
	}
	if err != nil {
		return lmeResult{}, err
	}
	var r lmeResult
	for _, mode := range modes {
		rq, _ := q.query(mode)
		rec, err := store.Recall(ctx, rq)
		if err != nil {
			return lmeResult{}, fmt.Errorf("bench: %s %q: %w", q.ID, q.Question, err)
		}
		r.scores = append(r.scores, sessionScores(rankedKeys(rec, keys), answers))
	}
	return r, store.Close()
}

// longMemEvalRows averages the results in question order into rows: per
// mode, each question type then "all", each metric. It returns how many
// questions were skipped.
func longMemEvalRows(questions []LongMemEvalQuestion, results []lmeResult, modes []string) ([]LongMemEvalRow, int) {
	sums := means{}
	skipped := 0
	for i, r := range results {
		if r.skipped != "" {
			skipped++
			continue
		}
		for m, mode := range modes {
			for c, v := range r.scores[m] {
				sums.add(mode, questions[i].Type, c, v)
				sums.add(mode, "all", c, v)
			}
		}
	}
	var rows []LongMemEvalRow
	for _, mode := range modes {
		for _, g := range sums.groups(mode) {
			for c := range LongMemEvalMetrics {
				a := sums[meanKey{mode, g, c}]
				row := LongMemEvalRow{Mode: mode, Type: g, Metric: "recall_any", Value: a.sum / float64(a.n), Questions: a.n}
				if c < len(LongMemEvalKs) {
					row.K = LongMemEvalKs[c]
				} else {
					row.Metric, row.K = "ndcg", LongMemEvalKs[len(LongMemEvalKs)-1]
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, skipped
}

// WriteLongMemEvalTable prints rows as a table: one line per mode and
// question type, a column per metric.
func WriteLongMemEvalTable(w io.Writer, rows []LongMemEvalRow) error {
	var lines []tableLine
	for _, r := range rows {
		name := fmt.Sprintf("%s@%d", r.Metric, r.K)
		c := slices.Index(LongMemEvalMetrics, name)
		if c < 0 {
			continue
		}
		lines = addTableValue(lines, r.Mode, r.Type, r.Questions, c, len(LongMemEvalMetrics), r.Value)
	}
	return writeTable(w, "question type", LongMemEvalMetrics, lines)
}
