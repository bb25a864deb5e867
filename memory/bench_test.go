package memory

import (
	"fmt"
	"testing"
)

// BenchmarkAppend appends one message per op to an on-disk store. The sync
// and async rows are each other's peer: their ratio is the cost of fsync.
func BenchmarkAppend(b *testing.B) {
	for _, d := range []Durability{Sync, Async} {
		b.Run(d.String(), func(b *testing.B) {
			st, err := Open(b.TempDir(), &Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			sess := st.Session(testScope)
			msg := user("My renewal owner is Dana; please check account 3942 before Friday.")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := sess.Append(bg, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendExtraction compares Append with extraction in the
// background (the default) against extraction off, on disk with Sync
// durability; the target is async within 10% of off at p50 (see
// engram bench extract, which interleaves the two and reports
// percentiles). The messages vary so that extraction writes something.
func BenchmarkAppendExtraction(b *testing.B) {
	texts := []string{
		"My renewal owner is Dana; please check account 3942 before Friday.",
		"I prefer email over phone calls.",
		"Last Saturday I went hiking with my sister Jane.",
		"I work at Acme Corp in Lisbon.",
	}
	for _, mode := range []ExtractionMode{ExtractOff, ExtractAsync} {
		b.Run(mode.String(), func(b *testing.B) {
			st, err := Open(b.TempDir(), &Options{Extraction: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			sess := st.Session(testScope)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := sess.Append(bg, user(texts[i%len(texts)])); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			if err := st.Flush(bg); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkWindow builds a window over a 10,000-message session (a system
// prompt, user and assistant turns, tool calls with results). Its peer,
// read-all, pages through the whole session as a store without a window
// index would: the ratio shows the window costs O(window), not O(session).
func BenchmarkWindow(b *testing.B) {
	const n = 10000
	st, err := Open(b.TempDir(), &Options{Durability: Async})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sess := st.Session(testScope)
	batch := []Message{sys("You are a support agent for Acme. Be brief.")}
	for i := 1; len(batch) > 0 || i < n; i++ {
		if i < n {
			switch i % 5 {
			case 2:
				batch = append(batch, call(fmt.Sprint("c", i)))
			case 3:
				batch = append(batch, result(fmt.Sprint("c", i-1)))
			case 0, 4:
				batch = append(batch, asst(fmt.Sprintf("Answer %d: the renewal owner for account %d is Dana.", i, 3900+i%100)))
			default:
				batch = append(batch, user(fmt.Sprintf("Question %d about account %d?", i, 3900+i%100)))
			}
		}
		if len(batch) == 500 || (i >= n && len(batch) > 0) {
			if err := sess.Append(bg, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
		if i >= n {
			break
		}
	}
	if msgs, _ := sess.Messages(bg, MessagesOptions{Limit: n + 10}); len(msgs) != n {
		b.Fatalf("session has %d messages, want %d", len(msgs), n)
	}
	for _, opts := range []WindowOptions{{MaxMessages: 20}, {MaxMessages: 200, MaxTokens: 2000}} {
		b.Run(fmt.Sprintf("messages=%d/max=%d/tokens=%d", n, opts.MaxMessages, opts.MaxTokens), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := sess.Window(bg, opts)
				if err != nil || len(w) == 0 {
					b.Fatal(len(w), err)
				}
			}
		})
	}
	b.Run(fmt.Sprintf("messages=%d/read-all", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := sess.Messages(bg, MessagesOptions{Limit: n})
			if err != nil || len(msgs) != n {
				b.Fatal(len(msgs), err)
			}
		}
	})
}

// BenchmarkCountTokens counts the message BenchmarkAppend appends: the part
// of an append spent in the tokenizer.
func BenchmarkCountTokens(b *testing.B) {
	st := openMem(b, nil)
	msg := user("My renewal owner is Dana; please check account 3942 before Friday.")
	if _, err := st.CountTokens(msg); err != nil { // load the encoding outside the timer
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.CountTokens(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecallGrowingSession is the agent loop: append a turn, then
// Recall for the next model call, in a session that keeps growing, so
// every Recall folds the message that just left the window into the
// rolling summary. Its peer, static, recalls in a session that does not
// grow (the summary is up to date): the ratio is the cost of the refresh.
func BenchmarkRecallGrowingSession(b *testing.B) {
	for _, grow := range []bool{true, false} {
		name := "static"
		if grow {
			name = "growing"
		}
		b.Run(name, func(b *testing.B) {
			st, err := Open(b.TempDir(), &Options{Durability: Async})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			sess := st.Session(testScope)
			turn := func(i int) Message {
				return user(fmt.Sprintf("Turn %d: the Lisbon offsite needs %d rooms; Dana confirms the venue on Friday, account 3942.", i, i%17))
			}
			for i := range 200 {
				if err := sess.Append(bg, turn(i)); err != nil {
					b.Fatal(err)
				}
			}
			q := Query{Scope: testScope, Text: "How many rooms for Lisbon?", MaxMessages: 20, Sources: []Source{SourceMemories, SourceEpisodes}}
			if _, err := st.Recall(bg, q); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 200
			for b.Loop() {
				if grow {
					b.StopTimer()
					if err := sess.Append(bg, turn(i)); err != nil {
						b.Fatal(err)
					}
					i++
					b.StartTimer()
				}
				if _, err := st.Recall(bg, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
