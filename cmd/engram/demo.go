package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

type demoOptions struct {
	dir         string
	maxMessages int
	maxTokens   int
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play a support conversation, show the window, then Recall in a new session",
		Long: `demo plays a customer-support conversation into a store: the user gives her
name and her renewal owner, the assistant calls tools, the user states a
preference and a dated event, and finally asks "Who owns my renewal?". It
prints the window a model would be given for that question under a message
and token budget, with the token count of every message and why each one was
kept or trimmed.

Nothing is stored by hand: the store's offline extractor forms memories,
entities and facts from the messages as they are appended. demo waits for
it (Flush) and prints what it produced, each memory and fact with the id of
the message it came from. Then the user returns in a new session, and demo
prints what Recall, with its default sources, gives the model there, and
the trace of every candidate it considered.

The store lives in a temporary directory that is removed afterwards, unless
--dir names one to keep.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "keep the store in this directory (default: a temporary one)")
	cmd.Flags().IntVar(&o.maxMessages, "max-messages", 20, "window budget in messages, system messages included")
	cmd.Flags().IntVar(&o.maxTokens, "max-tokens", 250, "window budget in tokens (o200k_base), system messages included")
	return cmd
}

var demoScope = memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"}

// demoConversation is the support scenario. The Dana turn must survive the
// default window; the oldest turns and a tool pair must not.
func demoConversation() []memory.Message {
	args := func(s string) json.RawMessage { return json.RawMessage(s) }
	return []memory.Message{
		{Role: memory.RoleSystem, Content: "You are Acme's support agent. Answer from the conversation and say when you are unsure."},
		{Role: memory.RoleUser, Content: "Hi, I need help with my subscription renewal."},
		{Role: memory.RoleAssistant, Content: "Happy to help. Could you tell me your name and who handles the renewal on your side?"},
		{Role: memory.RoleUser, Content: "My name is Alice. My renewal owner is Dana."},
		{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "call_1", Name: "lookup_account", Arguments: args(`{"customer":"Alice"}`)}}},
		{Role: memory.RoleTool, ToolCallID: "call_1", Name: "lookup_account", Content: `{"account":"3942","plan":"Team","seats":25,"renews":"2026-12-01"}`},
		{Role: memory.RoleAssistant, Content: "Thanks Alice. Account 3942 (Team plan, 25 seats) renews on 1 December 2026."},
		{Role: memory.RoleUser, Content: "Can we add five seats before then?"},
		{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "call_2", Name: "quote_seats", Arguments: args(`{"account":"3942","add":5}`)}}},
		{Role: memory.RoleTool, ToolCallID: "call_2", Name: "quote_seats", Content: `{"price_per_seat":12,"currency":"EUR","monthly_total":60}`},
		{Role: memory.RoleAssistant, Content: "Five more seats would add EUR 60 a month from the renewal date."},
		{Role: memory.RoleUser, Content: "Last Friday I met Dana at the Lisbon office. I prefer email over phone calls."},
		{Role: memory.RoleAssistant, Content: "Noted: email it is."},
		{Role: memory.RoleUser, Content: "Who owns my renewal?"},
	}
}

func runDemo(ctx context.Context, w io.Writer, o demoOptions) (err error) {
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "engram-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	// Default options: the offline rule extractor runs in the background
	// on every user and assistant message appended.
	store, err := memory.Open(dir, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	sess := store.Session(demoScope)
	if err := store.Forget(ctx, demoUser); err != nil { // a kept --dir replays from scratch
		return err
	}
	// The conversation, as an agent appends it: no Remember, no Relate.
	if err := sess.Append(ctx, demoConversation()...); err != nil {
		return err
	}
	// Extraction runs in the background; Flush waits for it.
	if err := store.Flush(ctx); err != nil {
		return err
	}
	log, err := sess.Messages(ctx, memory.MessagesOptions{})
	if err != nil {
		return err
	}
	total := 0
	for _, m := range log {
		total += m.Tokens
	}
	fmt.Fprintf(w, "Engram demo: store in %s\n", dir)
	fmt.Fprintf(w, "Session %s/%s/%s holds %s, %s (o200k_base).\n\n",
		demoScope.Tenant, demoScope.User, demoScope.Session, plural.Count(len(log), "message"), plural.Count(total, "token"))
	if err := printExtracted(ctx, w, store, log); err != nil {
		return err
	}

	opts := memory.WindowOptions{MaxMessages: o.maxMessages, MaxTokens: o.maxTokens}
	window, err := sess.Window(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Window for the next model call (budget: %s, %s):\n", plural.Count(opts.MaxMessages, "message"), plural.Count(opts.MaxTokens, "token"))
	printWindow(w, log, window, opts)

	// The same session under a budget whose naive cut would split a tool
	// call from its result.
	tight := memory.WindowOptions{MaxMessages: 6}
	tw, err := sess.Window(ctx, tight)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe same session with a budget of %s:\n", plural.Count(tight.MaxMessages, "message"))
	printWindow(w, log, tw, tight)

	fmt.Fprintln(w)
	question := log[len(log)-1].Content
	if answer := findContent(window, "renewal owner is Dana"); answer != "" {
		fmt.Fprintf(w, "%q is answered inside the window: %q\n", question, answer)
	} else {
		fmt.Fprintf(w, "%q: the Dana message was trimmed from this window; raise --max-messages or --max-tokens.\n", question)
	}
	return demoRecall(ctx, w, store)
}

var (
	demoUser     = memory.Scope{Tenant: "acme", User: "alice"}
	demoFollowUp = memory.Scope{Tenant: "acme", User: "alice", Session: "follow-up"}
)

// demoFollowUpQuestion opens a new session days later.
const demoFollowUpQuestion = "Hi, it's Alice again. Who owns my renewal?"

// demoRecall asks the follow-up in a new session and prints what Recall
// gives the model, and its trace.
func demoRecall(ctx context.Context, w io.Writer, store *memory.Store) error {
	follow := store.Session(demoFollowUp)
	if err := follow.Append(ctx, memory.Message{Role: memory.RoleUser, Content: demoFollowUpQuestion}); err != nil {
		return err
	}
	// Recall's default sources: the user's memories, earlier sessions'
	// messages (episodes) and the graph, entered through the entities the
	// text names, the user's own by "my".
	rec, err := store.Recall(ctx, memory.Query{Scope: demoFollowUp, Text: demoFollowUpQuestion, TopK: 8, MaxTokens: 600, Trace: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nA new session, %q: %q\n", demoFollowUp.Session, demoFollowUpQuestion)
	fmt.Fprintf(w, "Recall gives the model these messages (%d of %s):\n\n", rec.Trace.TokensUsed, plural.Count(rec.Trace.Budget, "token"))
	for _, m := range rec.ChatMessages() {
		fmt.Fprintf(w, "[%s]\n%s\n\n", m.Role, m.Content)
	}
	fmt.Fprintf(w, "Trace (entities named: %s; %v):\n", strings.Join(rec.Trace.Entities, ", "), rec.Trace.Took.Round(10*time.Microsecond))
	return writeTrace(w, &rec.Trace, 12)
}

// printExtracted prints what extraction formed from the conversation
// log: the user's graph entities, the facts and memories, each with the
// message it came from (its number in the log and its id).
func printExtracted(ctx context.Context, w io.Writer, store *memory.Store, log []memory.Message) error {
	at := map[string]int{}
	for i, m := range log {
		at[m.ID] = i + 1
	}
	source := func(ids ...string) string {
		var out []string
		for _, id := range ids {
			if n, ok := at[id]; ok {
				out = append(out, fmt.Sprintf("#%d %s", n, id))
			} else {
				out = append(out, id)
			}
		}
		return strings.Join(out, ", ")
	}
	var g graph.GraphPage
	var facts []graph.Fact
	err := store.ViewGraph(ctx, demoUser, func(gtx *graph.Tx) (err error) {
		if g, err = gtx.ReadGraph(graph.ReadOptions{}); err != nil {
			return err
		}
		facts, err = gtx.Facts(graph.FactQuery{})
		return err
	})
	if err != nil {
		return err
	}
	mems, err := store.Memories(ctx, demoUser, memory.MemoriesOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Extraction formed from it (offline rules, no Remember or Relate): %s, %s, %s\n",
		plural.Count(len(g.Entities), "entity"), plural.Count(len(facts), "fact"), plural.Count(len(mems), "memory"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range g.Entities {
		aliases := ""
		if len(e.Aliases) > 0 {
			aliases = " (also " + strings.Join(e.Aliases, ", ") + ")"
		}
		fmt.Fprintf(tw, "  entity\t%s [%s]%s\n", e.Name, e.Type, aliases)
	}
	for _, f := range facts {
		fmt.Fprintf(tw, "  fact\t%s —%s→ %s\tfrom message %s\n", f.Subject, f.Predicate, f.Object, source(f.Source))
	}
	for _, m := range mems {
		fmt.Fprintf(tw, "  memory\t(%s) %s\tfrom message %s\n", m.Kind, m.Text, source(m.Source...))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// writeTrace prints a Recall trace as a table, at most limit candidates.
func writeTrace(w io.Writer, tr *memory.Trace, limit int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  rank	source	lists (rank)	fused	kept	text")
	for i, c := range tr.Candidates {
		if i == limit {
			fmt.Fprintf(tw, "  ...	%d more				\n", len(tr.Candidates)-limit)
			break
		}
		var lists []string
		for name, r := range c.Ranks {
			lists = append(lists, fmt.Sprintf("%s %d", name, r))
		}
		slices.Sort(lists)
		kept := "yes"
		if !c.Kept {
			kept = "no: " + c.Reason
		}
		text := c.Text
		if len(text) > 60 {
			text = text[:57] + "..."
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%.4f\t%s\t%s\n", c.Rank, c.Source, strings.Join(lists, ", "), c.Fused, kept, text)
	}
	return tw.Flush()
}

func findContent(msgs []memory.Message, needle string) string {
	for _, m := range msgs {
		if strings.Contains(m.Content, needle) {
			return m.Content
		}
	}
	return ""
}

// printWindow prints every message of the log with its token count and
// whether the window kept it, and why.
func printWindow(w io.Writer, log, window []memory.Message, opts memory.WindowOptions) {
	kept := map[string]bool{}
	used := 0
	for _, m := range window {
		kept[m.ID] = true
		used += m.Tokens
	}
	// What a plain "newest that fit" cut would have kept, ignoring tool
	// pairs: the difference is what the pairing rule dropped.
	naive := map[string]bool{}
	n, tokens := 0, 0
	for _, m := range log {
		if m.Role == memory.RoleSystem {
			n++
			tokens += m.Tokens
		}
	}
	for i := len(log) - 1; i >= 0; i-- {
		m := log[i]
		if m.Role == memory.RoleSystem {
			continue
		}
		if n+1 > opts.MaxMessages || (opts.MaxTokens > 0 && tokens+m.Tokens > opts.MaxTokens) {
			break
		}
		n, tokens = n+1, tokens+m.Tokens
		naive[m.ID] = true
	}
	pairDropped := false
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\trole\ttokens\t\tmessage")
	for i, m := range log {
		status := "  "
		reason := ""
		switch {
		case kept[m.ID] && m.Role == memory.RoleSystem:
			status, reason = "✓ ", "system, always kept"
		case kept[m.ID]:
			status = "✓ "
		case naive[m.ID]:
			status, reason = "✗ ", "dropped with its tool pair"
			pairDropped = true
		default:
			status, reason = "✗ ", "trimmed, oldest first"
		}
		if reason != "" {
			reason = "  [" + reason + "]"
		}
		fmt.Fprintf(tw, "%s%2d\t%s\t%d\t\t%s%s\n", status, i+1, m.Role, m.Tokens, describe(m), reason)
	}
	tw.Flush()
	fmt.Fprintf(w, "  kept %d of %s, %s\n", len(window), plural.Count(len(log), "message"), plural.Count(used, "token"))
	if pairDropped {
		fmt.Fprintln(w, "  (a tool result fit the budget but its call did not: a window never starts with an orphan tool result)")
	}
}

func describe(m memory.Message) string {
	if len(m.ToolCalls) > 0 {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, fmt.Sprintf("%s(%s) [%s]", c.Name, c.Arguments, c.ID))
		}
		return "calls " + strings.Join(calls, ", ")
	}
	if m.Role == memory.RoleTool {
		return fmt.Sprintf("[%s] %s", m.ToolCallID, m.Content)
	}
	return m.Content
}
