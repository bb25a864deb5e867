package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// LocomoSample is one conversation of the LoCoMo benchmark (Maharana et
// al., ACL 2024): two speakers over dated sessions, and questions whose
// evidence is a set of turns.
type LocomoSample struct {
	ID       string
	Speakers [2]string
	Sessions []LocomoSession
	QA       []LocomoQA
}

// LocomoSession is one dated session of a conversation.
type LocomoSession struct {
	N     int       // the session's number, from 1
	Date  string    // as written in the data, "1:56 pm on 8 May, 2023"
	Time  time.Time // Date parsed (UTC); zero when it does not parse
	Turns []LocomoTurn
}

// LocomoTurn is one turn of a session.
type LocomoTurn struct {
	Speaker string
	DiaID   string // "D<session>:<turn>"
	Text    string
	Caption string // the BLIP caption of a shared image, if any
}

// LocomoQA is one question with its evidence turns.
type LocomoQA struct {
	Question string
	Category int      // 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial
	Evidence []string // dia ids
}

// LocomoModes are the retrieval configurations RunLocomo knows.
var LocomoModes = []string{"default", "bm25", "vector", "hybrid", "graph"}

// LocomoKs are the cut-offs recall is reported at.
var LocomoKs = []int{1, 5, 10, 25}

// LocomoRow is one figure of a LoCoMo run: evidence recall@K of a mode over
// the questions of a category ("1" to "4", or "all").
type LocomoRow struct {
	Mode      string  `json:"mode"`
	Category  string  `json:"category"`
	K         int     `json:"k"`
	Recall    float64 `json:"recall"`
	Questions int     `json:"questions"`
}

var diaID = regexp.MustCompile(`D\d+:\d+`)

