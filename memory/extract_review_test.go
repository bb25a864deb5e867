package memory

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/graph"
)

// rxFunc is an Extractor from a function.
type rxFunc func(ctx context.Context, in *ExtractInput) (*Extraction, error)

func (f rxFunc) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	return f(ctx, in)
}

// Regression (found in review): one extraction with more than 64 items refused inside the
// transaction (here: deletions of ids that do not exist) fails the whole
// batch on every pass: neither it nor any other job in its batch is ever
// completed or parked, and Flush never returns.
func TestExtractionReviewPoisonBatchStallsQueue(t *testing.T) {
	setBackoff(t, 10*time.Millisecond)
	x := rxFunc(func(ctx context.Context, in *ExtractInput) (*Extraction, error) {
		if in.Message.Content == "poison" {
			var dels []string
			for i := 0; i < 65; i++ {
				dels = append(dels, ulid.Make().String())
			}
			return &Extraction{Deletes: dels}, nil
		}
		return &Extraction{Memories: []Memory{{Kind: KindFact, Text: in.Message.Content}}}, nil
	})
	st := openMem(t, &Options{Extractor: x})
	mustAppend(t, st.Session(Scope{Tenant: "acme", User: "alice", Session: "a"}), user("poison"))
	mustAppend(t, st.Session(Scope{Tenant: "acme", User: "bob", Session: "b"}), user("bob likes tea"))
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	err := st.Flush(ctx)
	q, _ := st.ExtractionQueue(bg)
	if err != nil {
		t.Fatalf("Flush: %v; queue %+v; bob's memories %d", err, q, len(memoriesOf(t, st, Scope{Tenant: "acme", User: "bob"})))
	}
}

// Regression (found in review): an entity that extraction created with observations survives
// Forget of the session it came from.
func TestExtractionReviewForgetLeavesCreatedEntityObservations(t *testing.T) {
	x := rxFunc(func(ctx context.Context, in *ExtractInput) (*Extraction, error) {
		return &Extraction{Entities: []graph.Entity{{Name: "Dana", Type: "person", Observations: []string{"Dana has a secret diagnosis"}}}}, nil
	})
	st := openMem(t, &Options{Extractor: x})
	sc := Scope{Tenant: "acme", User: "alice", Session: "a"}
	mustAppend(t, st.Session(sc), user("Dana has a secret diagnosis"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Dana"); err != nil {
		t.Fatalf("before forget: %v", err)
	}
	if err := st.Forget(bg, sc); err != nil {
		t.Fatal(err)
	}
	if e, err := viewed(bg, st, testUser, (*graph.Tx).Entity, "Dana"); err == nil {
		t.Fatalf("after Forget of the session the entity it created is still there: %+v", e)
	}
}

// Regression (found in review): forgetting a session whose extraction updated a memory the user
// remembered explicitly deletes the explicit memory too (deleteMemoryTx
// walks the Supersedes chain).
func TestExtractionReviewForgetUpdateDeletesUsersOwnMemory(t *testing.T) {
	var target string
	x := rxFunc(func(ctx context.Context, in *ExtractInput) (*Extraction, error) {
		return &Extraction{Updates: []Memory{{ID: target, Text: "Alice's renewal owner is Eve"}}}, nil
	})
	st := openMem(t, &Options{Extractor: x})
	id, err := st.Remember(bg, testUser, Memory{Kind: KindFact, Text: "Alice's renewal owner is Dana"})
	if err != nil {
		t.Fatal(err)
	}
	target = id
	sc := Scope{Tenant: "acme", User: "alice", Session: "a"}
	mustAppend(t, st.Session(sc), user("actually Eve owns the renewal"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := st.Forget(bg, sc); err != nil {
		t.Fatal(err)
	}
	ms := memoriesOf(t, st, testUser)
	_, gerr := st.Memory(bg, testUser, id)
	if len(ms) == 0 && errors.Is(gerr, ErrNotFound) {
		t.Fatalf("the memory the user remembered explicitly (%s) is gone after forgetting a session: %d memories", id, len(ms))
	}
}

// Regression (found in review): with ExtractSync, a message appended while an earlier message of
// its session waits for a retry is extracted before it.
func TestExtractionReviewSyncOrder(t *testing.T) {
	setBackoff(t, 300*time.Millisecond)
	var mu sync.Mutex
	var applied []string
	failed := false
	x := rxFunc(func(ctx context.Context, in *ExtractInput) (*Extraction, error) {
		mu.Lock()
		defer mu.Unlock()
		if in.Message.Content == "first" && !failed {
			failed = true
			return nil, errors.New("transient")
		}
		applied = append(applied, in.Message.Content)
		return &Extraction{}, nil
	})
	st := openMem(t, &Options{Extraction: ExtractSync, Extractor: x})
	sess := st.Session(testScope)
	mustAppend(t, sess, user("first"))
	mustAppend(t, sess, user("second"))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(applied, ",") != "first,second" {
		t.Fatalf("extracted in order %v, want first,second", applied)
	}
}

// Regression (found in review): Flush and the worker spin while a job waits out its backoff.
func TestExtractionReviewFlushSpinsDuringBackoff(t *testing.T) {
	setBackoff(t, 2*time.Second)
	x := rxFunc(func(ctx context.Context, in *ExtractInput) (*Extraction, error) {
		return nil, errors.New("transient")
	})
	st := openMem(t, &Options{Extractor: x})
	mustAppend(t, st.Session(testScope), user("hello"))
	time.Sleep(300 * time.Millisecond) // first failure
	v0 := st.Stats().Views
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	_ = st.Flush(ctx)
	if n := st.Stats().Views - v0; n > 100 {
		t.Fatalf("%d read transactions in one second of Flush waiting on a backoff", n)
	}
}
