package memory

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

const crashEnv = "ENGRAM_MEMORY_CRASH_DIR"

// runCrashChild is the child of TestDurabilityKill9: it appends numbered
// messages to one session forever, printing "ack N" after each Append
// returns, until it is killed.
func runCrashChild() bool {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		return false
	}
	st, err := Open(dir, nil) // Sync durability, the default
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	sess := st.Session(testScope)
	infos, err := st.Sessions(bg, testScope, SessionsOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	start := 0
	if len(infos) == 1 {
		start = infos[0].Messages // continue the numbering of an earlier round
	}
	for i := start; ; i++ {
		m := user(fmt.Sprintf("message %d", i))
		if i%3 == 1 {
			m = call(fmt.Sprint("call-", i))
		} else if i%3 == 2 {
			m = result(fmt.Sprint("call-", i-1))
		}
		if err := sess.Append(bg, m); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestDurabilityKill9 kills a writer with SIGKILL in the middle of a stream
// of synced appends and checks, after reopening, that every acknowledged
// message is there, in order, with nothing after it but possibly the one
// message that committed before its ack was printed.
func TestDurabilityKill9(t *testing.T) {
	dir := t.TempDir()
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := -1
		sc := bufio.NewScanner(out)
		killAt := 150 + round*150
		if testing.Short() || raceEnabled {
			killAt = 40 + round*40 // each ack waits for an fsync
		}
		killed := false
		for sc.Scan() {
			line := sc.Text()
			n, err := strconv.Atoi(strings.TrimPrefix(line, "ack "))
			if err != nil {
				t.Fatalf("child: %s", line)
			}
			acked = n
			if !killed && n >= killAt {
				// Kill while it keeps writing; acks already printed still
				// arrive through the pipe.
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("child stopped by itself after ack %d", acked)
		}

		st, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("reopen after kill -9: %v", err)
		}
		var all []Message
		after := ""
		for {
			page, err := st.Session(testScope).Messages(bg, MessagesOptions{After: after, Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			all = append(all, page...)
			after = page[len(page)-1].ID
		}
		// Acks number messages from the start of the session, across rounds.
		want := acked + 1
		if len(all) < want || len(all) > want+1 {
			t.Fatalf("round %d: %d messages after reopen; %d were acknowledged", round, len(all), want)
		}
		for i, m := range all {
			if wantText := fmt.Sprintf("message %d", i); i%3 == 0 && m.Content != wantText {
				t.Fatalf("message %d is %q, want %q", i, m.Content, wantText)
			}
		}
		for i := 1; i < len(all); i++ {
			if all[i-1].ID >= all[i].ID {
				t.Fatalf("messages out of order at %d", i)
			}
		}
		if w, err := st.Session(testScope).Window(bg, WindowOptions{MaxMessages: 10}); err != nil {
			t.Fatal(err)
		} else {
			checkWindowInvariants(t, w, WindowOptions{MaxMessages: 10})
		}
		st.Close()
		t.Logf("round %d: killed after %d acks, %d messages on disk", round, acked+1, len(all))
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDurabilityReachesStore checks end to end that Options.Durability
// reaches the store's sync setting: kv's TestDurabilityReachesDisk checks
// the last step, that kv syncs each write before it returns. TestDurabilityKill9 passes
// with fsync off (a killed process leaves its writes in the OS page cache),
// so this is the test that fails when Sync stops reaching the disk.
func TestDurabilityReachesStore(t *testing.T) {
	kvtest.SkipOnPostgres(t, "a PostgreSQL store's commits are as durable as the server's synchronous_commit makes them: kv reports Sync whatever the option")
	for _, tt := range []struct {
		name string
		opts *Options
		want Durability
	}{
		{"nil options", nil, Sync},
		{"Sync", &Options{Durability: Sync}, Sync},
		{"Async", &Options{Durability: Async}, Async},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Open(t.TempDir(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got := st.db.KV().Durability(); got != tt.want {
				t.Errorf("kv Durability() = %v, want %v", got, tt.want)
			}
			if got := st.Stats().Durability; got != tt.want {
				t.Errorf("Stats().Durability = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRecallSummaryWriteLost: Recall commits the rolling summary without
// waiting for an fsync, so a crash of the machine can lose that write.
// The disk image taken just before a Recall is what such a crash leaves
// (every Append before it was synced; the summary's write is gone). Opened
// from that image, the store must give the same Recall, summary included:
// the summary's Through mark lets the lost write be redone, and nothing a
// user can see is lost. The second round loses a write that rolls an
// earlier, durable summary forward.
func TestRecallSummaryWriteLost(t *testing.T) {
	kvtest.SkipOnPostgres(t, "models a machine crash with a copy of Badger's directory taken before a write")
	dir := t.TempDir()
	opts := &Options{SummaryTokens: 60}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	scope := Scope{Tenant: "acme", User: "alice", Session: "long"}
	q := Query{Scope: scope, Text: "Lisbon budget", MaxMessages: 5}
	sess := s.Session(scope)
	for round := range 2 {
		for i := range 10 {
			n := round*10 + i
			mustAppend(t, sess, user(fmt.Sprintf("Question %d: the Lisbon budget line %d is approved.", n, n)), asst(fmt.Sprintf("Answer %d: noted.", n)))
		}
		// The extraction worker must be done: what it writes after the
		// copy would differ between the two stores (memories and facts
		// among the items), and copyStoreDir needs no writer running.
		if err := s.Flush(bg); err != nil {
			t.Fatal(err)
		}
		// One clock for both Recalls: the preamble states the minute,
		// which a slow machine can see roll over between them.
		q.Now = time.Now()
		image := filepath.Join(t.TempDir(), "image")
		copyStoreDir(t, dir, image)
		want, err := s.Recall(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		if want.Summary == "" {
			t.Fatalf("round %d: no summary to lose", round)
		}

		crashed, err := Open(image, opts)
		if err != nil {
			t.Fatalf("round %d: open the image: %v", round, err)
		}
		lost, err := crashed.Session(scope).Summary(bg)
		if err != nil {
			t.Fatal(err)
		}
		if lost == want.Summary {
			t.Fatalf("round %d: the image already holds the new summary; it does not model a lost write", round)
		}
		got, err := crashed.Recall(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Summary != want.Summary || got.Preamble != want.Preamble || label(got.Window) != label(want.Window) || len(got.Items) != len(want.Items) {
			t.Errorf("round %d: after losing the summary's write Recall gives\nsummary %q\npreamble %q\nwindow %s\n%d items\nwant\nsummary %q\npreamble %q\nwindow %s\n%d items",
				round, got.Summary, got.Preamble, label(got.Window), len(got.Items), want.Summary, want.Preamble, label(want.Window), len(want.Items))
		}
		if stored, err := crashed.Session(scope).Summary(bg); err != nil || stored != want.Summary {
			t.Errorf("round %d: summary stored again = %q, %v; want %q", round, stored, err, want.Summary)
		}
		if err := crashed.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// copyStoreDir copies the files of an open store's directory, as a crash
// of the machine after its last fsync would leave them. It is safe only
// while nothing writes, flushes or compacts: the callers' few small
// appends stay in one 8 MiB memtable, and extraction is off or flushed.
func copyStoreDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecallHoldsNoLockAppendWaitsOn (a guard: Recall has never taken
// the session's lock, and must not start to) stops a Recall inside its summarizer
// (a slow provider, or the refresh of a long session) and appends to the
// same session meanwhile, on disk with synced commits: the Append must not
// wait for the Recall. Then the Recall finishes, and its summary does not
// cover the message appended meanwhile, which is still in the window.
func TestRecallHoldsNoLockAppendWaitsOn(t *testing.T) {
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s, err := Open(t.TempDir(), &Options{Summarizer: summarizerFunc(func(ctx context.Context, prev string, msgs []Message, _ int) (string, error) {
		once.Do(func() { close(inside); <-release })
		return fmt.Sprintf("%d messages", len(msgs)), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scope := Scope{Tenant: "acme", User: "alice", Session: "busy"}
	sess := s.Session(scope)
	for i := range 8 {
		mustAppend(t, sess, user(fmt.Sprint("question ", i)), asst(fmt.Sprint("answer ", i)))
	}
	recalled := make(chan error, 1)
	go func() {
		_, err := s.Recall(bg, Query{Scope: scope, Text: "question", MaxMessages: 4})
		recalled <- err
	}()
	<-inside
	appended := make(chan error, 1)
	go func() { appended <- sess.Append(bg, user("late question")) }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Append waited for a Recall stopped in its summarizer")
	}
	close(release)
	if err := <-recalled; err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recall(bg, Query{Scope: scope, Text: "question", MaxMessages: 4})
	if err != nil {
		t.Fatal(err)
	}
	if last := rec.Window[len(rec.Window)-1]; last.Content != "late question" {
		t.Errorf("window ends with %q, want the message appended during the first Recall", last.Content)
	}
}