// LoadLocomo reads a LoCoMo file (the published locomo10.json format: a
// JSON array of samples). Malformed evidence strings such as
// "D8:6; D9:17" are split leniently.
func LoadLocomo(path string) ([]LocomoSample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []struct {
			Question string          `json:"question"`
			Evidence []string        `json:"evidence"`
			Category int             `json:"category"`
			Answer   json.RawMessage `json:"answer"`
		} `json:"qa"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("bench: locomo %s: %w", path, err)
	}
	var out []LocomoSample
	for _, r := range raw {
		s := LocomoSample{ID: r.SampleID}
		_ = json.Unmarshal(r.Conversation["speaker_a"], &s.Speakers[0])
		_ = json.Unmarshal(r.Conversation["speaker_b"], &s.Speakers[1])
		for n := 1; ; n++ {
			turnsRaw, ok := r.Conversation["session_"+strconv.Itoa(n)]
			if !ok {
				break
			}
			sess := LocomoSession{N: n}
			_ = json.Unmarshal(r.Conversation[fmt.Sprintf("session_%d_date_time", n)], &sess.Date)
			if t, err := time.Parse("3:04 pm on 2 January, 2006", sess.Date); err == nil {
				sess.Time = t
			}
			var turns []struct {
				Speaker string `json:"speaker"`
				DiaID   string `json:"dia_id"`
				Text    string `json:"text"`
				Caption string `json:"blip_caption"`
			}
			if err := json.Unmarshal(turnsRaw, &turns); err != nil {
				return nil, fmt.Errorf("bench: locomo %s session %d: %w", r.SampleID, n, err)
			}
			for _, t := range turns {
				sess.Turns = append(sess.Turns, LocomoTurn{Speaker: t.Speaker, DiaID: t.DiaID, Text: t.Text, Caption: t.Caption})
			}
			s.Sessions = append(s.Sessions, sess)
		}
		for _, q := range r.QA {
			var ev []string
			for _, e := range q.Evidence {
				ev = append(ev, diaID.FindAllString(e, -1)...)
			}
			s.QA = append(s.QA, LocomoQA{Question: q.Question, Category: q.Category, Evidence: ev})
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: locomo %s: no samples", path)
	}
	return out, nil
}

// locomoQuery returns the Recall query of a mode, or false for an unknown
// mode. TopK is twice the largest k: memories and facts that come from a
// turn already ranked give no new turn, and the items past them must still
// fill the top k turns (see rankedTurns).
func locomoQuery(mode string) (memory.Query, bool) {
	q := memory.Query{TopK: 2 * slices.Max(LocomoKs), MaxTokens: 1 << 20, MaxMessages: 1}
	switch mode {
	case "default":
		// Sources nil: what a Query draws on by default (memories,
		// episodes and the graph).
	case "bm25":
		q.Sources, q.Retrieval = []memory.Source{memory.SourceEpisodes}, memory.RetrievalLexical
	case "vector":
		q.Sources, q.Retrieval = []memory.Source{memory.SourceEpisodes}, memory.RetrievalVector
	case "hybrid":
		q.Sources = []memory.Source{memory.SourceEpisodes}
	case "graph":
		q.Sources = []memory.Source{memory.SourceEpisodes, memory.SourceGraph}
	default:
		return q, false
	}
	return q, true
}

// message returns turn i of a session as a message: the first speaker's
// turns are user messages and the second speaker's assistant messages,
// named after the speaker, a second apart from the session's date, with an
// image's caption after the text as "[image: ...]". It reports false for
// a turn with no text.
func (s *LocomoSample) message(sess *LocomoSession, i int) (memory.Message, bool) {
	t := &sess.Turns[i]
	role := memory.RoleUser
	if t.Speaker == s.Speakers[1] {
		role = memory.RoleAssistant
	}
	text := t.Text
	if t.Caption != "" {
		text += " [image: " + t.Caption + "]"
	}
	if strings.TrimSpace(text) == "" {
		return memory.Message{}, false
	}
	return memory.Message{Role: role, Name: t.Speaker, Content: text, Time: sess.Time.Add(time.Duration(i) * time.Second)}, true
}

// IngestLocomo writes a sample's sessions into store, one session of the
// user named by the sample's id per LoCoMo session, each in one
// transaction; the first speaker's turns are user messages and the second
// speaker's assistant messages, named after the speaker, at the session's
// date. An image's caption follows the text as "[image: ...]". It returns
// the dia id of each message id.
func IngestLocomo(ctx context.Context, store *memory.Store, tenant string, s *LocomoSample) (map[string]string, error) {
	ids := map[string]string{}
	for _, sess := range s.Sessions {
		scope := memory.Scope{Tenant: tenant, User: s.ID, Session: fmt.Sprintf("session_%d", sess.N)}
		var b memory.Batch
		var dia []string
		for i, t := range sess.Turns {
			m, ok := s.message(&sess, i)
			if !ok {
				continue
			}
			m.Metadata = map[string]string{"dia_id": t.DiaID}
			b.Append(scope, m)
			dia = append(dia, t.DiaID)
		}
		if b.Len() == 0 {
			continue
		}
		res, err := store.Write(ctx, &b)
		if err != nil {
			return nil, fmt.Errorf("bench: ingest %s session %d: %w", s.ID, sess.N, err)
		}
		for i, id := range res.MessageIDs {
			ids[id] = dia[i]
		}
	}
	return ids, nil
}

// LocomoOptions configures RunLocomo.
type LocomoOptions struct {
	// Modes to run; nil means "default".
	Modes []string
	// Store opens the fresh store each conversation is ingested into; nil
	// means an in-memory store with default options.
	Store func() (*memory.Store, error)
	// Progress, when set, receives a line per conversation.
	Progress io.Writer
}

// RunLocomo ingests each sample into a fresh store and scores evidence
// recall@k of every mode over the questions of categories 1 to 4: for each
// question, the share of its evidence turns among the top k turns Recall
// ranks (from a new session of the same user), averaged over the
// questions. Questions without evidence are left out.
//
// Every kind of item points at turns: an episode is a turn; a memory
// points at the turns of the messages in its Source, and a fact at the
// turn of the message in its Source (what extraction writes; memories
// and facts with other sources point nowhere). The ranked turns are the
// candidates' turns in the Recall's final order, each turn once, at the
// rank of its first appearance: a memory and the message it came from
// take one place of the top k, not two. See rankedTurns.
func RunLocomo(ctx context.Context, samples []LocomoSample, opts LocomoOptions) ([]LocomoRow, error) {
	modes := opts.Modes
	if len(modes) == 0 {
		modes = []string{"default"}
	}
	for _, m := range modes {
		if _, ok := locomoQuery(m); !ok {
			return nil, fmt.Errorf("bench: unknown locomo mode %q (have %v)", m, LocomoModes)
		}
	}
	open := opts.Store
	if open == nil {
		open = func() (*memory.Store, error) { return memory.Open("", nil) }
	}
	// sums[mode][category][k]
	type acc struct {
		sum float64
		n   int
	}
	sums := map[string]map[string]map[int]*acc{}
	add := func(mode, cat string, k int, v float64) {
		if sums[mode] == nil {
			sums[mode] = map[string]map[int]*acc{}
		}
		if sums[mode][cat] == nil {
			sums[mode][cat] = map[int]*acc{}
		}
		a := sums[mode][cat][k]
		if a == nil {
			a = &acc{}
			sums[mode][cat][k] = a
		}
		a.sum += v
		a.n++
	}
	for si := range samples {
		s := &samples[si]
		store, err := open()
		if err != nil {
			return nil, err
		}
		began := time.Now()
		dia, err := IngestLocomo(ctx, store, "locomo", s)
		if err == nil {
			// Memories and facts are formed in the background: wait for
			// them, as an agent's next session would find them.
			err = store.Flush(ctx)
		}
		if err != nil {
			store.Close()
			return nil, err
		}
		ingest := time.Since(began)
		questions := 0
		for _, mode := range modes {
			q, _ := locomoQuery(mode)
			q.Scope = memory.Scope{Tenant: "locomo", User: s.ID, Session: "questions"}
			for _, qa := range s.QA {
				if qa.Category < 1 || qa.Category > 4 || len(qa.Evidence) == 0 {
					continue
				}
				q.Text = qa.Question
				rec, err := store.Recall(ctx, q)
				if err != nil {
					store.Close()
					return nil, fmt.Errorf("bench: %s %q: %w", s.ID, qa.Question, err)
				}
				ranked := rankedTurns(rec, dia)
				ev := map[string]bool{}
				for _, e := range qa.Evidence {
					ev[e] = true
				}
				for _, k := range LocomoKs {
					hit := 0
					for _, d := range ranked[:min(k, len(ranked))] {
						if ev[d] {
							hit++
							ev[d] = false // a turn counts once
						}
					}
					for d := range ev {
						ev[d] = true
					}
					r := float64(hit) / float64(len(ev))
					add(mode, strconv.Itoa(qa.Category), k, r)
					add(mode, "all", k, r)
				}
				questions++
			}
		}
		if err := store.Close(); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "%s: %d sessions ingested in %v, %d question runs\n", s.ID, len(s.Sessions), ingest.Round(time.Millisecond), questions)
		}
	}
	var rows []LocomoRow
	for _, mode := range modes {
		cats := make([]string, 0, len(sums[mode]))
		for c := range sums[mode] {
			cats = append(cats, c)
		}
		sort.Strings(cats) // "1" < ... < "4" < "all"
		for _, c := range cats {
			for _, k := range LocomoKs {
				if a := sums[mode][c][k]; a != nil {
					rows = append(rows, LocomoRow{Mode: mode, Category: c, K: k, Recall: a.sum / float64(a.n), Questions: a.n})
				}
			}
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("bench: locomo: no question with evidence in categories 1-4")
	}
	return rows, nil
}

// rankedTurns returns the dia ids of the turns a Recall ranked, best
// first, each once at the rank of its first appearance: its trace's
// candidates in final order, whether or not they fit the context, except
// those dropped as duplicates or for the query's filters. An episode is
// the turn of its message; a memory or a fact in the context (rec.Items)
// gives the turns of the message ids in its Source, in order. A memory or
// fact dropped before the context was filled ("top k") was never read, so
// its sources are unknown: it gives no turn, and RunLocomo asks for twice
// the largest k items so that those counted are enough.
func rankedTurns(rec *memory.Recollection, dia map[string]string) []string {
	type key struct {
		src memory.Source
		id  string
	}
	items := make(map[key]*memory.Item, len(rec.Items))
	for i := range rec.Items {
		it := &rec.Items[i]
		items[key{it.Source, it.ID}] = it
	}
	var out []string
	seen := map[string]bool{}
	add := func(msg string) {
		if d, ok := dia[msg]; ok && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, c := range rec.Trace.Candidates {
		if c.Reason != "" && c.Reason != "top k" && c.Reason != "budget" {
			continue
		}
		if c.Source == memory.SourceEpisodes {
			add(c.ID)
			continue
		}
		it := items[key{c.Source, c.ID}]
		switch {
		case it == nil:
		case it.Memory != nil:
			for _, src := range it.Memory.Source {
				add(src)
			}
		case it.Fact != nil:
			add(it.Fact.Source)
		}
	}
	return out
}

// WriteLocomoTable prints rows as a table: one line per mode and category,
// a column per k.
func WriteLocomoTable(w io.Writer, rows []LocomoRow) error {
	type key struct{ mode, cat string }
	var order []key
	vals := map[key]map[int]float64{}
	qs := map[key]int{}
	for _, r := range rows {
		k := key{r.Mode, r.Category}
		if vals[k] == nil {
			vals[k] = map[int]float64{}
			order = append(order, k)
		}
		vals[k][r.K] = r.Recall
		qs[k] = r.Questions
	}
	var b strings.Builder
	b.WriteString("| mode | category | questions |")
	for _, k := range LocomoKs {
		fmt.Fprintf(&b, " R@%d |", k)
	}
	b.WriteString("\n|---|---|---|")
	for range LocomoKs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, k := range order {
		fmt.Fprintf(&b, "| %s | %s | %d |", k.mode, k.cat, qs[k])
		for _, kk := range LocomoKs {
			fmt.Fprintf(&b, " %.3f |", vals[k][kk])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
