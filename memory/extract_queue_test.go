package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// fakeExtractor turns "fact S P O" messages into a fact, and every message
// into a memory "<speaker> said: <content>" (with a nonce per call when
// nonce is set, so that a job applied twice shows as two memories). It
// records the message ids it was given, in call order.
type fakeExtractor struct {
	mu    sync.Mutex
	seen  []string
	fail  func(in *ExtractInput) error // nil: never
	nonce bool
	calls atomic.Int64
}

func (f *fakeExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	n := f.calls.Add(1)
	f.mu.Lock()
	f.seen = append(f.seen, in.Message.ID)
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(in); err != nil {
			return nil, err
		}
	}
	text := in.Speaker + " said: " + in.Message.Content
	if f.nonce {
		text += fmt.Sprintf(" (call %d)", n)
	}
	x := &Extraction{Memories: []Memory{{Kind: KindEpisode, Text: text}}}
	if w := strings.Fields(in.Message.Content); len(w) == 4 && w[0] == "fact" {
		x.Facts = []Fact{{Subject: w[1], Predicate: w[2], Object: w[3]}}
		x.SingleValued = []string{w[2]}
	}
	return x, nil
}

func (f *fakeExtractor) order() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

var testUser = Scope{Tenant: "acme", User: "alice"}

