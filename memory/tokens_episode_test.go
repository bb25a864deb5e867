package memory

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// TestEpisodeLineTokens checks that an episode line's time count (see
// episodeTimeTokens) plus the count stored with the episode's record
// (episodeTextTokens) is the line's own count, for random texts, times and
// sessions (white space in them included).
func TestEpisodeLineTokens(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "é", "ß", "中", "ア", "\u0301", "1", "9", " ", "  ", "\t", "\n", "\r\n",
		"\u00a0", "\u2003", "'", "'s", "/", ".", ",", "!", "-", "_", "\"", "(", "]", "🙂", "\u200b", "renewal", " Dana", "42"}
	sessions := []string{"", "s-1", "s1", "42", "chat:7", "x]", "é", "-", "a.b", "セッション", "a b", "a  b", " a", "a ", "a\u00a0b", "\u2003"}
	r := rand.New(rand.NewPCG(9, 10))
	n := 300
	if testing.Short() {
		n = 80
	}
	for _, name := range []string{"o200k_base", "cl100k_base", "p50k_base"} {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var b strings.Builder
			for range 1 + r.IntN(30) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			if i%7 == 0 { // a stretch past maxRun
				b.WriteString(strings.Repeat("ab", 300+r.IntN(300)))
			}
			text := strings.TrimSpace(b.String())
			if text == "" {
				continue
			}
			it := Item{Source: SourceEpisodes, Text: text, Session: sessions[r.IntN(len(sessions))],
				Time: time.Date(1990+r.IntN(80), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), 0, 0, time.UTC)}
			if got, want := episodeTimeTokens(enc, it.Time)+episodeTextTokens(enc, it.Session, text), tokenLen(enc, itemLine(&it)); got != want {
				t.Fatalf("%s: %q: stored %d, line %d (%q)", name, text, got, want, itemLine(&it))
			}
		}
	}
}

// TestRecallUsesStoredEpisodeTokens checks that Recall takes an earlier
// message's token count from its episode record (written by Append or
// ImportMessages), not by counting its line again, and that a record
// written without one, as before counts were stored, is counted when
// recalled, to the same figure.
func TestRecallUsesStoredEpisodeTokens(t *testing.T) {
	for _, how := range []string{"Append", "ImportMessages"} {
		t.Run(how, func(t *testing.T) { testRecallUsesStoredEpisodeTokens(t, how) })
	}
}

// testRecallUsesStoredEpisodeTokens is TestRecallUsesStoredEpisodeTokens
// of an episode written by how.
func testRecallUsesStoredEpisodeTokens(t *testing.T, how string) {
	st := openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice"}
	// A text nobody else counts: the line cache cannot have it.
	long := "Lisbon offsite budget notes: " + strings.Repeat("venue catering transport rooms, Überweisungsbestätigung für München, 東京都の会議室 ", 20) + time.Now().String()
	s1 := Scope{Tenant: "acme", User: "alice", Session: "s-1"}
	if how == "Append" {
		mustAppend(t, st.Session(s1), user(long))
	} else if _, err := st.ImportMessages(bg, s1, []Message{user(long)}); err != nil {
		t.Fatal(err)
	}
	q := Query{Trace: true, Scope: scope, Text: "Lisbon offsite budget", Sources: []Source{SourceEpisodes}, MaxTokens: 4000}
	var ep engine.Record
	if err := st.db.View(bg, func(tx *engine.Tx) error {
		n := 0
		err := tx.ScanRecords(scope, spaceMessages, ulid.ULID{}, func(r engine.Record) (bool, error) {
			ep, n = r, n+1
			return true, nil
		})
		if err == nil && n != 1 {
			t.Fatalf("%d episodes", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ep.Metadata[memoryTokensKey] == "" {
		t.Fatalf("episode record has no count: %v", ep.Metadata)
	}
	enc, _ := st.encoder()
	want := tokenLen(enc, itemLine(&Item{Source: SourceEpisodes, Text: ep.Text, Time: ep.Time, Session: "s-1"})) + 1
	resetTokenCaches()
	before := tokenizedBytes.Load()
	rec, err := st.Recall(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, rec, ep.ID); got != want {
		t.Errorf("stored: Tokens %d, want %d", got, want)
	}
	if n := tokenizedBytes.Load() - before; n >= int64(len(long)) {
		t.Errorf("Recall tokenized %d bytes, the episode's %d: its stored count was not used", n, len(long))
	}

	// The same episode as written before the count was stored.
	if err := st.db.Update(bg, func(tx *engine.Tx) error {
		delete(ep.Metadata, memoryTokensKey)
		_, err := tx.PutRecord(scope, spaceMessages, ep)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	resetTokenCaches()
	before = tokenizedBytes.Load()
	if rec, err = st.Recall(bg, q); err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, rec, ep.ID); got != want {
		t.Errorf("old record: Tokens %d, want %d", got, want)
	}
	if n := tokenizedBytes.Load() - before; n < int64(len(long)) {
		t.Errorf("old record: Recall tokenized %d bytes, less than the episode's %d", n, len(long))
	}
}

// TestEpisodeTokens checks that episodeTokens, which tokenizes a content
// once, gives what counting the episode's line piece and the content
// apart gives, for random contents, names and sessions.
func TestEpisodeTokens(t *testing.T) {
	alphabet := []string{"a", "Z", "é", "中", "\u0301", "1", "9", " ", "  ", "\t", "\n", "\u00a0", "'", "'s", "/", ".", ",", "!", "-", "]", "🙂", "renewal", " Dana", "42"}
	sessions := []string{"", "s-1", "a b", "\u2003", "x]"}
	r := rand.New(rand.NewPCG(13, 14))
	n := 400
	if testing.Short() {
		n = 100
	}
	shared := 0
	for _, name := range []string{"o200k_base", "cl100k_base", "p50k_base"} {
		enc, err := tokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var b strings.Builder
			if i%9 == 0 {
				b.WriteString(strings.Repeat("ab", 20+r.IntN(60))) // a first stretch near maxHead
			}
			for range 1 + r.IntN(25) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			m := Message{Role: RoleUser, Content: b.String()}
			if i%2 == 0 { // one line, as most messages are
				m.Content = strings.Join(strings.Fields(m.Content), " ")
			}
			if strings.TrimSpace(m.Content) == "" {
				continue
			}
			if i%11 == 0 {
				m.Name = "dana"
			}
			session := sessions[r.IntN(len(sessions))]
			text, _ := episodeText(&m)
			episode, content := episodeTokens(enc, session, &m)
			if want := episodeTextTokens(enc, session, text); episode != want {
				t.Fatalf("%s: %q in %q: episode %d, want %d", name, m.Content, session, episode, want)
			}
			if content >= 0 {
				shared++
				if want := tokenLen(enc, m.Content); content != want {
					t.Fatalf("%s: %q: content %d, want %d", name, m.Content, content, want)
				}
			}
		}
	}
	if shared < n {
		t.Fatalf("only %d of %d contents counted once", shared, 3*n)
	}
}
