package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// The browser tests' tokens: one per tenant.
const (
	browserTokenAcme   = "acme-inspector-token-0123456789abcdef"
	browserTokenGlobex = "globex-inspector-token-0123456789abcdef"
)

// browserAcmeMarker is in bruno's messages, memories and entities, which a
// globex page must never show (the isolation test looks for it, and for
// words of alice's trip; alice's data is left without it for the
// screenshots).
const browserAcmeMarker = "ACME-CONFIDENTIAL"

// browserSeed is what seedBrowserStore wrote, for the tests to check.
type browserSeed struct {
	// alice's memories by a short name.
	mem map[string]string
	// alice's facts by a short name.
	fact map[string]string
	// bookingMessage is the id of the message mem["hotel"] came from.
	bookingMessage string
	// recallQuery recalls mem["hotel"] (checked by the seeding).
	recallQuery string
}

var (
	acmeAlice   = memory.Scope{Tenant: "acme", User: "alice"}
	acmeBruno   = memory.Scope{Tenant: "acme", User: "bruno"}
	globexAlice = memory.Scope{Tenant: "globex", User: "alice"}
	globexGina  = memory.Scope{Tenant: "globex", User: "gina"}
)

// seedBrowserStore fills the store with small realistic data: acme's alice
// plans a trip to Lisbon (two sessions with a tool call, memories with
// tags, an expiry and a second version, a small graph); acme's bruno has
// enough messages, memories and entities to page; globex has its own alice
// and gina, whose pages must never show acme's data.
func seedBrowserStore(t *testing.T, store *memory.Store) *browserSeed {
	t.Helper()
	ctx := context.Background()
	seed := &browserSeed{mem: map[string]string{}, fact: map[string]string{}}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed %s: %v", what, err)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	// The trip is next May, so its facts are valid or coming, never past.
	day := func(m time.Month, d int) time.Time { return time.Date(now.Year()+1, m, d, 9, 0, 0, 0, time.UTC) }
	at := func(min int) time.Time { return now.Add(time.Duration(min-120) * time.Minute) }

	trip := store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "lisbon-trip"})
	must("lisbon-trip", trip.Append(ctx,
		memory.Message{Role: memory.RoleSystem, Content: "You are Alice's travel assistant.", Time: at(0)},
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: "I want to spend 12 to 16 May in Lisbon. Can you find a morning flight from Berlin?", Time: at(1)},
		memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{
			ID: "call_flights_1", Name: "search_flights",
			Arguments: json.RawMessage(`{"from":"BER","to":"LIS","date":"05-12","time":"morning"}`),
		}}, Time: at(2)},
		memory.Message{Role: memory.RoleTool, Name: "search_flights", ToolCallID: "call_flights_1",
			Content: `[{"flight":"TP 539","departs":"07:05","arrives":"09:40","price_eur":182}]`, Time: at(3)},
		memory.Message{Role: memory.RoleAssistant, Content: "TAP flight TP 539 leaves Berlin at 07:05 and lands in Lisbon at 09:40, for 182 EUR. Shall I hold a window seat?", Time: at(4)},
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: "Yes, a window seat please. And a hotel near Rossio, under 200 EUR a night.", Time: at(5)},
		memory.Message{Role: memory.RoleAssistant, Content: "The Hotel Avenida Palace is two minutes from Rossio, 176 EUR a night. Booked for 12 to 16 May.", Time: at(6)},
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: "Great. I'm vegetarian, keep that in mind for restaurants.", Time: at(7)},
		memory.Message{Role: memory.RoleAssistant, Content: "Noted. Ao 26 Vegan Food Project and Jardim dos Sentidos are both close to the hotel.", Time: at(8)},
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: "Plan a day trip to Sintra on the 14th.", Time: at(9)},
		memory.Message{Role: memory.RoleAssistant, Content: "Trains leave Rossio every 20 minutes; Pena Palace opens at 09:30. Go early to beat the queue.", Time: at(10)},
	))
	packing := store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "packing"})
	must("packing", packing.Append(ctx,
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: "What should I pack for Lisbon in May?", Time: at(20)},
		memory.Message{Role: memory.RoleAssistant, Content: "Light layers, a rain jacket and comfortable shoes: the hills are steep and the cobbles slippery.", Time: at(21)},
		memory.Message{Role: memory.RoleUser, Name: "alice", Content: fmt.Sprintf("Remind me that my passport expires in March %d.", day(3, 31).Year()), Time: at(22)},
		memory.Message{Role: memory.RoleAssistant, Content: "I will remind you before your next trip abroad.", Time: at(23)},
	))

	tripMsgs, err := trip.Messages(ctx, memory.MessagesOptions{})
	must("lisbon-trip messages", err)
	if len(tripMsgs) != 11 {
		t.Fatalf("seed: lisbon-trip has %d messages, want 11", len(tripMsgs))
	}
	seed.bookingMessage = tripMsgs[6].ID // "The Hotel Avenida Palace is two minutes from Rossio ..."

	remember := func(name string, scope memory.Scope, m memory.Memory) string {
		t.Helper()
		id, err := store.Remember(ctx, scope, m)
		must("memory "+name, err)
		return id
	}
	seed.mem["seat"] = remember("seat", acmeAlice, memory.Memory{Kind: "preference", Text: "Prefers a window seat on morning flights", Tags: []string{"travel", "flights"}})
	seed.mem["hotel"] = remember("hotel", acmeAlice, memory.Memory{Kind: "fact", Text: "Booked the Hotel Avenida Palace in Lisbon for 12 to 16 May", Tags: []string{"travel", "lisbon", "hotel"}, Source: []string{seed.bookingMessage}})
	seed.mem["food"] = remember("food", acmeAlice, memory.Memory{Kind: "preference", Text: "Vegetarian; wants restaurants near the hotel", Tags: []string{"food"}})
	seed.mem["sintra"] = remember("sintra", acmeAlice, memory.Memory{Kind: "episode", Text: "Asked for a day trip to Sintra on 14 May", Tags: []string{"lisbon"}})
	seed.mem["passport"] = remember("passport", acmeAlice, memory.Memory{Kind: "fact", Text: fmt.Sprintf("Passport expires in March %d", day(3, 31).Year()), Tags: []string{"documents"}, ExpiresAt: day(3, 31)})
	seed.mem["porto"] = remember("porto", acmeAlice, memory.Memory{Kind: "observation", Text: "Once considered Porto instead of Lisbon", Tags: []string{"travel"}})
	budgetV1 := remember("budget", acmeAlice, memory.Memory{Kind: "fact", Text: "Trip budget is 1500 EUR", Tags: []string{"travel", "budget"}})
	budget, err := store.UpdateMemory(ctx, acmeAlice, budgetV1, memory.Memory{Kind: "fact", Text: "Trip budget is 1800 EUR", Tags: []string{"travel", "budget"}})
	must("budget v2", err)
	seed.mem["budget"] = budget
	seed.mem["budget-v1"] = budgetV1

	relate := func(name string, scope memory.Scope, f memory.Fact) {
		t.Helper()
		got, err := store.Relate(ctx, scope, f)
		must("fact "+name, err)
		if name != "" {
			seed.fact[name] = got.ID
		}
	}
	must("entities", store.UpdateGraph(ctx, acmeAlice, func(g *graph.Tx) error {
		_, err := g.CreateEntities([]graph.Entity{
			{Name: "Alice", Type: "person", Observations: []string{"Lives in Berlin", "Vegetarian"}, Aliases: []string{"alice"}},
			{Name: "Lisbon", Type: "city", Observations: []string{"Capital of Portugal", "Hilly, with trams"}},
			{Name: "Hotel Avenida Palace", Type: "hotel", Observations: []string{"Near Rossio", "176 EUR a night"}},
			{Name: "Sintra", Type: "town", Observations: []string{"Pena Palace opens at 09:30"}},
		})
		return err
	}))
	// Planned ten days ago: valid now, so the graph draws them.
	planned := now.AddDate(0, 0, -10)
	relate("travels_to", acmeAlice, memory.Fact{Subject: "Alice", Predicate: "travels_to", Object: "Lisbon", ValidFrom: planned})
	relate("stays_at", acmeAlice, memory.Fact{Subject: "Alice", Predicate: "stays_at", Object: "Hotel Avenida Palace", ValidFrom: planned, Source: seed.bookingMessage})
	relate("located_in", acmeAlice, memory.Fact{Subject: "Hotel Avenida Palace", Predicate: "located_in", Object: "Lisbon"})
	relate("near", acmeAlice, memory.Fact{Subject: "Sintra", Predicate: "near", Object: "Lisbon"})
	relate("flies_with", acmeAlice, memory.Fact{Subject: "Alice", Predicate: "flies_with", Object: "TAP Air Portugal", ValidFrom: planned})
	relate("lived_in", acmeAlice, memory.Fact{Subject: "Alice", Predicate: "lives_in", Object: "Hamburg", ValidFrom: time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC), ValidTo: time.Date(2020, 6, 1, 0, 0, 0, 0, time.UTC)})
	relate("lives_in", acmeAlice, memory.Fact{Subject: "Alice", Predicate: "lives_in", Object: "Berlin", ValidFrom: time.Date(2020, 6, 1, 0, 0, 0, 0, time.UTC)})

	// bruno: enough to page (messages, memories, entities).
	long := store.Session(memory.Scope{Tenant: "acme", User: "bruno", Session: "standup-notes"})
	var msgs []memory.Message
	for i := range 130 {
		role := memory.RoleUser
		if i%2 == 1 {
			role = memory.RoleAssistant
		}
		msgs = append(msgs, memory.Message{Role: role, Content: fmt.Sprintf("Stand-up note %03d: %s", i, browserAcmeMarker), Time: at(30 + i%60)})
	}
	must("bruno messages", long.Append(ctx, msgs...))
	for i := range 130 {
		remember("bruno", acmeBruno, memory.Memory{Kind: "fact", Text: fmt.Sprintf("Bruno's note %03d about project Kestrel %s", i, browserAcmeMarker), Tags: []string{"kestrel"}})
	}
	var ents []graph.Entity
	for i := range 130 {
		ents = append(ents, graph.Entity{Name: fmt.Sprintf("Component %03d", i), Type: "module", Observations: []string{browserAcmeMarker}})
	}
	must("bruno entities", store.UpdateGraph(ctx, acmeBruno, func(g *graph.Tx) error {
		_, err := g.CreateEntities(ents)
		return err
	}))
	for i := 1; i < 40; i++ {
		relate("", acmeBruno, memory.Fact{Subject: fmt.Sprintf("Component %03d", i), Predicate: "depends_on", Object: fmt.Sprintf("Component %03d", i-1)})
	}

	// globex: its own alice (the same user id as acme's) and gina.
	must("globex alice", store.Session(memory.Scope{Tenant: "globex", User: "alice", Session: "kickoff"}).Append(ctx,
		memory.Message{Role: memory.RoleUser, Content: "Schedule the Globex kickoff for Monday.", Time: at(40)},
		memory.Message{Role: memory.RoleAssistant, Content: "Done: Monday 10:00 in room Tesla.", Time: at(41)},
	))
	remember("globex alice", globexAlice, memory.Memory{Kind: "fact", Text: "Runs the Globex kickoff on Mondays"})
	must("globex gina", store.Session(memory.Scope{Tenant: "globex", User: "gina", Session: "onboarding"}).Append(ctx,
		memory.Message{Role: memory.RoleUser, Content: "Where do I find the Globex handbook?", Time: at(42)},
		memory.Message{Role: memory.RoleAssistant, Content: "On the intranet, under People.", Time: at(43)},
	))
	remember("globex gina", globexGina, memory.Memory{Kind: "preference", Text: "Prefers written onboarding material"})
	relate("", globexGina, memory.Fact{Subject: "Gina", Predicate: "works_at", Object: "Globex"})

	seed.recallQuery = "Which hotel in Lisbon did I book?"
	rec, err := store.Recall(ctx, memory.Query{Scope: acmeAlice, Text: seed.recallQuery, Trace: true})
	must("recall", err)
	if c, ok := recallCandidate(rec, seed.mem["hotel"]); !ok || !c.Kept {
		t.Fatalf("seed: the recall %q does not keep the hotel memory: %+v", seed.recallQuery, rec.Trace.Candidates)
	}
	return seed
}

// recallCandidate finds the candidate with the id in a recall's trace.
func recallCandidate(rec *memory.Recollection, id string) (memory.Candidate, bool) {
	for _, c := range rec.Trace.Candidates {
		if c.ID == id {
			return c, true
		}
	}
	return memory.Candidate{}, false
}
