package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestWindowRules(t *testing.T) {
	tests := []struct {
		name string
		log  []Message
		opts WindowOptions
		want string
		err  error
	}{
		{
			name: "everything fits",
			log:  []Message{sys("rules"), user("1"), asst("2")},
			opts: WindowOptions{MaxMessages: 10},
			want: "S:rules U:1 A:2",
		},
		{
			name: "oldest trimmed first, system kept",
			log:  []Message{sys("rules"), user("1"), asst("2"), user("3"), asst("4")},
			opts: WindowOptions{MaxMessages: 3},
			want: "S:rules U:3 A:4",
		},
		{
			name: "system messages keep their place",
			log:  []Message{sys("a"), user("1"), asst("2"), sys("b"), user("3"), asst("4")},
			opts: WindowOptions{MaxMessages: 4},
			want: "S:a S:b U:3 A:4",
		},
		{
			name: "system message inside the window stays in order",
			log:  []Message{user("1"), asst("2"), sys("b"), user("3")},
			opts: WindowOptions{MaxMessages: 3},
			want: "A:2 S:b U:3",
		},
		{
			name: "tool call and result dropped together",
			log:  []Message{user("1"), call("x"), result("x"), asst("2"), user("3")},
			opts: WindowOptions{MaxMessages: 3},
			want: "A:2 U:3",
		},
		{
			name: "never starts with an orphan tool result",
			log:  []Message{user("1"), call("x"), result("x"), asst("2")},
			opts: WindowOptions{MaxMessages: 2},
			want: "A:2",
		},
		{
			name: "pair kept when it fits",
			log:  []Message{user("1"), call("x"), result("x"), asst("2")},
			opts: WindowOptions{MaxMessages: 3},
			want: "C:x T:x A:2",
		},
		{
			name: "parallel calls: all results stay with the call",
			log:  []Message{user("1"), call("x", "y"), result("x"), result("y"), asst("2")},
			opts: WindowOptions{MaxMessages: 3},
			want: "A:2",
		},
		{
			name: "parallel calls kept whole",
			log:  []Message{user("1"), call("x", "y"), result("x"), result("y"), asst("2")},
			opts: WindowOptions{MaxMessages: 4},
			want: "C:x,y T:x T:y A:2",
		},
		{
			name: "late result keeps everything since its call",
			log:  []Message{user("1"), call("x"), user("2"), result("x"), asst("3")},
			opts: WindowOptions{MaxMessages: 3},
			want: "A:3",
		},
		{
			name: "call whose result is pending is kept",
			log:  []Message{user("1"), asst("2"), call("x")},
			opts: WindowOptions{MaxMessages: 2},
			want: "A:2 C:x",
		},
		{
			name: "tool group at the end that does not fit leaves an empty window",
			log:  []Message{sys("rules"), user("1"), call("x"), result("x")},
			opts: WindowOptions{MaxMessages: 2},
			want: "S:rules",
		},
		{
			name: "token budget trims",
			// "user" message "1": 3 framing + 1 role + 1 content = 5 tokens.
			log:  []Message{user("1"), user("2"), user("3")},
			opts: WindowOptions{MaxTokens: 10},
			want: "U:2 U:3",
		},
		{
			name: "token budget counts system messages",
			log:  []Message{sys("1"), user("2"), user("3")},
			opts: WindowOptions{MaxTokens: 10},
			want: "S:1 U:3",
		},
		{
			name: "system messages alone over budget",
			log:  []Message{sys("a"), sys("b"), user("1")},
			opts: WindowOptions{MaxMessages: 1},
			err:  ErrBudgetTooSmall,
		},
		{
			name: "system tokens alone over budget",
			log:  []Message{sys("a long system prompt that takes more than a few tokens")},
			opts: WindowOptions{MaxTokens: 5},
			err:  ErrBudgetTooSmall,
		},
		{
			name: "negative budget",
			log:  []Message{user("1")},
			opts: WindowOptions{MaxMessages: -1},
			err:  ErrInvalidOptions,
		},
		{
			name: "empty session",
			opts: WindowOptions{},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openMem(t, nil)
			sess := st.Session(testScope)
			if len(tc.log) > 0 {
				mustAppend(t, sess, tc.log...)
			}
			got, err := sess.Window(bg, tc.opts)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Window error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if label(got) != tc.want {
				t.Fatalf("Window = %q, want %q", label(got), tc.want)
			}
			checkWindowInvariants(t, got, tc.opts)
		})
	}
}

