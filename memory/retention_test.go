package memory

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"github.com/engramdb/engram/kv/kvtest"
)

func TestRetentionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Retention
		bad  []string
	}{
		{"zero keeps everything", Retention{}, nil},
		{"positive", Retention{Messages: time.Hour, Episodes: time.Minute, Memories: 24 * time.Hour}, nil},
		{"negative", Retention{Messages: -1, Episodes: -time.Hour, Memories: -time.Second},
			[]string{"Retention.Messages", "Retention.Episodes", "Retention.Memories"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Open("", &Options{Retention: tc.r})
			if len(tc.bad) == 0 {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				st.Close()
				return
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Open = %v, want ErrInvalidOptions", err)
			}
			for _, f := range tc.bad {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
}

// TestFaultErasureRetention expires messages, episodes and memories by
// age and scans every file of the store for their text after the
// compaction that follows; what is younger than its kind's age stays.
func TestFaultErasureRetention(t *testing.T) {
	kvtest.SkipOnPostgres(t, "scans Badger's files for erased bytes")
	dir := t.TempDir()
	opts := &Options{
		Durability:    Async,
		Embedder:      embedtest.NewFake(nil),
		SweepInterval: -1, // the test runs the pass itself, at a chosen time
		Retention:     Retention{Messages: time.Hour, Episodes: time.Hour, Memories: 3 * time.Hour},
	}
	st := openErasureStore(t, dir, opts)
	defer st.Close()
	old := Scope{Tenant: "acme", User: "alice", Session: "old"}
	mixed := Scope{Tenant: "acme", User: "alice", Session: "mixed"}
	var texts []string
	for i := range 30 {
		text := "an old note " + erasureSecret + strings.Repeat(" more", i)
		texts = append(texts, text)
		mustAppend(t, st.Session(old), user(text))
	}
	mustAppend(t, st.Session(mixed), user("early words "+erasureSecret), asst("early answer"))
	if _, err := st.Remember(bg, old, Memory{Kind: KindEpisode, Text: "went to " + erasureSecret + " island"}); err != nil {
		t.Fatal(err)
	}
	texts = append(texts, "went to "+erasureSecret+" island")
	if _, err := st.Remember(bg, old, Memory{Kind: KindPreference, Text: "likes keepsake tea"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // ids have millisecond resolution
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	mustAppend(t, st.Session(mixed), user("late words stay"))
	if _, err := st.Recall(bg, Query{Scope: mixed, Text: "words", MaxMessages: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(bg); err != nil {
		t.Fatal(err)
	}
	needles := [][]byte{[]byte(erasureSecret)}
	for _, text := range texts {
		h := embed.ContentHash(text)
		needles = append(needles, h[:])
	}
	if hits := scanFiles(t, dir, needles...); len(hits) == 0 {
		t.Fatal("the secret is in no file before the retention pass: the scan proves nothing")
	}

	// Two hours after the old data: messages and episodes (one hour) go,
	// the preference (three hours) stays.
	n, err := st.retain(bg, mid.Add(time.Hour))
	if err != nil {
		t.Fatalf("retain: %v", err)
	}
	if n == 0 {
		t.Fatal("retain erased nothing")
	}
	if err := st.Compact(bg); err != nil {
		t.Fatal(err)
	}
	if hits := scanFiles(t, dir, needles...); len(hits) > 0 {
		t.Errorf("after the retention pass and compaction: %v", hits)
	}
	if sessions, err := st.Sessions(bg, old, SessionsOptions{}); err != nil || len(sessions) != 1 || sessions[0].ID != "mixed" {
		t.Errorf("sessions = %+v, %v; want only the mixed one", sessions, err)
	}
	msgs, err := st.Session(mixed).Messages(bg, MessagesOptions{})
	if err != nil || label(msgs) != "U:late words stay" {
		t.Errorf("mixed session = %s, %v", label(msgs), err)
	}
	mems, err := st.Memories(bg, old, MemoriesOptions{})
	if err != nil || len(mems) != 1 || mems[0].Text != "likes keepsake tea" {
		t.Errorf("memories = %+v, %v", mems, err)
	}
	if hits := scanFiles(t, dir, []byte("keepsake")); len(hits) == 0 {
		t.Error("the kept memory is in no file")
	}
	// Four hours on, the preference goes too.
	if _, err := st.retain(bg, mid.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if mems, err := st.Memories(bg, old, MemoriesOptions{}); err != nil || len(mems) != 0 {
		t.Errorf("memories after four hours = %+v, %v", mems, err)
	}
}

// TestRetentionBackground checks that the background sweep applies the
// retention ages by itself.
func TestRetentionBackground(t *testing.T) {
	st := openMem(t, &Options{SweepInterval: 10 * time.Millisecond, Retention: Retention{Messages: time.Millisecond}})
	mustAppend(t, st.Session(testScope), user("fleeting"))
	deadline := time.Now().Add(time.Minute) // a hang, not a speed limit
	for {
		msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the background sweep never expired the message")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
