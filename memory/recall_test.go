package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// TestFusionOrder checks reciprocal-rank fusion on hand-built lists.
func TestFusionOrder(t *testing.T) {
	hit := func(id, text string) engine.Hit {
		return engine.Hit{Record: engine.Record{ID: id, Text: text}}
	}
	f := newFusion()
	// a is 2nd and 1st; b is 1st in one list only; c is 3rd and 2nd;
	// d is 3rd in one list only.
	f.addHits("episodes.vector", SourceEpisodes, []engine.Hit{hit("b", "bee"), hit("a", "ay"), hit("c", "see")})
	f.addHits("episodes.bm25", SourceEpisodes, []engine.Hit{hit("a", "ay"), hit("c", "see"), hit("d", "dee")})
	cands := f.rank(&Query{Trace: true}, nil)
	var order []string
	for _, c := range cands {
		order = append(order, c.ID)
	}
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(order, want) {
		t.Fatalf("fused order %v, want %v", order, want)
	}
	a := cands[0]
	if want := 1/61.0 + 1/62.0; math.Abs(a.Fused-want) > 1e-12 || a.rankOf("episodes.vector") != 2 || a.rankOf("episodes.bm25") != 1 || a.Rank != 1 {
		t.Fatalf("a: %+v (fused want %v)", a, want)
	}

	// Decay: with a half-life, an old item loses to a newer one it beat.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f = newFusion()
	old := engine.Hit{Record: engine.Record{ID: "old", Text: "old", Time: now.Add(-30 * 24 * time.Hour)}}
	fresh := engine.Hit{Record: engine.Record{ID: "new", Text: "new", Time: now.Add(-time.Hour)}}
	f.addHits("episodes.bm25", SourceEpisodes, []engine.Hit{old, fresh})
	cands = f.rank(&Query{Trace: true, Now: now, HalfLife: 7 * 24 * time.Hour}, nil)
	if cands[0].ID != "new" {
		t.Fatalf("decay: %s first", cands[0].ID)
	}

	// The window's and out-of-range candidates are dropped with a reason.
	f = newFusion()
	f.addHits("memories.vector", SourceMemories, []engine.Hit{hit("m1", "one"), hit("m2", "two")})
	cands = f.rank(&Query{Trace: true}, map[string]bool{"m2": true})
	if cands[0].Reason != "" || cands[1].Reason != "in window" {
		t.Fatalf("reasons: %q %q", cands[0].Reason, cands[1].Reason)
	}
}

// TestRecallDropsDuplicates: the same text from two sources (a memory and
// the message it came from) is in the context once.
func TestRecallDropsDuplicates(t *testing.T) {
	s := openMem(t, nil)
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "s1"}), user("Alice likes green tea."))
	id := mustRemember(t, s, alice, Memory{Text: "alice likes  GREEN tea."})
	rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: "green tea", Sources: []Source{SourceMemories, SourceEpisodes}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) != 1 {
		t.Fatalf("items %+v", rec.Items)
	}
	dropped := 0
	for _, c := range rec.Trace.Candidates {
		if strings.HasPrefix(c.Reason, "duplicate of ") {
			dropped++
			if c.Reason != "duplicate of "+rec.Items[0].ID {
				t.Fatalf("reason %q", c.Reason)
			}
		}
	}
	if dropped != 1 || (rec.Items[0].ID != id && rec.Items[0].Source != SourceEpisodes) {
		t.Fatalf("dropped %d, kept %+v", dropped, rec.Items[0])
	}
}

