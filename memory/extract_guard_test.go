package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// TestExtractionJobGone: a job whose queue entry is gone by the time its
// result would be committed writes nothing. Two ways it goes: the session
// is forgotten while the model is called (what the call gives must not
// come back after the erasure), and another runner (ExtractSync on
// Append, racing the worker) completed the job first.
func TestExtractionJobGone(t *testing.T) {
	t.Run("forgotten", func(t *testing.T) {
		fx := newModelExtractor()
		fx.latency = 0
		fx.held = make(chan string, 1)
		release := make(chan struct{})
		fx.hold = func(content string) bool { return content == "secret" }
		st := openMem(t, &Options{Extractor: holdUntil(fx, release)})
		mustAppend(t, st.Session(testScope), user("secret"))
		<-fx.held
		passed := st.worker.progressed()
		if err := st.Forget(bg, testScope); err != nil {
			t.Fatal(err)
		}
		close(release)
		select {
		case <-passed:
		case <-time.After(30 * time.Second):
			t.Fatal("the worker's pass never ended")
		}
		if mems := memoriesOf(t, st, testUser); len(mems) != 0 {
			t.Errorf("memories %v written from a session forgotten during extraction", mems)
		}
	})
	t.Run("done by another", func(t *testing.T) {
		fx := &fakeExtractor{nonce: true}
		st := openMem(t, &Options{Extractor: fx})
		sess := st.Session(testScope)
		mustAppend(t, sess, user("once"))
		if err := st.Flush(bg); err != nil {
			t.Fatal(err)
		}
		msgs, err := sess.Messages(bg, MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		prefix := testScope.Prefix(engine.LevelSession)
		id := ulid.MustParse(msgs[0].ID)
		j := job{key: queueKey(engine.NSExtractQueue, prefix, id), prefix: prefix, scope: testScope, id: id}
		// The second runner extracted the job too (a new nonce) and
		// commits after the first removed its entry.
		if _, err := st.runJobs(bg, fx, []job{j}); err != nil {
			t.Fatal(err)
		}
		if fx.calls.Load() != 2 {
			t.Fatalf("%d extractor calls, want 2", fx.calls.Load())
		}
		if mems := memoriesOf(t, st, testUser); len(mems) != 1 {
			t.Errorf("%d memories after the job ran twice, want 1: %v", len(mems), mems)
		}
	})
}

// heldExtractor makes a held call of a modelExtractor return, once
// release is closed, as if the model had answered.
type heldExtractor struct {
	*modelExtractor
	release chan struct{}
}

func holdUntil(fx *modelExtractor, release chan struct{}) heldExtractor {
	return heldExtractor{modelExtractor: fx, release: release}
}

func (h heldExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	if h.hold != nil && h.hold(in.Message.Content) {
		h.held <- in.Message.Content
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &Extraction{Memories: []Memory{{Kind: KindEpisode, Text: "model read: " + in.Message.Content}}}, nil
	}
	return h.modelExtractor.Extract(ctx, in)
}

// TestExtractionFailedSessionWaitsInBatch: when a message fails, the later
// messages of its session in the same batch are not sent to the model
// until it succeeds; another session's messages go on.
func TestExtractionFailedSessionWaitsInBatch(t *testing.T) {
	setBackoff(t, time.Millisecond)
	var flakyDone, early atomic.Bool
	var failing atomic.Int64
	failing.Store(1)
	fx := &fakeExtractor{fail: func(in *ExtractInput) error {
		switch in.Message.Content {
		case "flaky":
			if failing.Add(-1) >= 0 {
				return errors.New("model unavailable")
			}
			flakyDone.Store(true)
		case "third":
			if !flakyDone.Load() {
				early.Store(true)
			}
		}
		return nil
	}}
	st := openMem(t, &Options{Extractor: fx})
	other := Scope{Tenant: "acme", User: "alice", Session: "s2"}
	// One batch, written by one append each before the worker's gather
	// window ends: s1's three messages, then s2's.
	mustAppend(t, st.Session(testScope), user("first"), user("flaky"), user("third"))
	mustAppend(t, st.Session(other), user("other"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Error("the message after a failed one was sent to the model before the failed one succeeded")
	}
	if n := len(memoriesOf(t, st, testUser)); n != 4 {
		t.Errorf("%d memories, want 4", n)
	}
}

// TestExtractionRetryParkedRuns: the jobs RetryParked queues again run
// without anyone calling Flush (which tells the worker of every entry it
// finds): RetryParked itself hands them to the worker.
func TestExtractionRetryParkedRuns(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	var st *Store
	passed := make(chan (<-chan struct{}), 1)
	fx := &fakeExtractor{fail: func(in *ExtractInput) error {
		if refuse.Load() {
			return ErrExtractionRefused
		}
		passed <- st.worker.progressed()
		return nil
	}}
	st = openMem(t, &Options{Extractor: fx})
	mustAppend(t, st.Session(testScope), user("hello"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if q, err := st.ExtractionQueue(bg); err != nil || q.ParkedTotal != 1 {
		t.Fatalf("queue %+v, %v: want the job parked", q, err)
	}
	refuse.Store(false)
	if n, err := st.RetryParked(bg); err != nil || n != 1 {
		t.Fatalf("RetryParked = %d, %v", n, err)
	}
	var pass <-chan struct{}
	select {
	case pass = <-passed:
	case <-time.After(20 * time.Second):
		t.Fatal("the job queued again by RetryParked never ran")
	}
	select {
	case <-pass:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker's pass never ended")
	}
	if n := len(memoriesOf(t, st, testUser)); n != 1 {
		t.Errorf("%d memories, want 1", n)
	}
	if q, err := st.ExtractionQueue(bg); err != nil || q.Pending+q.ParkedTotal != 0 {
		t.Errorf("queue %+v, %v: want it empty", q, err)
	}
}

// aliasExtractor gives, for "alias NAME ALIAS", the entity NAME with ALIAS
// as an alias, and nothing else.
type aliasExtractor struct{}

func (aliasExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	w := strings.Fields(in.Message.Content)
	if len(w) != 3 || w[0] != "alias" {
		return &Extraction{}, nil
	}
	return &Extraction{Entities: []graph.Entity{{Name: w[1], Type: "person", Aliases: []string{w[2]}}}}, nil
}

// TestExtractionForgetAliases: forgetting a session takes out the aliases
// extraction added from its messages to an entity that stays (made by
// hand), and keeps the aliases another session gave.
func TestExtractionForgetAliases(t *testing.T) {
	st := openMem(t, &Options{Extractor: aliasExtractor{}})
	if _, err := updated(bg, st, testUser, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Robert", Type: "person", Aliases: []string{"Rob"}}}); err != nil {
		t.Fatal(err)
	}
	other := Scope{Tenant: "acme", User: "alice", Session: "s2"}
	mustAppend(t, st.Session(testScope), user("alias Robert Bob"))
	mustAppend(t, st.Session(other), user("alias Robert Bobby"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	e, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Robert")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(e.Aliases)
	if want := []string{"Bob", "Bobby", "Rob"}; !slices.Equal(e.Aliases, want) {
		t.Fatalf("aliases %q before forgetting, want %q", e.Aliases, want)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	e, err = viewed(bg, st, testUser, (*graph.Tx).Entity, "Robert")
	if err != nil {
		t.Fatalf("the entity made by hand went with the session: %v", err)
	}
	slices.Sort(e.Aliases)
	if want := []string{"Bobby", "Rob"}; !slices.Equal(e.Aliases, want) {
		t.Errorf("aliases %q after forgetting the session that gave Bob, want %q", e.Aliases, want)
	}
	if e, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Bob"); err == nil {
		t.Errorf("the forgotten alias Bob still finds %s", e.Name)
	}
}
