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
		var msgs []memory.Message
		var dia []string
		for i, t := range sess.Turns {
			m, ok := s.message(&sess, i)
			if !ok {
				continue
			}
			m.Metadata = map[string]string{"dia_id": t.DiaID}
			msgs = append(msgs, m)
			dia = append(dia, t.DiaID)
		}
		if err := writeSession(ctx, store, scope, msgs, dia, ids); err != nil {
			return nil, fmt.Errorf("bench: ingest %s session %d: %w", s.ID, sess.N, err)
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
// take one place of the top k, not two. TopK is twice the largest k:
// memories and facts that come from a turn already ranked give no new
// turn, and the items past them must still fill the top k turns. See
// rankedKeys.
func RunLocomo(ctx context.Context, samples []LocomoSample, opts LocomoOptions) ([]LocomoRow, error) {
	modes, open, err := conversationSetup("locomo", opts.Modes, opts.Store)
	if err != nil {
		return nil, err
	}
	sums := means{}
	for si := range samples {
		if err := runLocomoSample(ctx, open, &samples[si], modes, sums, opts.Progress); err != nil {
			return nil, err
		}
	}
	var rows []LocomoRow
	for _, mode := range modes {
		for _, c := range sums.groups(mode) { // "1" < ... < "4", then "all"
			for i, k := range LocomoKs {
				if a := sums[meanKey{mode, c, i}]; a != nil {
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

// askedAt is when the questions of s are asked: the day after its last
// dated session, so that "last year" or "in July" in a question means what
// it meant to the people who wrote it; zero (the current time) when no
// session is dated.
func (s *LocomoSample) askedAt() time.Time {
	var last time.Time
	for _, sess := range s.Sessions {
		if sess.Time.After(last) {
			last = sess.Time
		}
	}
	if last.IsZero() {
		return last
	}
	return last.AddDate(0, 0, 1)
}

// runLocomoSample ingests one sample into a fresh store and adds the
// recall@k of each of its questions to sums, per mode, category and k.
func runLocomoSample(ctx context.Context, open func() (*memory.Store, error), s *LocomoSample, modes []string, sums means, progress io.Writer) error {
	store, err := open()
	if err != nil {
		return err
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
		return err
	}
	ingest := time.Since(began)
	questions := 0
	for _, mode := range modes {
		q, _ := modeQuery(mode, 2*slices.Max(LocomoKs))
		q.Scope = memory.Scope{Tenant: "locomo", User: s.ID, Session: "questions"}
		q.Now = s.askedAt()
		for _, qa := range s.QA {
			if qa.Category < 1 || qa.Category > 4 || len(qa.Evidence) == 0 {
				continue
			}
			q.Text = qa.Question
			rec, err := store.Recall(ctx, q)
			if err != nil {
				store.Close()
				return fmt.Errorf("bench: %s %q: %w", s.ID, qa.Question, err)
			}
			ranked := rankedKeys(rec, dia)
			for i, k := range LocomoKs {
				r := evidenceRecall(ranked[:min(k, len(ranked))], qa.Evidence)
				sums.add(mode, strconv.Itoa(qa.Category), i, r)
				sums.add(mode, "all", i, r)
			}
			questions++
		}
	}
	if err := store.Close(); err != nil {
		return err
	}
	if progress != nil {
		fmt.Fprintf(progress, "%s: %d sessions ingested in %v, %d question runs\n", s.ID, len(s.Sessions), ingest.Round(time.Millisecond), questions)
	}
	return nil
}

// evidenceRecall returns the share of the distinct evidence turns among
// top.
func evidenceRecall(top, evidence []string) float64 {
	ev := map[string]bool{}
	for _, e := range evidence {
		ev[e] = true
	}
	hit := 0
	for _, d := range top {
		if ev[d] {
			hit++
			ev[d] = false // a turn counts once
		}
	}
	return float64(hit) / float64(len(ev))
}

// WriteLocomoTable prints rows as a table: one line per mode and category,
// a column per k.
func WriteLocomoTable(w io.Writer, rows []LocomoRow) error {
	cols := make([]string, len(LocomoKs))
	for i, k := range LocomoKs {
		cols[i] = fmt.Sprintf("R@%d", k)
	}
	var lines []tableLine
	for _, r := range rows {
		i := slices.Index(LocomoKs, r.K)
		if i < 0 {
			continue
		}
		lines = addTableValue(lines, r.Mode, r.Category, r.Questions, i, len(LocomoKs), r.Recall)
	}
	return writeTable(w, "category", cols, lines)
}
