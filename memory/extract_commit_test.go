package memory

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// modelExtractor stands for a model behind an API: each call takes
// latency (as long as the worker lets jobs run before it commits; a
// model's answer takes longer still), and it counts
// the calls it was given per message text. When hold is set and says so,
// the call waits for its context to end, as a call in flight when the
// process stops.
type modelExtractor struct {
	latency time.Duration
	hold    func(content string) bool
	held    chan string // told the content of a held call, when set
	onCall  func(content string)

	mu    sync.Mutex
	calls map[string]int
}

func newModelExtractor() *modelExtractor {
	return &modelExtractor{latency: extractCommitMax, calls: map[string]int{}}
}

func (f *modelExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	f.mu.Lock()
	f.calls[in.Message.Content]++
	f.mu.Unlock()
	if f.onCall != nil {
		f.onCall(in.Message.Content)
	}
	if f.hold != nil && f.hold(in.Message.Content) {
		if f.held != nil {
			f.held <- in.Message.Content
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	t := time.NewTimer(f.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &Extraction{Memories: []Memory{{Kind: KindEpisode, Text: "model read: " + in.Message.Content}}}, nil
}

func (f *modelExtractor) callsOf(content string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[content]
}

// TestExtractionCommitsEachModelCall: a store closed while the worker
// waits for a model call (Close abandons what is not committed, as a crash
// does) and reopened calls the model again for that message only. The
// messages extracted before it in the same batch were committed one by
// one as their calls returned; they used to wait for the whole batch, and
// the reopened store sent each of them to the model again.
func TestExtractionCommitsEachModelCall(t *testing.T) {
	const n, stopAt = 8, 5
	dir := t.TempDir()
	fx := newModelExtractor()
	fx.held = make(chan string, 1)
	var holding sync.Mutex
	hold := true
	fx.hold = func(content string) bool {
		holding.Lock()
		defer holding.Unlock()
		return hold && content == fmt.Sprint("message ", stopAt)
	}
	st, err := Open(dir, &Options{Extractor: fx})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	for i := 1; i <= n; i++ {
		msgs = append(msgs, user(fmt.Sprint("message ", i)))
	}
	// One append: the worker takes all of them in one batch.
	mustAppend(t, st.Session(testScope), msgs...)
	select {
	case <-fx.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never reached the held message")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	holding.Lock()
	hold = false
	holding.Unlock()

	st, err = Open(dir, &Options{Extractor: fx})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		want := 1
		if i == stopAt {
			want = 2 // in flight when the store closed
		}
		if got := fx.callsOf(fmt.Sprint("message ", i)); got != want {
			t.Errorf("message %d sent to the model %d times, want %d", i, got, want)
		}
	}
	if got := len(memoriesOf(t, st, testUser)); got != n {
		t.Errorf("%d memories, want %d", got, n)
	}
}

const extractRepeatEnv = "ENGRAM_MEMORY_EXTRACT_REPEAT_DIR"

// runExtractRepeatChild is the child of TestFaultExtractionRepeatsInFlight:
// it opens the store with a model extractor, appends the messages when
// told to, and prints "call CONTENT" as each call starts, until it is
// killed.
func runExtractRepeatChild() bool {
	dir := os.Getenv(extractRepeatEnv)
	if dir == "" {
		return false
	}
	var out sync.Mutex
	fx := newModelExtractor()
	fx.onCall = func(content string) {
		out.Lock()
		fmt.Printf("call %s\n", content)
		out.Unlock()
	}
	st, err := Open(dir, &Options{Extractor: fx})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if n := os.Getenv(extractRepeatEnv + "_APPEND"); n != "" {
		var count int
		_, _ = fmt.Sscan(n, &count)
		var msgs []Message
		for i := range count {
			msgs = append(msgs, user(fmt.Sprint("message ", i)))
		}
		if err := st.Session(testScope).Append(bg, msgs...); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	select {} // until killed
}

// TestFaultExtractionRepeatsInFlight kills a process with SIGKILL four
// times (two under -short or -race) while its worker sends a batch of queued messages to a model, each
// time a few calls after it (re)started, then drains the queue: each kill
// may send the message in flight to the model again, and nothing else.
// When a batch committed only after all its calls, each kill sent every
// message the batch had done so far again (a message went to the model
// five times across four kills).
func TestFaultExtractionRepeatsInFlight(t *testing.T) {
	const messages, callsPerRound = 24, 4
	kills := 4
	if testing.Short() || raceEnabled {
		kills = 2 // each round starts a process and opens the store
	}
	dir := t.TempDir()
	calls := map[string]int{}
	for round := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), extractRepeatEnv+"="+dir)
		if round == 0 {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s_APPEND=%d", extractRepeatEnv, messages))
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			content, ok := strings.CutPrefix(sc.Text(), "call ")
			if !ok {
				t.Fatalf("round %d: child said %q", round, sc.Text())
			}
			calls[content]++
			if n++; n == callsPerRound {
				// Kill with the last call in flight.
				_ = cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		_ = cmd.Wait()
		if n < callsPerRound {
			t.Fatalf("round %d: the child made %d calls, then stopped", round, n)
		}
	}
	fx := newModelExtractor()
	fx.latency = 0
	st, err := Open(dir, &Options{Extractor: fx})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	repeated, most := 0, 0
	for i := range messages {
		content := fmt.Sprint("message ", i)
		c := calls[content] + fx.callsOf(content)
		if c == 0 {
			t.Errorf("%s never went to the model", content)
		}
		repeated += max(c-1, 0)
		most = max(most, c)
	}
	t.Logf("%d messages, %d kills: %d repeated calls, at most %d calls for one message", messages, kills, repeated, most)
	if repeated > kills || most > 2 {
		t.Errorf("%d repeated model calls across %d kills (at most %d for one message); want at most one per kill, the call in flight",
			repeated, kills, most)
	}
	if got := len(memoriesOf(t, st, testUser)); got != messages {
		t.Errorf("%d memories, want %d", got, messages)
	}
}
