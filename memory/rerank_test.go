package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// episodeOrder returns the texts of the episodes a Recall ranked, best
// first, from its trace.
func episodeOrder(rec *Recollection) []string {
	var out []string
	for _, c := range rec.Trace.Candidates {
		if c.Source == SourceEpisodes && c.Text != "" && (c.Kept || c.Reason == "top k" || c.Reason == "budget") {
			out = append(out, c.Text)
		}
	}
	return out
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestRecallEchoQuestion: a user who asked "Who owns my renewal?" before
// must not get that question back above the message that answers it,
// though BM25 ranks the exact copy first; the reply that followed the
// question takes its place. Fails with echoFactor 1, or with replies
// returning none.
func TestRecallEchoQuestion(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, &Options{Extraction: ExtractOff})
	at := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	u := Scope{Tenant: "t", User: "u"}
	write := func(sess string, msgs ...Message) {
		for i := range msgs {
			msgs[i].Time = at
			at = at.Add(time.Minute)
		}
		mustAppend(t, s.Session(Scope{Tenant: u.Tenant, User: u.User, Session: sess}), msgs...)
	}
	write("monday", user("Who owns my renewal?"), asst("The renewal owner is Dana, since the reorg."))
	write("tuesday", user("Who owns my renewal?"), asst("Still Dana."))
	write("wednesday", user("Dana took over my renewal last month."), asst("Noted."))
	rec, err := s.Recall(ctx, Query{Trace: true, Scope: Scope{Tenant: "t", User: "u", Session: "now"}, Text: "Who owns my renewal?", TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	order := episodeOrder(rec)
	echo := indexOf(order, "Who owns my renewal?")
	for _, answer := range []string{"The renewal owner is Dana, since the reorg.", "Dana took over my renewal last month."} {
		if a := indexOf(order, answer); a < 0 || (echo >= 0 && echo < a) {
			t.Fatalf("episodes ranked %q: the earlier question is above %q", order, answer)
		}
	}
	var boosted, replied bool
	for _, c := range rec.Trace.Candidates {
		boosted = boosted || (c.Text == "Who owns my renewal?" && c.Boost > 0 && c.Boost < 1)
		replied = replied || (c.Text == "Still Dana." && c.Ranks["reply"] == 1)
	}
	if !boosted || !replied {
		t.Fatalf("trace: echo demoted %v, reply ranked %v; want both", boosted, replied)
	}
}

// TestRecallTimeSpan: a query that names a time ("last week") ranks what
// was said in that span above a better lexical match from earlier, and the
// trace shows the span. Fails with whenBoost 1.
func TestRecallTimeSpan(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, &Options{Extraction: ExtractOff})
	old := Message{Role: RoleUser, Content: "I went hiking, a long hiking day, with Alex.", Time: time.Date(2023, 3, 1, 9, 0, 0, 0, time.UTC)}
	recent := Message{Role: RoleUser, Content: "I went hiking with Sam.", Time: time.Date(2023, 5, 2, 9, 0, 0, 0, time.UTC)}
	mustAppend(t, s.Session(Scope{Tenant: "t", User: "u", Session: "march"}), old)
	mustAppend(t, s.Session(Scope{Tenant: "t", User: "u", Session: "may"}), recent)
	q := Query{Trace: true, Scope: Scope{Tenant: "t", User: "u", Session: "now"}, Text: "Who did I go hiking with?", Now: time.Date(2023, 5, 8, 12, 0, 0, 0, time.UTC)}
	rec, err := s.Recall(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if order := episodeOrder(rec); len(order) < 2 || order[0] != old.Content {
		t.Fatalf("without a time, episodes ranked %q; want the better match first", order)
	}
	q.Text = "Who did I go hiking with last week?"
	if rec, err = s.Recall(ctx, q); err != nil {
		t.Fatal(err)
	}
	if order := episodeOrder(rec); len(order) < 2 || order[0] != recent.Content {
		t.Fatalf("episodes ranked %q; want last week's first", order)
	}
	w := rec.Trace.When
	if w == nil || w.Phrase != "last week" || !w.From.Equal(time.Date(2023, 4, 24, 0, 0, 0, 0, time.UTC)) || !w.To.Equal(time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Trace.When = %+v; want last week, [24 April, 8 May 2023)", w)
	}
}

// TestRuleSpanOf pins the span of every form the date resolver renders.
func TestRuleSpanOf(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		resolved string
		from, to time.Time
	}{
		{"on Sunday 7 May 2023", day(2023, 5, 7), day(2023, 5, 8)},
		{"on 3 May 2021", day(2021, 5, 3), day(2021, 5, 4)},
		{"in April 2023", day(2023, 4, 1), day(2023, 5, 1)},
		{"in 2019", day(2019, 1, 1), day(2020, 1, 1)},
		{"the week of 8 May 2023", day(2023, 5, 1), day(2023, 5, 9)},
		{"the weekend of 8 May 2023", day(2023, 5, 5), day(2023, 5, 9)},
		{"the week before 8 May 2023", day(2023, 4, 24), day(2023, 5, 8)},
		{"the weekend before 8 May 2023", day(2023, 4, 28), day(2023, 5, 8)},
		{"a few days before 8 May 2023", day(2023, 4, 28), day(2023, 5, 8)},
		{"a few weeks before 8 May 2023", day(2023, 3, 13), day(2023, 5, 1)},
		{"a few months before 8 May 2023", day(2022, 9, 8), day(2023, 4, 8)},
		{"a few years before 8 May 2023", day(2015, 5, 8), day(2022, 5, 8)},
		{"2 weeks before 8 May 2023", day(2023, 4, 17), day(2023, 5, 1)},
	} {
		from, to, ok := ruleSpanOf(c.resolved, time.UTC)
		if !ok || !from.Equal(c.from) || !to.Equal(c.to) {
			t.Errorf("%q: [%v, %v) ok=%v; want [%v, %v)", c.resolved, from, to, ok, c.from, c.to)
		}
	}
	if _, _, ok := ruleSpanOf("last summer (before 8 May 2023)", time.UTC); ok {
		t.Error("last summer has a span; it should have none")
	}
}

// TestRecallReplyToQuestion: a question that matches the query brings in
// the message that answered it, which shares none of the query's words,
// at replyShare of the question's score. Fails with replyShare 0.
func TestRecallReplyToQuestion(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, &Options{Extraction: ExtractOff})
	at := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	sess := s.Session(Scope{Tenant: "t", User: "u", Session: "planning"})
	msgs := []Message{
		user("Where should we hold the team offsite in June?"),
		asst("The lighthouse in Brest, booked for the 12th."),
		user("Thanks, and the budget for it?"),
		asst("Four thousand euros."),
	}
	for i := range msgs {
		msgs[i].Time = at.Add(time.Duration(i) * time.Minute)
	}
	mustAppend(t, sess, msgs...)
	// Messages that match worse than the question and better than the
	// reply (indexed with the question before it at half weight), so that
	// BM25 alone ranks the reply far below its question.
	for i := range 12 {
		mustAppend(t, s.Session(Scope{Tenant: "t", User: "u", Session: fmt.Sprintf("other%d", i)}),
			Message{Role: RoleUser, Content: fmt.Sprintf("Team offsite photos, album %d.", i), Time: at.Add(time.Hour)})
	}
	rec, err := s.Recall(ctx, Query{Trace: true, Scope: Scope{Tenant: "t", User: "u", Session: "now"}, Text: "Where is the team offsite held?", TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	var question, reply *Candidate
	for i := range rec.Trace.Candidates {
		switch c := &rec.Trace.Candidates[i]; c.Text {
		case msgs[0].Content:
			question = c
		case msgs[1].Content:
			reply = c
		}
	}
	if question == nil || reply == nil || reply.Ranks["reply"] != 1 || !reply.Kept {
		t.Fatalf("question %+v, reply %+v: want the reply kept, ranked by the question", question, reply)
	}
	if want := replyShare * question.Fused; reply.Fused < want*0.999 || reply.Fused > want*1.001 {
		t.Fatalf("reply fused %v; want %v × the question's %v", reply.Fused, replyShare, question.Fused)
	}
}

// TestNextMessage: the message after the last of a session is none, never
// the first of the next session in key order; a tool call and its result
// are passed over. Fails with the role and tool-call check removed.
func TestNextMessage(t *testing.T) {
	s := openMem(t, &Options{Extraction: ExtractOff})
	a := Scope{Tenant: "t", User: "u", Session: "a"}
	b := Scope{Tenant: "t", User: "u", Session: "b"}
	mustAppend(t, s.Session(a), user("one?"), asst("two"))
	mustAppend(t, s.Session(b), user("three"))
	c := Scope{Tenant: "t", User: "u", Session: "c"}
	mustAppend(t, s.Session(c), user("can we add seats?"), call("q1"), result("q1"), asst("yes, for EUR 60"))
	msgs, err := s.Session(a).Messages(context.Background(), MessagesOptions{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages %v, %v", msgs, err)
	}
	tools, err := s.Session(c).Messages(context.Background(), MessagesOptions{})
	if err != nil || len(tools) != 4 {
		t.Fatalf("messages %v, %v", tools, err)
	}
	err = s.db.View(context.Background(), func(tx *engine.Tx) error {
		if id, ok, err := s.nextMessage(tx, a, msgs[0].ID); err != nil || !ok || id != msgs[1].ID {
			t.Errorf("after the first: %q %v %v; want %q", id, ok, err, msgs[1].ID)
		}
		if id, ok, err := s.nextMessage(tx, a, msgs[1].ID); err != nil || ok {
			t.Errorf("after the last: %q %v %v; want none", id, ok, err)
		}
		if id, ok, err := s.nextMessage(tx, c, tools[0].ID); err != nil || !ok || id != tools[3].ID {
			t.Errorf("after a question answered through a tool: %q %v %v; want the answer %q", id, ok, err, tools[3].ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecallRepliesPastUnanswered: a matching question with no message
// after it does not stop the replies to the other questions from being
// promoted. Fails when replies stops at the first question with no reply.
func TestRecallRepliesPastUnanswered(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, &Options{Extraction: ExtractOff})
	at := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	put := func(sess string, msgs ...Message) {
		for i := range msgs {
			msgs[i].Time = at
			at = at.Add(time.Minute)
		}
		mustAppend(t, s.Session(Scope{Tenant: "t", User: "u", Session: sess}), msgs...)
	}
	// The best match is a question left unanswered, the last of its
	// session; the second one was answered.
	put("a", user("Where should we hold the team offsite in June, the team offsite?"))
	put("b", user("Where should we hold the team offsite in June?"), asst("The lighthouse in Brest, booked for the 12th."))
	for i := range 12 {
		put(fmt.Sprintf("other%d", i), Message{Role: RoleUser, Content: fmt.Sprintf("Team offsite photos, album %d.", i)})
	}
	rec, err := s.Recall(ctx, Query{Trace: true, Scope: Scope{Tenant: "t", User: "u", Session: "now"}, Text: "Where is the team offsite held?", TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Trace.Candidates {
		if c.Text == "The lighthouse in Brest, booked for the 12th." {
			if c.Ranks["reply"] != 1 || !c.Kept {
				t.Fatalf("the answer %+v: want it promoted as a reply and kept", c)
			}
			return
		}
	}
	t.Fatalf("the answer is not among the candidates: %q", episodeOrder(rec))
}