// TestRecallAcrossSessions is the seeds' scenario: a user states a fact in
// one session; in a new session, Recall for a follow-up surfaces it.
func TestRecallAcrossSessions(t *testing.T) {
	s := openMem(t, &Options{Extraction: ExtractOff}) // hand-fed: formation is TestFormationRecallAcrossSessions
	s1 := s.Session(Scope{Tenant: "acme", User: "alice", Session: "monday"})
	mustAppend(t, s1,
		user("Hi, I need help with my subscription."),
		asst("Sure, what is going on?"),
		user("My renewal owner is Dana, she handles the contract."),
		asst("Thanks, noted that Dana owns your renewal."),
		user("Also the weather is lovely today."),
	)
	s2 := Scope{Tenant: "acme", User: "alice", Session: "friday"}
	mustAppend(t, s.Session(s2), user("Who owns my renewal again?"))
	rec, err := s.Recall(bg, Query{Trace: true, Scope: s2, Text: "Who owns my renewal again?", Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) == 0 || rec.Items[0].Source != SourceEpisodes || !strings.Contains(rec.Items[0].Text, "Dana") {
		t.Fatalf("first item: %+v", rec.Items)
	}
	if rec.Items[0].Session != "monday" {
		t.Fatalf("episode session %q", rec.Items[0].Session)
	}
	chat := rec.ChatMessages()
	if chat[0].Role != RoleSystem || !strings.Contains(chat[0].Content, "Dana") || !strings.Contains(chat[0].Content, "session monday") {
		t.Fatalf("preamble: %q", chat[0].Content)
	}
	if last := chat[len(chat)-1]; last.Content != "Who owns my renewal again?" {
		t.Fatalf("window last %+v", last)
	}
	// The question itself is in the window, so it is not recalled again.
	for _, c := range rec.Trace.Candidates {
		if c.Kept && strings.Contains(c.Text, "again?") {
			t.Fatalf("window message recalled: %+v", c)
		}
	}

	// From memories and the graph too.
	mustRemember(t, s, alice, Memory{Text: "Dana is Alice's renewal owner"})
	if _, err := s.Relate(bg, alice, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"}); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Recall(bg, Query{Trace: true, Scope: s2, Text: "Who is Alice's renewal owner?"})
	if err != nil {
		t.Fatal(err)
	}
	var sources []Source
	for _, it := range rec.Items {
		sources = append(sources, it.Source)
	}
	if !slices.Contains(sources, SourceMemories) || !slices.Contains(sources, SourceGraph) || !slices.Equal(rec.Trace.Entities, []string{"Alice"}) {
		t.Fatalf("sources %v, entities %v", sources, rec.Trace.Entities)
	}
}

// TestRecallTraceAccountsForAll checks that every candidate of every list
// is in the trace once, kept or with a reason, and that kept ones are the
// items.
func TestRecallTraceAccountsForAll(t *testing.T) {
	s := openMem(t, nil)
	seedRecall(t, s, rand.New(rand.NewPCG(1, 2)), 60)
	rec, err := s.Recall(bg, Query{Trace: true, Scope: Scope{Tenant: "acme", User: "alice", Session: "s0"}, Text: "project deadline Lisbon budget", TopK: 5, Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range rec.Trace.Lists {
		total += n
	}
	seen := map[string]bool{}
	listed := 0
	kept := 0
	for i, c := range rec.Trace.Candidates {
		key := string(c.Source) + "/" + c.ID
		if seen[key] {
			t.Fatalf("candidate %s twice", key)
		}
		seen[key] = true
		listed += len(c.Ranks)
		if c.Rank != i+1 {
			t.Fatalf("candidate %d has rank %d", i, c.Rank)
		}
		if c.Kept == (c.Reason != "") {
			t.Fatalf("candidate %s kept=%v reason=%q", key, c.Kept, c.Reason)
		}
		if c.Kept {
			if rec.Items[kept].ID != c.ID {
				t.Fatalf("item %d is %s, candidate %s", kept, rec.Items[kept].ID, c.ID)
			}
			kept++
		}
	}
	if listed != total || kept != len(rec.Items) || kept == 0 || kept > 5 {
		t.Fatalf("lists gave %d, trace has %d ranks; kept %d of %d items", total, listed, kept, len(rec.Items))
	}
}

// seedRecall fills alice's store with n random messages over a few
// sessions, memories and facts.
func seedRecall(t testing.TB, s *Store, r *rand.Rand, n int) {
	t.Helper()
	topics := []string{"project deadline", "trip to Lisbon", "budget review", "new laptop", "team offsite", "Dana", "renewal", "invoice 3942"}
	verbs := []string{"moved", "is due", "needs approval", "was cancelled", "looks fine", "went over"}
	sentence := func() string {
		return fmt.Sprintf("The %s %s on %s.", topics[r.IntN(len(topics))], verbs[r.IntN(len(verbs))], []string{"Monday", "Friday", "the 3rd", "next week"}[r.IntN(4)])
	}
	for i := range n {
		sess := s.Session(Scope{Tenant: "acme", User: "alice", Session: fmt.Sprintf("s%d", i%4)})
		role := user
		if i%2 == 1 {
			role = asst
		}
		mustAppend(t, sess, role(sentence()+" "+sentence()))
		if i%5 == 0 {
			if _, err := s.Remember(bg, alice, Memory{Text: sentence(), Importance: r.Float64()}); err != nil {
				t.Fatal(err)
			}
		}
		if i%7 == 0 {
			f := Fact{Subject: topics[r.IntN(len(topics))], Predicate: "relates_to", Object: topics[r.IntN(len(topics))]}
			if f.Subject != f.Object {
				if _, err := s.Relate(bg, alice, f); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestRecallBudgetProperty: whatever the store and the budget, the context
// never exceeds MaxTokens, counted exactly on the chat messages.
func TestRecallBudgetProperty(t *testing.T) {
	s := openMem(t, nil)
	r := rand.New(rand.NewPCG(7, 8))
	seedRecall(t, s, r, 80)
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "s1"}), sys("You are a careful assistant."))
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for i := range rounds {
		q := Query{Trace: true,
			Scope:       Scope{Tenant: "acme", User: "alice", Session: fmt.Sprintf("s%d", r.IntN(5))},
			Text:        []string{"deadline", "Lisbon trip budget", "who is Dana", "invoice 3942 renewal", ""}[r.IntN(5)],
			MaxTokens:   40 + r.IntN(600),
			MaxMessages: 1 + r.IntN(10),
			TopK:        1 + r.IntN(20),
			Sources:     []Source{SourceMemories, SourceEpisodes, SourceGraph},
			MMR:         []float64{0, 0.5}[r.IntN(2)],
		}
		rec, err := s.Recall(bg, q)
		if errors.Is(err, ErrBudgetTooSmall) {
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		got, err := s.CountTokens(rec.ChatMessages()...)
		if err != nil {
			t.Fatal(err)
		}
		if got > q.MaxTokens || got > rec.Trace.TokensUsed || rec.Trace.TokensUsed > q.MaxTokens {
			t.Fatalf("round %d: context of %d tokens (trace says %d), budget %d", i, got, rec.Trace.TokensUsed, q.MaxTokens)
		}
		if len(rec.Items) > q.TopK {
			t.Fatalf("round %d: %d items, TopK %d", i, len(rec.Items), q.TopK)
		}
	}
}

// TestRecallTinyBudget: a budget too small for any window or preamble
// returns an empty context at once, never more tokens than asked and never
// a hang (a window share that rounds to zero once meant "no token bound").
func TestRecallTinyBudget(t *testing.T) {
	s := openMem(t, nil)
	r := rand.New(rand.NewPCG(9, 10))
	seedRecall(t, s, r, 20)
	done := make(chan error, 1)
	go func() {
		for budget := 1; budget <= 64; budget++ {
			rec, err := s.Recall(bg, Query{Trace: true,
				Scope:     Scope{Tenant: "acme", User: "alice", Session: "s1"},
				Text:      "Lisbon trip budget",
				MaxTokens: budget,
				Sources:   []Source{SourceMemories, SourceEpisodes, SourceGraph},
			})
			if err != nil {
				done <- fmt.Errorf("budget %d: %w", budget, err)
				return
			}
			got, err := s.CountTokens(rec.ChatMessages()...)
			if err != nil {
				done <- err
				return
			}
			if got > budget || rec.Trace.TokensUsed > budget {
				done <- fmt.Errorf("budget %d: context of %d tokens (trace says %d)", budget, got, rec.Trace.TokensUsed)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Recall with a tiny budget did not return within a minute")
	}
}

func TestRecallBadQuery(t *testing.T) {
	s := openMem(t, nil)
	for name, q := range map[string]Query{
		"no user":   {Scope: Scope{Tenant: "acme"}, Text: "x"},
		"tokens":    {Scope: alice, MaxTokens: -1},
		"topk":      {Scope: alice, TopK: MaxTopK + 1},
		"hops":      {Scope: alice, Hops: 99},
		"mmr":       {Scope: alice, MMR: 2},
		"source":    {Scope: alice, Sources: []Source{"web"}},
		"retrieval": {Scope: alice, Retrieval: 9},
		"range":     {Scope: alice, Since: time.Now(), Until: time.Now().Add(-time.Hour)},
	} {
		if _, err := s.Recall(bg, q); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRecallMMR: with MMR on, a near-copy of the best item yields to a
// different one.
func TestRecallMMR(t *testing.T) {
	s := openMem(t, &Options{DedupThreshold: -1})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip budget is 2000 euros for flights and hotel"})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip budget is 2000 euros for flights and the hotel"})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip starts on May 3"})
	q := Query{Trace: true, Scope: alice, Text: "Lisbon trip budget 2000 euros flights hotel", TopK: 2}
	plain, err := s.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	q.MMR = 0.5
	div, err := s.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	has := func(rec *Recollection, sub string) bool {
		for _, it := range rec.Items {
			if strings.Contains(it.Text, sub) {
				return true
			}
		}
		return false
	}
	if has(plain, "May 3") || !has(div, "May 3") {
		t.Fatalf("plain %+v\nmmr %+v", plain.Items, div.Items)
	}
}

func TestEntityLinking(t *testing.T) {
	ns := &nameSet{names: map[string]string{
		"alice": "Alice", "new york": "New York", "ny": "New York", "acme-corp": "Acme-Corp", "a": "A",
	}, maxWords: 2}
	got := ns.link("Did ALICE move to new  york, or to NY? Ask acme-corp. A note; alicevision is not alice.")
	if want := []string{"Alice", "New York", "Acme-Corp"}; !slices.Equal(got, want) {
		t.Fatalf("linked %v, want %v", got, want)
	}
	if got := ns.link(""); len(got) != 0 {
		t.Fatalf("empty text linked %v", got)
	}
}

// TestRecallGraphNamesFollowWrites: a fact written after a Recall is found
// by the next one (the name cache is invalidated).
func TestRecallGraphNamesFollowWrites(t *testing.T) {
	s := openMem(t, nil)
	q := Query{Trace: true, Scope: alice, Text: "What does Zed own?", Sources: []Source{SourceGraph}}
	rec, err := s.Recall(bg, q)
	if err != nil || len(rec.Items) != 0 {
		t.Fatalf("empty graph: %+v, %v", rec, err)
	}
	var b Batch
	b.Relate(alice, Fact{Subject: "Zed", Predicate: "owns", Object: "the red bike"})
	if _, err := s.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Recall(bg, q)
	if err != nil || len(rec.Items) != 1 || rec.Items[0].Fact.Object != "the red bike" {
		t.Fatalf("after write: %+v, %v", rec.Items, err)
	}
	if !strings.Contains(rec.Preamble, "Zed —owns→ the red bike") {
		t.Fatalf("preamble %q", rec.Preamble)
	}
}

// TestNameCacheEraseDuringBuild: a user forgotten while their name set is
// being read (in a store just reopened, so no write marked the graph) does
// not leave that set cached: the next Recall links nothing.
func TestNameCacheEraseDuringBuild(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Relate(bg, alice, Fact{Subject: "Zed", Predicate: "owns", Object: "the red bike"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.nameCache.built = func() {
		s.nameCache.built = nil
		if err := s.Forget(bg, alice); err != nil {
			t.Error(err)
		}
	}
	q := Query{Trace: true, Scope: alice, Text: "What does Zed own?", Sources: []Source{SourceGraph}}
	if _, err := s.Recall(bg, q); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Trace.Entities) != 0 {
		t.Fatalf("a forgotten user's entities are still linked: %v", rec.Trace.Entities)
	}
}

// TestNameCacheOtherGraphWrites: a write to another user's graph while a
// name set is read does not keep that set out of the cache (under steady
// writes every Recall would read its names again).
func TestNameCacheOtherGraphWrites(t *testing.T) {
	s := openMem(t, nil)
	bob := Scope{Tenant: "acme", User: "bob"}
	if _, err := s.Relate(bg, alice, Fact{Subject: "Zed", Predicate: "owns", Object: "the red bike"}); err != nil {
		t.Fatal(err)
	}
	s.nameCache.built = func() {
		s.nameCache.built = nil
		if _, err := s.Relate(bg, bob, Fact{Subject: "Yan", Predicate: "owns", Object: "a boat"}); err != nil {
			t.Error(err)
		}
	}
	if _, err := s.names(bg, alice); err != nil {
		t.Fatal(err)
	}
	root, _ := graphRoot(alice)
	s.nameCache.mu.Lock()
	_, cached := s.nameCache.sets[string(root)]
	s.nameCache.mu.Unlock()
	if !cached {
		t.Fatal("alice's name set was not cached because bob's graph changed")
	}
}

// TestRollingSummary: as the window trims, the messages that left it are
// summarized; forgetting the session erases the summary.
func TestRollingSummary(t *testing.T) {
	s := openMem(t, &Options{SummaryTokens: 60})
	scope := Scope{Tenant: "acme", User: "alice", Session: "long"}
	sess := s.Session(scope)
	mustAppend(t, sess, sys("You are helpful."))
	for i := range 12 {
		mustAppend(t, sess, user(fmt.Sprintf("Question %d: the Lisbon budget line %d is approved.", i, i)), asst(fmt.Sprintf("Answer %d: noted.", i)))
	}
	rec, err := s.Recall(bg, Query{Trace: true, Scope: scope, Text: "Lisbon budget", MaxMessages: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Summary == "" || !strings.Contains(rec.Preamble, "Summary of this conversation") {
		t.Fatalf("no summary: %q", rec.Preamble)
	}
	n, _ := s.CountTokens(Message{Role: RoleSystem, Content: rec.Summary})
	if n > 60+tokensPerMessage+2 {
		t.Fatalf("summary of %d tokens, budget 60", n)
	}
	stored, err := sess.Summary(bg)
	if err != nil || stored != rec.Summary {
		t.Fatalf("stored summary %q, %v", stored, err)
	}
	// More messages leave the window: the summary rolls forward.
	mustAppend(t, sess, user("Question 99: the Porto hotel is booked."), asst("Answer 99: great."), user("ok"), asst("ok"), user("ok then"), asst("bye"))
	if _, err := s.Recall(bg, Query{Trace: true, Scope: scope, Text: "hotel", MaxMessages: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(bg, scope); err != nil {
		t.Fatal(err)
	}
	if got, err := sess.Summary(bg); err != nil || got != "" {
		t.Fatalf("summary after Forget: %q, %v", got, err)
	}
}

// summarizerFunc adapts a function to Summarizer.
type summarizerFunc func(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error)

func (f summarizerFunc) Summarize(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error) {
	return f(ctx, prev, msgs, maxTokens)
}

// TestSummaryNotRevivedByForget: a session forgotten while its summary is
// being refreshed (here, by the summarizer itself) gets no summary back.
func TestSummaryNotRevivedByForget(t *testing.T) {
	var s *Store
	scope := Scope{Tenant: "acme", User: "alice", Session: "gone"}
	s = openMem(t, &Options{Summarizer: summarizerFunc(func(ctx context.Context, prev string, msgs []Message, _ int) (string, error) {
		if err := s.Forget(ctx, scope); err != nil {
			return "", err
		}
		return "alice asked about Lisbon", nil
	})})
	sess := s.Session(scope)
	for i := range 8 {
		mustAppend(t, sess, user(fmt.Sprintf("Question %d about Lisbon.", i)), asst("Noted."))
	}
	rec, err := s.Recall(bg, Query{Trace: true, Scope: scope, Text: "Lisbon", MaxMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Summary != "" {
		t.Errorf("Recall returned the forgotten session's summary %q", rec.Summary)
	}
	if got, err := sess.Summary(bg); err != nil || got != "" {
		t.Fatalf("summary stored after Forget: %q, %v", got, err)
	}
	if n := countKeys(t, s, scope.Prefix(engine.LevelSession)); n != 0 {
		t.Fatalf("%d keys left under the forgotten session", n)
	}
}

// TestSummaryFurtherRefreshWins: when another refresh stored a summary
// that covers more while this one folded (here, the summarizer itself
// writes it), the refresh keeps that one and returns it, rather than
// store its own older fold over it.
func TestSummaryFurtherRefreshWins(t *testing.T) {
	var s *Store
	race := false
	scope := Scope{Tenant: "acme", User: "alice", Session: "race"}
	s = openMem(t, &Options{Summarizer: summarizerFunc(func(ctx context.Context, prev string, msgs []Message, _ int) (string, error) {
		if !race {
			return "first fold", nil
		}
		newest, err := s.Session(scope).Messages(ctx, MessagesOptions{Reverse: true, Limit: 1})
		if err != nil || len(newest) != 1 {
			return "", fmt.Errorf("newest message: %v", err)
		}
		id := ulid.MustParse(newest[0].ID)
		further := storedSummary{Text: "a refresh that got further", Through: id[:]}
		err = s.db.Update(ctx, func(tx *engine.Tx) error {
			return tx.Set(sessionPrefix(scope.Prefix(engine.LevelSession)).summary(), encodeSummary(&further))
		})
		return "second fold", err
	})})
	sess := s.Session(scope)
	q := Query{Scope: scope, Text: "Lisbon", MaxMessages: 2}
	for round := range 2 {
		for i := range 4 {
			mustAppend(t, sess, user(fmt.Sprintf("Question %d.%d about Lisbon.", round, i)), asst("Noted."))
		}
		race = round == 1 // the second refresh finds a stored summary
		rec, err := s.Recall(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"first fold", "a refresh that got further"}[round]
		if rec.Summary != want {
			t.Fatalf("round %d: Recall's summary %q, want %q", round, rec.Summary, want)
		}
		if got, err := sess.Summary(bg); err != nil || got != want {
			t.Fatalf("round %d: stored summary %q, %v; want %q", round, got, err, want)
		}
	}
}

// TestSummarizerFailureKeepsRecall: a failing summarizer leaves Recall
// working on the stored summary, and a later Recall catches up.
func TestSummarizerFailureKeepsRecall(t *testing.T) {
	down := true
	scope := Scope{Tenant: "acme", User: "alice", Session: "outage"}
	s := openMem(t, &Options{Summarizer: summarizerFunc(func(ctx context.Context, prev string, msgs []Message, _ int) (string, error) {
		if down {
			return "", errors.New("provider unavailable")
		}
		return fmt.Sprintf("%d messages about Lisbon", len(msgs)), nil
	})})
	sess := s.Session(scope)
	for i := range 8 {
		mustAppend(t, sess, user(fmt.Sprintf("Question %d about Lisbon.", i)), asst("Noted."))
	}
	q := Query{Trace: true, Scope: scope, Text: "Lisbon", MaxMessages: 2}
	rec, err := s.Recall(bg, q)
	if err != nil {
		t.Fatalf("Recall with the summarizer down: %v", err)
	}
	if rec.Summary != "" || len(rec.Window) != 2 {
		t.Fatalf("summary %q, window of %d", rec.Summary, len(rec.Window))
	}
	down = false
	if rec, err = s.Recall(bg, q); err != nil || rec.Summary != "14 messages about Lisbon" {
		t.Fatalf("after the outage: summary %q, %v", rec.Summary, err)
	}
}

// slowSummarizer sleeps up to max after summarizing, so its write lands
// at random points of a concurrent Forget.
type slowSummarizer struct {
	inner Summarizer
	r     *rand.Rand
	mu    sync.Mutex
}

func (s *slowSummarizer) Summarize(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error) {
	text, err := s.inner.Summarize(ctx, prev, msgs, maxTokens)
	s.mu.Lock()
	d := time.Duration(s.r.IntN(3000)) * time.Microsecond
	s.mu.Unlock()
	time.Sleep(d)
	return text, err
}

// TestForgetRacesSummaryWrite: a session forgotten while a Recall of it
// writes its rolling summary keeps no key: not the summary either.
func TestForgetRacesSummaryWrite(t *testing.T) {
	rounds := 60
	if testing.Short() || raceEnabled {
		rounds = 15
	}
	r := rand.New(rand.NewPCG(11, 12))
	s := openMem(t, &Options{Summarizer: &slowSummarizer{inner: Extractive{}, r: rand.New(rand.NewPCG(13, 14))}})
	leaked := 0
	for i := range rounds {
		scope := Scope{Tenant: "t", User: "u", Session: fmt.Sprintf("s%d", i)}
		var msgs []Message
		for j := range 60 {
			msgs = append(msgs, user(fmt.Sprintf("message %d about topic %d with several words", j, j%7)))
		}
		mustAppend(t, s.Session(scope), msgs...)
		delay := time.Duration(r.IntN(4000)) * time.Microsecond
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := s.Recall(bg, Query{Trace: true, Scope: scope, Text: "topic", MaxMessages: 4}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			time.Sleep(delay)
			if err := s.Forget(bg, scope); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if countKeys(t, s, scope.Prefix(engine.LevelSession)) > 0 {
			leaked++
		}
	}
	if leaked > 0 {
		t.Fatalf("%d of %d forgotten sessions kept keys (a summary written during Forget)", leaked, rounds)
	}
}

// TestSummaryExpiresWithItsMessages: with SessionTTL the summary expires
// when the newest message it covers does, not a full TTL after the refresh.
func TestSummaryExpiresWithItsMessages(t *testing.T) {
	t.Parallel() // it sleeps for seconds; let the other sleepers overlap
	s := openMem(t, &Options{SessionTTL: time.Hour})
	scope := Scope{Tenant: "acme", User: "alice", Session: "ttl"}
	sess := s.Session(scope)
	for i := range 8 {
		mustAppend(t, sess, user(fmt.Sprintf("Question %d about Lisbon.", i)), asst("Noted."))
	}
	time.Sleep(2100 * time.Millisecond) // expiry is kept in whole seconds
	if _, err := s.Recall(bg, Query{Trace: true, Scope: scope, Text: "Lisbon", MaxMessages: 2}); err != nil {
		t.Fatal(err)
	}
	prefix := scope.Prefix(engine.LevelSession)
	err := s.db.View(bg, func(tx *engine.Tx) error {
		sum, err := loadSummary(tx, prefix)
		if err != nil || len(sum.Through) != 16 {
			return fmt.Errorf("stored summary %+v, %v", sum, err)
		}
		got, err := tx.KV().Expiry(engine.Key(prefix, engine.NSSummary))
		if err != nil {
			return err
		}
		want, err := tx.KV().Expiry(engine.Key(prefix, engine.NSMessage, sum.Through))
		if err != nil {
			return err
		}
		if got.IsZero() || got.Sub(want).Abs() > time.Second {
			return fmt.Errorf("summary expires %v, its newest message %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestForgetErasesRecall: forgetting a user erases memories, vectors,
// postings, facts and summaries: nothing is recalled, no key is left.
func TestForgetErasesRecall(t *testing.T) {
	s := openMem(t, nil)
	seedRecall(t, s, rand.New(rand.NewPCG(3, 4)), 30)
	q := Query{Trace: true, Scope: Scope{Tenant: "acme", User: "alice", Session: "s0"}, Text: "Lisbon budget Dana", Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}, MaxMessages: 2}
	rec, err := s.Recall(bg, q)
	if err != nil || len(rec.Items) == 0 {
		t.Fatalf("before: %v items, %v", len(rec.Items), err)
	}
	// A session forget removes that session's episodes only.
	if err := s.Forget(bg, Scope{Tenant: "acme", User: "alice", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Recall(bg, q)
	for _, it := range rec.Items {
		if it.Session == "s1" {
			t.Fatalf("episode of a forgotten session: %+v", it)
		}
	}
	if err := s.Forget(bg, alice); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Recall(bg, q)
	if err != nil || len(rec.Items) != 0 || len(rec.Trace.Candidates) != 0 || rec.Summary != "" {
		t.Fatalf("after Forget: %+v, %v", rec.Trace.Candidates, err)
	}
	for _, space := range []string{spaceMemories, spaceMessages} {
		hits, err := s.db.SearchText(bg, alice, "Lisbon budget Dana project", 10, &engine.SearchOptions{Space: space})
		if err != nil || len(hits) != 0 {
			t.Fatalf("%s postings after Forget: %d, %v", space, len(hits), err)
		}
	}
	prefix, _ := alice.PartitionPrefix()
	if left := countKeys(t, s, prefix); left != 0 {
		t.Fatalf("%d keys left under the user", left)
	}
}

// countKeys counts the keys under prefix.
func countKeys(t *testing.T, s *Store, prefix []byte) int {
	t.Helper()
	var n int
	err := s.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecallShared: the tenant's shared memories are recalled when asked,
// for every user of the tenant and no other tenant's, shown apart in the
// preamble; a deleted one is dropped.
func TestRecallShared(t *testing.T) {
	s := openMem(t, nil)
	acme, globex := Scope{Tenant: "acme"}, Scope{Tenant: "globex"}
	shared := mustRemember(t, s, acme, Memory{Text: "Acme's support hours are 9 to 5 CET on weekdays"})
	mustRemember(t, s, globex, Memory{Text: "Globex support hours are around the clock"})
	mustRemember(t, s, alice, Memory{Text: "Alice prefers to be called in the morning"})
	q := Query{Trace: true, Scope: alice, Text: "what are the support hours?"}
	rec, err := s.Recall(bg, q)
	if err != nil || recalled(rec, shared) {
		t.Fatalf("without SourceShared: recalled %v, %v", recalled(rec, shared), err)
	}
	q.Sources = []Source{SourceMemories, SourceShared}
	for _, u := range []string{"alice", "bob"} {
		q.Scope = Scope{Tenant: "acme", User: u}
		rec, err = s.Recall(bg, q)
		if err != nil || !recalled(rec, shared) {
			t.Fatalf("%s with SourceShared: %+v, %v", u, rec.Items, err)
		}
		if !strings.Contains(rec.Preamble, "Shared memories:\n- [") || strings.Contains(rec.Preamble, "Globex") {
			t.Fatalf("%s: preamble %q", u, rec.Preamble)
		}
		if !slices.ContainsFunc(rec.Trace.Candidates, func(c Candidate) bool { return c.Source == SourceShared && c.Ranks["bm25"] > 0 }) {
			t.Fatalf("%s: no shared candidate ranked by bm25: %+v", u, rec.Trace.Candidates)
		}
	}
	if err := s.DeleteMemory(bg, acme, shared); err != nil {
		t.Fatal(err)
	}
	if rec, _ = s.Recall(bg, q); recalled(rec, shared) {
		t.Fatal("a deleted shared memory was recalled")
	}
}

// TestRecallIsolation: a Recall sees only its own user's memories,
// episodes and facts, never another user's or another tenant's.
func TestRecallIsolation(t *testing.T) {
	s := openMem(t, nil)
	owners := []Scope{
		{Tenant: "acme", User: "alice"}, {Tenant: "acme", User: "bob"}, {Tenant: "globex", User: "alice"},
	}
	for _, o := range owners {
		tag := o.Tenant + "/" + o.User
		mustRemember(t, s, o, Memory{Text: "The secret project codename is " + tag})
		sess := o
		sess.Session = "s"
		mustAppend(t, s.Session(sess), user("My secret project codename is "+tag))
		if _, err := s.Relate(bg, o, Fact{Subject: "secret project", Predicate: "codename", Object: tag}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range owners {
		tag := o.Tenant + "/" + o.User
		q := o
		q.Session = "other"
		rec, err := s.Recall(bg, Query{Trace: true, Scope: q, Text: "what is the secret project codename?", Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Items) != 3 {
			t.Fatalf("%s: %d items: %+v", tag, len(rec.Items), rec.Items)
		}
		for _, it := range rec.Items {
			if !strings.HasSuffix(it.Text, tag) {
				t.Fatalf("%s recalled %q", tag, it.Text)
			}
		}
		for _, c := range rec.Trace.Candidates {
			for _, other := range owners {
				if other != o && strings.Contains(c.Text, other.Tenant+"/"+other.User) {
					t.Fatalf("%s saw a candidate of %v: %q", tag, other, c.Text)
				}
			}
		}
	}
}

// TestCompareCandidatesTies: equal scores order by source (memories,
// graph, episodes), then newer first, then id, whatever the ids' mint.
func TestCompareCandidatesTies(t *testing.T) {
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, src Source, fused float64, at time.Time) *Candidate {
		c := &Candidate{ID: id, Fused: fused}
		c.Source, c.Time = src, at
		return c
	}
	got := []*Candidate{
		mk("a", SourceEpisodes, 0.5, day),
		mk("b", SourceGraph, 0.5, day),
		mk("c", SourceMemories, 0.5, day),
		mk("d", SourceMemories, 0.5, day.Add(time.Hour)),
		mk("e", SourceEpisodes, 0.9, day),
		mk("f", SourceMemories, 0.5, day.Add(time.Hour)),
	}
	slices.SortStableFunc(got, compareCandidates)
	var ids string
	for _, c := range got {
		ids += c.ID
	}
	if ids != "edfcba" {
		t.Fatalf("order %s, want edfcba", ids)
	}
}

func TestRetrievalString(t *testing.T) {
	for r, want := range map[Retrieval]string{RetrievalHybrid: "hybrid", RetrievalVector: "vector", RetrievalLexical: "lexical", 7: "Retrieval(7)"} {
		if got := r.String(); got != want {
			t.Errorf("%d: %q, want %q", int(r), got, want)
		}
	}
}

// TestRecallItemScores: every recalled item carries its fused score, those
// whose records were read late (after fusion) included.
func TestRecallItemScores(t *testing.T) {
	s := openMem(t, nil)
	mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice wants to be contacted by email, not phone"})
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "monday"}), user("My renewal owner is Dana. Please email me."))
	if _, err := s.Relate(bg, alice, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: "Who owns Alice's renewal? email or phone?", Sources: []Source{SourceMemories, SourceEpisodes, SourceGraph}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) != 3 {
		t.Fatalf("%d items, want 3", len(rec.Items))
	}
	fused := map[string]float64{}
	for _, c := range rec.Trace.Candidates {
		fused[c.ID] = c.Fused
	}
	for _, it := range rec.Items {
		if it.Score <= 0 || it.Score != fused[it.ID] {
			t.Errorf("%s item %q: score %v, fused %v", it.Source, it.Text, it.Score, fused[it.ID])
		}
	}
}

// addHits adds one ranked list of hits of one source, in the order given.
func (f *fusion) addHits(list string, src Source, hits []engine.Hit) {
	var sh []sourcedHit
	for _, h := range hits {
		sh = append(sh, sourcedHit{src, h})
	}
	f.addMerged(list, sh)
}

// TestRecallUntraced: a Recall that does not ask for the trace returns
// the same context, with no candidates or lists, and allocates less than
// a traced one (the maps of every candidate's ranks and scores, and the
// trace's copy of the candidates, are never built).
func TestRecallUntraced(t *testing.T) {
	s := openMem(t, nil)
	mustRemember(t, s, alice, Memory{Kind: KindPreference, Text: "Alice wants to be contacted by email, not phone"})
	for i := range 20 {
		mustRemember(t, s, alice, Memory{Text: fmt.Sprintf("Alice renewal note %d about the email plan", i)})
	}
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "monday"}), user("My renewal owner is Dana. Please email me."))
	if _, err := s.Relate(bg, alice, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	q := Query{Scope: Scope{Tenant: "acme", User: "alice", Session: "friday"}, Text: "Who owns Alice's renewal? email or phone?", Now: now}
	traced := q
	traced.Trace = true
	plain, err := s.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Recall(bg, traced)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Trace.Candidates != nil || plain.Trace.Lists != nil {
		t.Fatalf("untraced: %d candidates, lists %v; want none", len(plain.Trace.Candidates), plain.Trace.Lists)
	}
	if len(full.Trace.Candidates) == 0 || len(full.Trace.Lists) == 0 {
		t.Fatalf("traced: %d candidates, lists %v", len(full.Trace.Candidates), full.Trace.Lists)
	}
	if plain.Preamble != full.Preamble || len(plain.Items) != len(full.Items) {
		t.Fatalf("untraced context differs:\n%s\ntraced:\n%s", plain.Preamble, full.Preamble)
	}
	for i := range plain.Items {
		if plain.Items[i].ID != full.Items[i].ID || plain.Items[i].Score != full.Items[i].Score {
			t.Errorf("item %d: %+v untraced, %+v traced", i, plain.Items[i], full.Items[i])
		}
	}
	if plain.Trace.TokensUsed != full.Trace.TokensUsed || plain.Trace.PreambleTokens != full.Trace.PreambleTokens {
		t.Errorf("tokens %d/%d untraced, %d/%d traced", plain.Trace.TokensUsed, plain.Trace.PreambleTokens, full.Trace.TokensUsed, full.Trace.PreambleTokens)
	}
	allocs := func(q Query) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, err := s.Recall(bg, q); err != nil {
				t.Fatal(err)
			}
		})
	}
	if a, b := allocs(q), allocs(traced); a >= b {
		t.Errorf("untraced Recall allocates %.0f times, traced %.0f: want fewer", a, b)
	} else {
		t.Logf("allocations: untraced %.0f, traced %.0f", a, b)
	}
}
