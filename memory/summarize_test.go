package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/engramdb/engram/memory"
)

func ExampleExtractive() {
	msgs := []memory.Message{
		{Role: memory.RoleSystem, Content: "You are a helpful assistant."},
		{Role: memory.RoleUser, Name: "alice", Content: "Our Acme contract renewal is due on March 3. Can Dana own the renewal?"},
		{Role: memory.RoleAssistant, Content: "Sure. Dana now owns the Acme renewal, and the contract goes to legal on February 20."},
		{Role: memory.RoleUser, Name: "alice", Content: "By the way, the weather in Lisbon was lovely."},
		{Role: memory.RoleUser, Name: "alice", Content: "Remind Dana that the renewal needs the signed Acme contract."},
	}
	summary, err := memory.Extractive{}.Summarize(context.Background(), "", msgs, 50)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(summary)
	// Output:
	// alice: Can Dana own the renewal?
	// assistant: Dana now owns the Acme renewal, and the contract goes to legal on February 20.
	// alice: Remind Dana that the renewal needs the signed Acme contract.
}

// refTokens counts the tokens of plain text in o200k_base with tiktoken
// directly: a reference that does not go through the code under test.
var refTokens = sync.OnceValue(func() func(string) int {
	// tiktoken-go's default loader downloads; the offline one serves the
	// same rank files from the binary.
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(memory.DefaultEncoding)
	if err != nil {
		panic(err)
	}
	return func(s string) int { return len(enc.EncodeOrdinary(s)) }
})

func summarize(t testing.TB, prev string, msgs []memory.Message, maxTokens int) string {
	t.Helper()
	out, err := memory.Extractive{}.Summarize(context.Background(), prev, msgs, maxTokens)
	if err != nil {
		t.Fatalf("Summarize(%d tokens): %v", maxTokens, err)
	}
	if n := refTokens()(out); n > maxTokens {
		t.Fatalf("summary is %d tokens, budget %d:\n%s", n, maxTokens, out)
	}
	if !utf8.ValidString(out) {
		t.Fatalf("summary is not valid UTF-8: %q", out)
	}
	return out
}

func sumUser(content string) memory.Message {
	return memory.Message{Role: memory.RoleUser, Content: content}
}

func sumAsst(content string) memory.Message {
	return memory.Message{Role: memory.RoleAssistant, Content: content}
}

// renewal is a conversation about one topic with one aside (the weather).
var renewal = []memory.Message{
	sumUser("Alice wants to renew the Acme contract before March 3."),
	sumAsst("The Acme contract renewal needs approval from Dana."),
	sumUser("Dana approved the Acme renewal terms yesterday."),
	sumAsst("The weather in Lisbon is sunny today."),
	sumUser("Send the Acme contract renewal to Dana for signature."),
}

