package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/engramdb/engram/memory"
)

// BenchmarkExtractiveFold is what a Recall after one new message pays for
// the rolling summary with the offline summarizer: the session's summary
// (256 tokens, rolled over 200 turns first) and the one message that left
// the window, folded.
func BenchmarkExtractiveFold(b *testing.B) {
	turn := func(i int) memory.Message {
		return memory.Message{Role: memory.RoleUser, Content: fmt.Sprintf(
			"Turn %d: the Lisbon offsite needs %d rooms. Dana confirms the venue on Friday, account 3942, and the budget moves to Q%d.", i, i%17, i%4+1)}
	}
	prev := ""
	for i := range 200 {
		var err error
		if prev, err = (memory.Extractive{}).Summarize(context.Background(), prev, []memory.Message{turn(i)}, memory.DefaultSummaryTokens); err != nil {
			b.Fatal(err)
		}
	}
	msg := []memory.Message{turn(200)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (memory.Extractive{}).Summarize(context.Background(), prev, msg, memory.DefaultSummaryTokens); err != nil {
			b.Fatal(err)
		}
	}
}