func checkWindowInvariants(t *testing.T, w []Message, opts WindowOptions) {
	t.Helper()
	max := opts.MaxMessages
	if max == 0 {
		max = DefaultWindowMessages
	}
	if len(w) > max {
		t.Fatalf("%d messages over budget %d", len(w), max)
	}
	tokens := 0
	calls := map[string]bool{}
	for i, m := range w {
		tokens += m.Tokens
		if i > 0 && w[i-1].ID >= m.ID {
			t.Fatalf("window out of order at %d", i)
		}
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == RoleTool && !calls[m.ToolCallID] {
			t.Fatalf("tool result %q at %d without its call", m.ToolCallID, i)
		}
	}
	if opts.MaxTokens > 0 && tokens > opts.MaxTokens {
		t.Fatalf("%d tokens over budget %d", tokens, opts.MaxTokens)
	}
}

// referenceWindow is the window rules written as plainly as possible: try
// every cut point of the conversation from the oldest and keep the first
// (longest) suffix that is valid and fits.
func referenceWindow(log []Message, opts WindowOptions) ([]Message, error) {
	if opts.MaxMessages == 0 {
		opts.MaxMessages = DefaultWindowMessages
	}
	var system, rest []Message
	sysTokens := 0
	for _, m := range log {
		if m.Role == RoleSystem {
			system = append(system, m)
			sysTokens += m.Tokens
		} else {
			rest = append(rest, m)
		}
	}
	if len(system) > opts.MaxMessages || (opts.MaxTokens > 0 && sysTokens > opts.MaxTokens) {
		return nil, ErrBudgetTooSmall
	}
	for cut := 0; cut <= len(rest); cut++ {
		suffix := rest[cut:]
		n, tokens := len(system)+len(suffix), sysTokens
		for _, m := range suffix {
			tokens += m.Tokens
		}
		if n > opts.MaxMessages || (opts.MaxTokens > 0 && tokens > opts.MaxTokens) {
			continue
		}
		// Valid: no result in the suffix answers a call before the cut.
		before := map[string]bool{}
		for _, m := range rest[:cut] {
			for _, c := range m.ToolCalls {
				before[c.ID] = true
			}
		}
		valid := true
		for _, m := range suffix {
			if m.Role == RoleTool && before[m.ToolCallID] {
				valid = false
			}
		}
		if valid {
			return merge(system, suffix), nil
		}
	}
	return system, nil
}

// TestWindowModel compares Window with referenceWindow on random
// conversations and budgets.
func TestWindowModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	runs := 150
	if testing.Short() || raceEnabled {
		runs = 30
	}
	st := openMem(t, &Options{Durability: Async})
	for run := range runs {
		sess := st.Session(Scope{Tenant: "t", User: "u", Session: fmt.Sprint("model-", run)})
		var open []string // calls without results yet
		nextCall := 0
		for i := range 5 + rng.IntN(40) {
			var m Message
			switch r := rng.IntN(10); {
			case r == 0:
				m = sys(fmt.Sprint("sys", i))
			case r < 3 && len(open) > 0:
				j := rng.IntN(len(open))
				m = result(open[j])
				open = append(open[:j], open[j+1:]...)
			case r < 5:
				var ids []string
				for range 1 + rng.IntN(3) {
					ids = append(ids, fmt.Sprint("c", nextCall))
					nextCall++
				}
				open = append(open, ids...)
				m = call(ids...)
			case r < 7:
				m = user(fmt.Sprint("u", i, " ", make([]byte, 0)))
			default:
				m = asst(fmt.Sprintf("a%d with some words %d", i, rng.IntN(1000)))
			}
			mustAppend(t, sess, m)
		}
		log, err := sess.Messages(bg, MessagesOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		opts := WindowOptions{MaxMessages: rng.IntN(30)}
		if rng.IntN(2) == 0 {
			opts.MaxTokens = 20 + rng.IntN(300)
		}
		want, wantErr := referenceWindow(log, opts)
		got, err := sess.Window(bg, opts)
		if !errors.Is(err, wantErr) {
			t.Fatalf("run %d: Window error = %v, want %v", run, err, wantErr)
		}
		if label(got) != label(want) {
			t.Fatalf("run %d, opts %+v\nlog:  %s\ngot:  %s\nwant: %s", run, opts, label(log), label(got), label(want))
		}
		if err == nil {
			checkWindowInvariants(t, got, opts)
		}
	}
}