func TestExtractiveKeepsCentralSentence(t *testing.T) {
	all := summarize(t, "", renewal, 1000)
	if got := strings.Count(all, "\n") + 1; got != len(renewal) {
		t.Fatalf("with room for everything, kept %d of %d sentences:\n%s", got, len(renewal), all)
	}
	// One token short of everything: one sentence must go, and it is the
	// aside, the sentence that shares no term with the rest.
	out := summarize(t, "", renewal, refTokens()(all)-1)
	want := "user: Alice wants to renew the Acme contract before March 3.\n" +
		"assistant: The Acme contract renewal needs approval from Dana.\n" +
		"user: Dana approved the Acme renewal terms yesterday.\n" +
		"user: Send the Acme contract renewal to Dana for signature."
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestExtractiveChronologicalOrder(t *testing.T) {
	// The most central sentence comes last; the summary still reads in
	// the order things were said.
	msgs := []memory.Message{
		sumUser("The offsite is in Porto."),
		sumAsst("Porto has a venue for forty people."),
		sumUser("Book the Porto venue for the offsite with forty people in May."),
	}
	out := summarize(t, "", msgs, 1000)
	want := "user: The offsite is in Porto.\nassistant: Porto has a venue for forty people.\nuser: Book the Porto venue for the offsite with forty people in May."
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	// Whatever a smaller budget keeps, it keeps in the order it was said.
	full := strings.Split(want, "\n")
	for budget := 1; budget < refTokens()(want); budget++ {
		out := summarize(t, "", msgs, budget)
		last := -1
		for _, line := range strings.Split(out, "\n") {
			i := slices.Index(full, line)
			if i < 0 && !strings.Contains(out, "\n") {
				continue // one sentence cut to fit
			}
			if i <= last {
				t.Fatalf("budget %d: line %q is out of order or not an input sentence:\n%s", budget, line, out)
			}
			last = i
		}
	}
}

func TestExtractiveDeterministic(t *testing.T) {
	want := summarize(t, "", renewal, 30)
	var wg sync.WaitGroup
	outs := make([]string, 16)
	for i := range outs {
		wg.Go(func() { outs[i] = summarize(t, "", renewal, 30) })
	}
	wg.Wait()
	for i, got := range outs {
		if got != want {
			t.Fatalf("call %d: got\n%s\nwant\n%s", i, got, want)
		}
	}
}

func TestExtractiveEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		prev string
		msgs []memory.Message
	}{
		{"nothing", "", nil},
		{"blank prev", " \n\t\n", nil},
		{"system only", "", []memory.Message{{Role: memory.RoleSystem, Content: "Be brief."}}},
		{"tool call and JSON result", "", []memory.Message{
			{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "c1", Name: "lookup", Arguments: []byte(`{"q":"acme"}`)}}},
			{Role: memory.RoleTool, ToolCallID: "c1", Content: `{"owner": "Dana", "due": "2025-03-03"}`},
		}},
		{"stop words and emoji", "", []memory.Message{sumUser("So it is!"), sumAsst("It is what it is. 👍"), sumUser("...")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out := summarize(t, tc.prev, tc.msgs, 50); out != "" {
				t.Fatalf("got %q, want an empty summary", out)
			}
		})
	}
}

