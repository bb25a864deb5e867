package memory

import (
	"context"
	"math/rand/v2"
	"testing"
)

// ruleBenchMessages are realistic chat messages, most with nothing to
// extract, as in a real conversation.
var ruleBenchMessages = []string{
	"Hey! How are you doing today?",
	"My renewal owner is Dana.",
	"Can you remind me what we discussed about the contract?",
	"I went to a support group yesterday and it was so powerful.",
	"Thanks, that's really helpful!",
	"I prefer email over phone calls, please.",
	"Last Saturday I went to the beach with my kids and we built a huge sandcastle.",
	"What's the status of order #A-77? It was supposed to arrive on Friday.",
	"I work at Initech as a product manager, mostly on the billing side.",
	"Honestly I'm not sure, let me think about it and get back to you.",
	"Dana no longer owns the renewal; Carol does now.",
	"My sister, Jane, is visiting next week so I'll be offline.",
	"I live in New York but I'm moving to Boston in the spring.",
	"Please don't call me before 9am, I work late.",
	"Could you summarise the last three messages?",
	"I have a dog named Max and a cat called Luna.",
	"Two weeks ago we went camping in the mountains.",
	"The invoice for account 3942 is overdue, can you check?",
	"I love hiking and painting landscapes on weekends.",
	"That sounds great, let's do it!",
	"Eve is my manager and she approved the budget.",
	"Send the report to alice@example.com when it's ready.",
	"I never drink coffee after 6pm.",
	"Here is the link: https://example.com/docs/setup?x=1",
	"On May 3 I signed the lease for the new office.",
	"Is my manager still Dana or did that change?",
	"If my manager were Dana, I would have asked her already.",
	"She said her manager is Eve.",
	"I don't live in Paris anymore.",
	"We celebrated my daughter's birthday with a concert last night.",
	"lol ok",
	"I'm swamped with the kids and work this week.",
	"Dana's manager is Eve Polastri.",
	"My favorite color is blue, but I also like green.",
	"I joined a mentorship program for new engineers.",
	"What time is the meeting tomorrow?",
	"I started playing acoustic guitar about five years ago.",
	"My name is Alice, by the way.",
	"Mi jefe es Dana y vivo en Madrid.",
	"Carol manages Globex and leads the Apollo team.",
	"I think the deploy failed because of the migration.",
	"Yeah, I painted that lake sunrise last year! It's special to me.",
	"Could you book a table for four at 7pm?",
	"My phone number is 555-1234, call anytime after noon.",
	"I always take the stairs at work.",
	"Wow, that's amazing! Congrats on the new job!",
	"Ticket no. 12 is still open, any update?",
	"I moved to San Francisco last year for work.",
	"My kids are Tom and Jerry, they're 5 and 7.",
	"Please always reply in English.",
}

// BenchmarkRuleExtractor measures extraction throughput on one core:
// "known" with a small fake graph to link names against, "nil-known"
// without one.
func BenchmarkRuleExtractor(b *testing.B) {
	for _, c := range []struct {
		name  string
		known Known
	}{{"known", ruleFakeKnown{}}, {"nil-known", nil}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			inputs := make([]*ExtractInput, 1024)
			for i := range inputs {
				inputs[i] = ruleInput(ruleBenchMessages[rng.IntN(len(ruleBenchMessages))])
				inputs[i].Known = c.known
			}
			var x RuleExtractor
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := x.Extract(ctx, inputs[i%len(inputs)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