func memoriesOf(t testing.TB, st *Store, scope Scope) []Memory {
	t.Helper()
	ms, err := st.Memories(bg, scope, MemoriesOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func factsOf(t testing.TB, st *Store, scope Scope) []Fact {
	t.Helper()
	fs, err := viewed(bg, st, scope, (*graph.Tx).Facts, graph.FactQuery{History: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestExtractionModes(t *testing.T) {
	for _, mode := range []ExtractionMode{ExtractAsync, ExtractSync, ExtractOff} {
		t.Run(mode.String(), func(t *testing.T) {
			fx := &fakeExtractor{}
			st := openMem(t, &Options{Extraction: mode, Extractor: fx})
			sess := st.Session(testScope)
			mustAppend(t, sess, user("fact alice renewal_owner Dana"), asst("Noted."), sys("be brief"))
			if mode == ExtractSync {
				// Done before Append returned: no Flush.
				if n := len(memoriesOf(t, st, testUser)); n != 2 {
					t.Fatalf("sync: %d memories right after Append, want 2", n)
				}
			}
			if err := st.Flush(bg); err != nil {
				t.Fatal(err)
			}
			mems, facts := memoriesOf(t, st, testUser), factsOf(t, st, testUser)
			if mode == ExtractOff {
				if len(mems)+len(facts) != 0 || fx.calls.Load() != 0 {
					t.Fatalf("off: %d memories, %d facts, %d calls", len(mems), len(facts), fx.calls.Load())
				}
				q, err := st.ExtractionQueue(bg)
				if err != nil || q.Pending != 0 {
					t.Fatalf("off: queue %+v, %v", q, err)
				}
				return
			}
			msgs, err := sess.Messages(bg, MessagesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(mems) != 2 || len(facts) != 1 {
				t.Fatalf("%d memories, %d facts; want 2 and 1 (system messages are not extracted)", len(mems), len(facts))
			}
			if facts[0].Source != msgs[0].ID || facts[0].Subject != "alice" || facts[0].Object != "Dana" {
				t.Errorf("fact %+v, want alice renewal_owner Dana from %s", facts[0], msgs[0].ID)
			}
			for _, m := range mems {
				if len(m.Source) != 1 || (m.Source[0] != msgs[0].ID && m.Source[0] != msgs[1].ID) {
					t.Errorf("memory %q has source %v", m.Text, m.Source)
				}
			}
			if !slices.ContainsFunc(mems, func(m Memory) bool { return m.Text == "alice said: fact alice renewal_owner Dana" }) {
				t.Errorf("the user's message did not resolve its speaker to the user: %v", mems)
			}
			if !slices.ContainsFunc(mems, func(m Memory) bool { return m.Text == "said: Noted." }) {
				t.Errorf("an unnamed assistant message should have no speaker: %v", mems)
			}
			q, err := st.ExtractionQueue(bg)
			if err != nil || q.Pending != 0 || q.ParkedTotal != 0 {
				t.Fatalf("queue after Flush: %+v, %v", q, err)
			}
		})
	}
}

// TestExtractionIdempotent: a job run again (its queue entry written anew,
// as a crash between the write and the entry's deletion would leave it)
// writes nothing new.
func TestExtractionIdempotent(t *testing.T) {
	fx := &fakeExtractor{}
	st := openMem(t, &Options{Extractor: fx})
	sess := st.Session(testScope)
	mustAppend(t, sess, user("fact alice lives_in Paris"), user("I like tea"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	mems, facts := memoriesOf(t, st, testUser), factsOf(t, st, testUser)
	msgs, _ := sess.Messages(bg, MessagesOptions{})
	prefix := testScope.Prefix(engine.LevelSession)
	for round := range 2 {
		err := st.db.Update(bg, func(tx *engine.Tx) error {
			for _, m := range msgs {
				id := ulid.MustParse(m.ID)
				if err := tx.Set(queueKey(engine.NSExtractQueue, prefix, id), nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(bg); err != nil {
			t.Fatal(err)
		}
		m2, f2 := memoriesOf(t, st, testUser), factsOf(t, st, testUser)
		if len(m2) != len(mems) || len(f2) != len(facts) {
			t.Fatalf("round %d: %d memories and %d facts, want %d and %d", round, len(m2), len(f2), len(mems), len(facts))
		}
	}
	if fx.calls.Load() != 6 {
		t.Errorf("%d extractor calls, want 6", fx.calls.Load())
	}
}

// TestExtractionOrderAndRetry: a failing job is retried with backoff and
// holds back the later messages of its session (not of others); after
// ExtractMaxAttempts it is parked, shown by ExtractionQueue, and
// RetryParked queues it again. Append never fails.
func TestExtractionOrderAndRetry(t *testing.T) {
	setBackoff(t, time.Millisecond)
	var failing atomic.Int64
	failing.Store(2) // the "flaky" message fails twice
	fx := &fakeExtractor{fail: func(in *ExtractInput) error {
		switch {
		case in.Message.Content == "flaky" && failing.Add(-1) >= 0:
			return errors.New("model unavailable")
		case in.Message.Content == "broken":
			panic("extractor bug")
		}
		return nil
	}}
	st := openMem(t, &Options{Extractor: fx})
	a, b := st.Session(testScope), st.Session(Scope{Tenant: "acme", User: "alice", Session: "s2"})
	mustAppend(t, a, user("first"), user("flaky"), user("third"))
	mustAppend(t, b, user("other session"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	msgs, _ := a.Messages(bg, MessagesOptions{})
	var order []string
	for _, id := range fx.order() {
		if slices.ContainsFunc(msgs, func(m Message) bool { return m.ID == id }) && !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	if want := []string{msgs[0].ID, msgs[1].ID, msgs[2].ID}; !slices.Equal(order, want) {
		t.Errorf("session order %v, want %v", order, want)
	}
	if n := len(memoriesOf(t, st, testUser)); n != 4 {
		t.Errorf("%d memories, want 4", n)
	}

	mustAppend(t, a, user("broken"), user("after broken"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	q, err := st.ExtractionQueue(bg)
	if err != nil {
		t.Fatal(err)
	}
	if q.ParkedTotal != 1 || q.Pending != 0 || len(q.Parked) != 1 || q.Parked[0].Attempts != ExtractMaxAttempts ||
		!strings.Contains(q.Parked[0].Error, "extractor bug") || q.Parked[0].Scope != testScope {
		t.Fatalf("queue %+v, want the broken job parked after %d tries", q, ExtractMaxAttempts)
	}
	// The message after the parked one was extracted once the session
	// was unblocked.
	if !slices.ContainsFunc(memoriesOf(t, st, testUser), func(m Memory) bool { return strings.HasSuffix(m.Text, "after broken") }) {
		t.Error("the message after a parked one was not extracted")
	}
	n, err := st.RetryParked(bg)
	if err != nil || n != 1 {
		t.Fatalf("RetryParked = %d, %v", n, err)
	}
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.ExtractionQueue(bg); q.ParkedTotal != 1 {
		t.Errorf("a job that fails again is parked again: %+v", q)
	}
}

// TestExtractionBlockEndsMidPass: a session whose backoff ends while the
// worker reads the queue keeps its head, so its job is retried. The
// worker used to drop the head of a session it skipped as blocked when
// the block had ended by the time it updated the heads, and then went idle
// with the job queued: Flush hung (seen under load in CI).
func TestExtractionBlockEndsMidPass(t *testing.T) {
	const unit = 100 * time.Millisecond
	setBackoff(t, unit)
	var failed atomic.Bool
	fx := &fakeExtractor{fail: func(in *ExtractInput) error {
		if !failed.Swap(true) {
			return errors.New("model unavailable")
		}
		return nil
	}}
	prefix := testScope.Prefix(engine.LevelSession)
	var opened atomic.Pointer[Store]
	var stalled atomic.Int64
	testHookJobsRead = func() {
		// While the session is blocked, stall past the end of its
		// backoff, as a loaded machine may.
		if st := opened.Load(); st != nil && st.worker.isBlocked(prefix) {
			stalled.Add(1)
			time.Sleep(2 * unit)
		}
	}
	t.Cleanup(func() { testHookJobsRead = nil })
	st := openMem(t, &Options{Extractor: fx})
	opened.Store(st)
	// A second session, after the first in key order, that the worker
	// reads while it skips the blocked one.
	mustAppend(t, st.Session(testScope), user("flaky"))
	mustAppend(t, st.Session(Scope{Tenant: "acme", User: "alice", Session: "s2"}), user("steady"))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := st.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v (the retried job was lost from the worker's heads)", err)
	}
	if stalled.Load() == 0 {
		t.Fatal("the worker never read the queue while the session was blocked; the test proves nothing")
	}
	if n := len(memoriesOf(t, st, testUser)); n != 2 {
		t.Errorf("%d memories, want 2", n)
	}
}

func setBackoff(t *testing.T, d time.Duration) {
	old := extractBackoffUnit.Load()
	extractBackoffUnit.Store(int64(d))
	t.Cleanup(func() { extractBackoffUnit.Store(old) })
}

// TestExtractionForget: forgetting a session takes what extraction drew
// from its messages out of the user's memories and graph, but keeps a
// memory another session also gave; forgetting the user takes the rest.
func TestExtractionForget(t *testing.T) {
	fx := &fakeExtractor{}
	st := openMem(t, &Options{Extractor: fx})
	s1, s2 := st.Session(testScope), st.Session(Scope{Tenant: "acme", User: "alice", Session: "s2"})
	if _, err := updated(bg, st, testUser, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Dana", Type: "person"}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s1, user("fact alice manager Dana"), user("shared words"))
	mustAppend(t, s2, user("fact alice lives_in Lisbon"), user("shared words"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if n := len(memoriesOf(t, st, testUser)); n != 3 {
		t.Fatalf("%d memories, want 3 (one shared by both sessions)", n)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	mems := memoriesOf(t, st, testUser)
	var texts []string
	for _, m := range mems {
		texts = append(texts, m.Text)
		for _, src := range m.Source {
			if msgs, _ := s2.Messages(bg, MessagesOptions{}); !slices.ContainsFunc(msgs, func(x Message) bool { return x.ID == src }) {
				t.Errorf("memory %q keeps source %s of the forgotten session", m.Text, src)
			}
		}
	}
	slices.Sort(texts)
	if want := []string{"alice said: fact alice lives_in Lisbon", "alice said: shared words"}; !slices.Equal(texts, want) {
		t.Errorf("memories after forgetting s1: %q, want %q", texts, want)
	}
	facts := factsOf(t, st, testUser)
	if len(facts) != 1 || facts[0].Object != "Lisbon" {
		t.Errorf("facts after forgetting s1: %+v, want only Lisbon", facts)
	}
	// Dana was created by hand before extraction related it: it stays.
	if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Dana"); err != nil {
		t.Errorf("an entity made by hand went with the session: %v", err)
	}
	if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Lisbon"); err != nil {
		t.Errorf("an entity of the other session went: %v", err)
	}
	if err := st.Forget(bg, testUser); err != nil {
		t.Fatal(err)
	}
	if n := len(memoriesOf(t, st, testUser)) + len(factsOf(t, st, testUser)); n != 0 {
		t.Errorf("%d items left after forgetting the user", n)
	}
	if q, _ := st.ExtractionQueue(bg); q.Pending+q.ParkedTotal != 0 {
		t.Errorf("queue after forgetting the user: %+v", q)
	}
}

// TestExtractionForgetCreatedEntity: an entity extraction created goes
// with the session when nothing else refers to it.
func TestExtractionForgetCreatedEntity(t *testing.T) {
	st := openMem(t, &Options{Extractor: &fakeExtractor{}})
	mustAppend(t, st.Session(testScope), user("fact alice sister Jane"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Jane"); err != nil {
		t.Fatal(err)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Jane", "alice"} {
		if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, name); err == nil {
			t.Errorf("entity %s outlived the session it came from", name)
		}
	}
}

// TestExtractionResumesAfterClose: Close leaves the queue on disk and a
// reopen drains it.
func TestExtractionResumesAfterClose(t *testing.T) {
	dir := t.TempDir()
	block := make(chan struct{})
	fx := &fakeExtractor{fail: func(in *ExtractInput) error {
		<-block
		return nil
	}}
	st, err := Open(dir, &Options{Extractor: fx})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st.Session(testScope), user("one"), user("two"), user("three"))
	closed := make(chan error)
	go func() { closed <- st.Close() }()
	// Close cancels the worker's context; the extractor under way returns.
	time.Sleep(10 * time.Millisecond)
	close(block)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	st, err = Open(dir, &Options{Extractor: &fakeExtractor{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if n := len(memoriesOf(t, st, testUser)); n != 3 {
		t.Fatalf("%d memories after reopen, want 3", n)
	}
}

// badExtractor returns garbage: empty names, bad kinds, unknown ids.
type badExtractor struct{}

func (badExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	return &Extraction{
		Memories:   []Memory{{Kind: "gossip", Text: "x"}, {Text: ""}, {Text: "a good one"}},
		Entities:   []graph.Entity{{Name: ""}, {Name: "Ok", Type: strings.Repeat("t", 10000)}, {Name: "Fine", Type: "thing"}},
		Facts:      []Fact{{Subject: "", Predicate: "p", Object: "o"}, {Subject: "a", Predicate: "p", Object: "b", Confidence: 7}, {Subject: "a", Predicate: "likes", Object: "b"}},
		Invalidate: []Fact{{ID: "nope"}, {Subject: "a"}},
		Updates:    []Memory{{ID: "not-an-id", Text: "y"}, {ID: ulid.Make().String(), Text: "unknown memory"}},
		Deletes:    []string{"zzz", ulid.Make().String()},
	}, nil
}

// TestExtractionBadItems: items the store cannot write are dropped one by
// one, the rest is written, and Append never sees an error.
func TestExtractionBadItems(t *testing.T) {
	st := openMem(t, &Options{Extractor: badExtractor{}, Extraction: ExtractSync})
	mustAppend(t, st.Session(testScope), user("anything"))
	mems := memoriesOf(t, st, testUser)
	if len(mems) != 1 || mems[0].Text != "a good one" {
		t.Errorf("memories %+v, want the good one alone", mems)
	}
	facts := factsOf(t, st, testUser)
	if len(facts) != 1 || facts[0].Predicate != "likes" {
		t.Errorf("facts %+v, want a likes b alone", facts)
	}
	if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Fine"); err != nil {
		t.Errorf("the good entity: %v", err)
	}
	if q, _ := st.ExtractionQueue(bg); q.Pending+q.ParkedTotal != 0 {
		t.Errorf("queue %+v: bad items must not fail the job", q)
	}
}

const extractCrashEnv = "ENGRAM_MEMORY_EXTRACT_CRASH_DIR"

// runExtractCrashChild is the child of TestExtractionKill9: it appends
// messages with a slow extractor, printing "ack ID" after each Append
// returns, until it is killed.
func runExtractCrashChild() bool {
	dir := os.Getenv(extractCrashEnv)
	if dir == "" {
		return false
	}
	slow := &fakeExtractor{nonce: true, fail: func(*ExtractInput) error {
		time.Sleep(time.Millisecond)
		return nil
	}}
	st, err := Open(dir, &Options{Extractor: slow})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	sess := st.Session(testScope)
	for i := 0; ; i++ {
		if err := sess.Append(bg, user(fmt.Sprintf("message %d of %d", i, os.Getpid()))); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		msgs, err := sess.Messages(bg, MessagesOptions{Reverse: true, Limit: 1})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("ack %s\n", msgs[0].ID)
	}
}

// TestExtractionKill9 kills a process that appends while its worker
// extracts, twice, then reopens: every acknowledged message is extracted,
// and none twice (the extractor writes a new nonce per call, so a job
// applied twice would leave two memories for one message).
func TestExtractionKill9(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]bool{}
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), extractCrashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		n := 0
		killAt := 60
		if testing.Short() || raceEnabled {
			killAt = 25
		}
		for sc.Scan() {
			line := sc.Text()
			id, ok := strings.CutPrefix(line, "ack ")
			if !ok {
				t.Fatalf("round %d: child said %q", round, line)
			}
			acked[id] = true
			if n++; n == killAt {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		_ = cmd.Wait()
	}
	st, err := Open(dir, &Options{Extractor: &fakeExtractor{nonce: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, m := range memoriesOf(t, st, testUser) {
		for _, src := range m.Source {
			per[src]++
		}
	}
	for id := range acked {
		if per[id] != 1 {
			t.Errorf("acknowledged message %s has %d extracted memories, want 1", id, per[id])
		}
	}
	for id, n := range per {
		if n != 1 {
			t.Errorf("message %s extracted %d times", id, n)
		}
	}
	t.Logf("%d acknowledged messages, %d extracted", len(acked), len(per))
}

// TestExtractionPermanentFailure: a refusal or a bad key parks the job at
// once instead of retrying it.
func TestExtractionPermanentFailure(t *testing.T) {
	for _, fail := range []error{ErrExtractionRefused, &StatusError{StatusCode: 401}} {
		fx := &fakeExtractor{fail: func(*ExtractInput) error { return fail }}
		st := openMem(t, &Options{Extractor: fx})
		mustAppend(t, st.Session(testScope), user("hello"))
		if err := st.Flush(bg); err != nil {
			t.Fatal(err)
		}
		q, err := st.ExtractionQueue(bg)
		if err != nil || q.ParkedTotal != 1 || fx.calls.Load() != 1 {
			t.Errorf("%v: queue %+v after %d calls (%v), want parked after one", fail, q, fx.calls.Load(), err)
		}
	}
}

// TestExtractionQueueHeads: the worker reads each session from its head,
// not from the start of the queue, where the deleted entries of every job
// done since the last compaction lie; a head never passes a job still
// queued. Many writers append to a few sessions at once, in both modes.
// The test waits by watching the extractor, not with Flush, which tells
// the worker of every queued entry and so would mend a head that skipped
// one: every message must be extracted, and then no session's head may
// lie before its last job's entry.
func TestExtractionQueueHeads(t *testing.T) {
	for _, mode := range []ExtractionMode{ExtractAsync, ExtractSync} {
		t.Run(mode.String(), func(t *testing.T) {
			fx := &fakeExtractor{}
			st := openMem(t, &Options{Extractor: fx, Extraction: mode})
			const writers, each, sessions = 8, 25, 3
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						scope := testScope
						scope.Session = fmt.Sprint("s", (w+i)%sessions)
						if err := st.Session(scope).Append(bg, user(fmt.Sprintf("writer %d says %d", w, i))); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			extracted := func() (calls, distinct int) {
				fx.mu.Lock()
				seen := slices.Clone(fx.seen)
				fx.mu.Unlock()
				slices.Sort(seen)
				return len(seen), len(slices.Compact(seen))
			}
			// The heads settle once the worker's last pass found the
			// sessions empty.
			badHeads := func() []string {
				var bad []string
				for i := range sessions {
					scope := testScope
					scope.Session = fmt.Sprint("s", i)
					prefix := scope.Prefix(engine.LevelSession)
					msgs, err := st.Session(scope).Messages(bg, MessagesOptions{})
					if err != nil {
						t.Fatal(err)
					}
					last := queueKey(engine.NSExtractQueue, prefix, ulid.MustParse(msgs[len(msgs)-1].ID))
					if h := st.worker.headOf(prefix); h.from != nil && bytes.Compare(h.from, last) < 0 {
						bad = append(bad, fmt.Sprintf("session %s: head %x lies before its last job %x", scope.Session, h.from, last))
					}
				}
				return bad
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				calls, distinct := extracted()
				bad := badHeads()
				if distinct == writers*each && len(bad) == 0 {
					// ExtractSync runs a job on Append while the worker
					// may run the same one: the second run writes
					// nothing, but it is a second Extractor call. The
					// worker alone runs each once.
					if mode == ExtractAsync && calls != distinct {
						t.Fatalf("%d extractions of %d messages", calls, distinct)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 30 s: %d of %d messages extracted (a job skipped by its head?); %q", distinct, writers*each, bad)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