func TestExtractiveSpeakers(t *testing.T) {
	msgs := []memory.Message{
		{Role: memory.RoleSystem, Content: "Always answer about contracts."},
		{Role: memory.RoleUser, Name: "alice", Content: "Which contract renews first?"},
		{Role: memory.RoleAssistant, Content: "Let me check the contracts.", ToolCalls: []memory.ToolCall{{ID: "c1", Name: "contracts"}}},
		{Role: memory.RoleTool, ToolCallID: "c1", Content: `[{"contract": "acme", "renews": "March"}]`},
		{Role: memory.RoleTool, ToolCallID: "c1", Name: "contracts", Content: "The Acme contract renews in March."},
		{Role: memory.RoleAssistant, Content: "The Acme contract renews first, in March."},
	}
	out := summarize(t, "", msgs, 1000)
	want := "alice: Which contract renews first?\n" +
		"assistant: Let me check the contracts.\n" +
		"contracts: The Acme contract renews in March.\n" +
		"assistant: The Acme contract renews first, in March."
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestExtractiveSentences(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Dana owns it. Eve helps!", "user: Dana owns it.\nuser: Eve helps!"},
		{"Costs rose 3.5 percent at engram.dev today.", "user: Costs rose 3.5 percent at engram.dev today."},
		{"Bring snacks, e.g. apples and pears. Then leave.", "user: Bring snacks, e.g. apples and pears.\nuser: Then leave."},
		{`She said "stop." Then she left.`, "user: She said \"stop.\"\nuser: Then she left."},
		{"Wait... Really?! Yes.", "user: Wait...\nuser: Really?!\nuser: Yes."},
		{"first line\nsecond line\r\nthird line", "user: first line\nuser: second line\nuser: third line"},
		{"会議は三月です。担当はダナです。", "user: 会議は三月です。\nuser: 担当はダナです。"},
		{"  padded sentence  ", "user: padded sentence"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if out := summarize(t, "", []memory.Message{sumUser(tc.in)}, 1000); out != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

func TestExtractiveRollsPrev(t *testing.T) {
	prev := summarize(t, "", []memory.Message{
		sumUser("We booked the Porto venue for the offsite."),
		sumAsst("The Porto venue holds forty people."),
	}, 1000)

	// A summary that fits is its own summary: rolling it with nothing new
	// changes nothing.
	if again := summarize(t, prev, nil, 1000); again != prev {
		t.Fatalf("rolling with no messages changed the summary:\n%s\nwant\n%s", again, prev)
	}

	// With room, the old summary stays and comes first.
	out := summarize(t, prev, renewal, 1000)
	if !strings.HasPrefix(out, prev+"\n") {
		t.Fatalf("with room for everything, the summary lost or moved prev:\n%s", out)
	}

	// A tiny budget keeps only what the conversation is mostly about: the
	// older, off-topic summary is dropped.
	out = summarize(t, prev, renewal, 30)
	if out == "" || strings.Contains(out, "Porto") {
		t.Fatalf("a 30-token roll kept the old topic or nothing:\n%s", out)
	}

	// Rolling again and again stays within the budget.
	for i := range 20 {
		out = summarize(t, out, []memory.Message{sumUser(fmt.Sprintf("Step %d of the Acme renewal is done by Dana.", i))}, 30)
	}
	if !strings.Contains(out, "Acme") {
		t.Fatalf("after 20 rolls the summary lost the topic:\n%s", out)
	}
}

func TestExtractiveLongSentence(t *testing.T) {
	// No whole sentence fits: the best one is cut, never an empty summary.
	long := strings.Repeat("The Acme renewal needs signatures from legal and finance ", 20) + "today."
	out := summarize(t, "", []memory.Message{sumUser(long)}, 12)
	if out == "" || !strings.HasPrefix("user: "+long, out) {
		t.Fatalf("got %q, want a prefix of the sentence", out)
	}
	for _, budget := range []int{1, 2, 3} {
		summarize(t, "", []memory.Message{sumUser("会議は三月三日です。担当はダナです。")}, budget)
	}
}

func TestExtractiveErrors(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, -1} {
		if _, err := (memory.Extractive{}).Summarize(ctx, "x", renewal, n); !errors.Is(err, memory.ErrInvalidOptions) {
			t.Errorf("maxTokens %d: got %v, want ErrInvalidOptions", n, err)
		}
	}
	if _, err := (memory.Extractive{Encoding: "gpt2-nope"}).Summarize(ctx, "", renewal, 10); !errors.Is(err, memory.ErrInvalidOptions) {
		t.Errorf("unknown encoding: got %v, want ErrInvalidOptions", err)
	}
	out, err := memory.Extractive{Encoding: "cl100k_base"}.Summarize(ctx, "", renewal, 30)
	if err != nil || out == "" {
		t.Errorf("cl100k_base: got %q, %v", out, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (memory.Extractive{}).Summarize(cctx, "", renewal, 30); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}

func TestExtractiveOddUnicode(t *testing.T) {
	odd := []string{
		"\xff\xfe invalid \xc3 bytes. More \xed\xa0\x80 text.",
		"e\u0301\u0301\u0301 combining marks. Zalgo t\u0336\u0337e\u0338x\u0334t.",
		"שלום עולם. مرحبا بالعالم! \u202eevil\u202c override.",
		"👩‍👩‍👧‍👦 family 🇵🇹 flag. 🏳️‍🌈 and \u200b\u200d zero width.",
		"NUL \x00 byte. Tab\tand\vvertical. \u2028line\u2029para.",
		strings.Repeat("超長い日本語の文", 200),
		strings.Repeat("a", 2000) + ". " + strings.Repeat("ß", 1000),
		"。。。！？…", ": : :", "user: ", "\u00a0\u3000",
	}
	budgets := []int{1, 2, 40, 1000}
	if testing.Short() || memory.RaceEnabled {
		budgets = []int{2, 1000} // the tokenizer is slow under -race
	}
	for _, s := range odd {
		for _, budget := range budgets {
			summarize(t, s, []memory.Message{sumUser(s), {Role: memory.RoleAssistant, Name: s, Content: s}}, budget)
			summarize(t, "", []memory.Message{sumUser(s)}, budget)
		}
	}
}

// TestExtractiveRandom is a property test over random conversations, rolled
// one into the next: every summary fits its budget, is deterministic, and
// keeps its sentences in the order they were said.
func TestExtractiveRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("acme contract renewal dana alice legal budget march invoice 3942 meeting porto venue " +
		"the a of and is to in signed approved sends owner price 12.5 2025-03-03 q3 café ünïcödé 会議 🙂 — ’s")
	names := []string{"", "", "alice", "bob", "tool-7"}
	roles := []memory.Role{memory.RoleUser, memory.RoleAssistant, memory.RoleUser, memory.RoleAssistant, memory.RoleSystem, memory.RoleTool}
	ends := []string{". ", "! ", "? ", "\n", "… ", "。"}
	marker := 0
	sentence := func() string {
		marker++
		n := 1 + rng.IntN(12)
		parts := []string{"M" + strconv.Itoa(marker)}
		for range n {
			parts = append(parts, words[rng.IntN(len(words))])
		}
		return strings.Join(parts, " ") + ends[rng.IntN(len(ends))]
	}
	markerRE := regexp.MustCompile(`^(?:[^ :]+: )?M([0-9]+)\b`)

	prev := ""
	iters := 300
	if testing.Short() || memory.RaceEnabled {
		iters = 80
	}
	for iter := range iters {
		var msgs []memory.Message
		for range rng.IntN(8) {
			m := memory.Message{Role: roles[rng.IntN(len(roles))], Name: names[rng.IntN(len(names))]}
			var b strings.Builder
			for range 1 + rng.IntN(4) {
				b.WriteString(sentence())
			}
			m.Content = b.String()
			if m.Role == memory.RoleTool && rng.IntN(2) == 0 {
				m.Content = `{"result": "` + strconv.Itoa(iter) + `"}`
			}
			msgs = append(msgs, m)
		}
		budget := 1 + rng.IntN(120)
		out := summarize(t, prev, msgs, budget)
		if again := summarize(t, prev, msgs, budget); again != out {
			t.Fatalf("iteration %d: not deterministic:\n%s\nthen\n%s", iter, out, again)
		}
		lines := strings.Split(out, "\n")
		prevLines := strings.Split(prev, "\n")
		last := -1
		for _, l := range lines {
			m := markerRE.FindStringSubmatch(l)
			if m == nil {
				// A sentence cut to fit, now or in an earlier roll.
				if len(lines) > 1 && !slices.Contains(prevLines, l) {
					t.Fatalf("iteration %d: line %q is no sentence of the input:\n%s", iter, l, out)
				}
				continue
			}
			k, _ := strconv.Atoi(m[1])
			if k <= last {
				t.Fatalf("iteration %d: out of order (M%d after M%d):\n%s", iter, k, last, out)
			}
			last = k
		}
		if strings.Contains(out, `"result"`) {
			t.Fatalf("iteration %d: kept a tool's JSON:\n%s", iter, out)
		}
		prev = out
	}
}

func FuzzExtractive(f *testing.F) {
	f.Add("user: Dana owns the renewal.", "Alice: Send it. Now!", "bob", 20)
	f.Add("", "会議は三月です。", "", 1)
	f.Add("\xff", "e.g. x", ": ", 3)
	f.Add("", "000", "\xd3", 50)
	f.Fuzz(func(t *testing.T, prev, content, name string, budget int) {
		if budget <= 0 || budget > 500 {
			return
		}
		summarize(t, prev, []memory.Message{
			{Role: memory.RoleUser, Name: name, Content: content},
			{Role: memory.RoleAssistant, Content: prev},
		}, budget)
	})
}
