package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// ruleFakeKnown is a tiny graph: Dana Scully (alias Dana), Acme, and the
// facts (alice, renewal_owner, Dana Scully) and (Dana Scully, owns, Acme).
type ruleFakeKnown struct{ err error }

var ruleFakeEntities = map[string]string{"dana scully": "Dana Scully", "dana": "Dana Scully", "acme": "Acme", "alice": "alice"}

func (ruleFakeKnown) Entities(text string) []string {
	var out []string
	words := strings.Fields(strings.ToLower(text))
	for n := 2; n >= 1; n-- {
		for i := 0; i+n <= len(words); i++ {
			if name, ok := ruleFakeEntities[strings.Join(words[i:i+n], " ")]; ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func (k ruleFakeKnown) Facts(_ context.Context, entities []string, limit int) ([]Fact, error) {
	if k.err != nil {
		return nil, k.err
	}
	all := []Fact{
		{ID: "f1", Subject: "alice", Predicate: "renewal_owner", Object: "Dana Scully"},
		{ID: "f2", Subject: "Dana Scully", Predicate: "owns", Object: "Acme"},
	}
	var out []Fact
	for _, f := range all {
		for _, e := range entities {
			if strings.EqualFold(f.Subject, e) || strings.EqualFold(f.Object, e) {
				out = append(out, f)
				break
			}
		}
	}
	return out, nil
}

func (ruleFakeKnown) Memories(context.Context, string, int) ([]Memory, error) { return nil, nil }

// ruleTestTime is a Monday.
var ruleTestTime = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

func ruleInput(text string) *ExtractInput {
	return &ExtractInput{
		Scope:   Scope{Tenant: "t", User: "alice", Session: "s"},
		Message: Message{ID: "m1", Role: RoleUser, Content: text, Time: ruleTestTime},
		Speaker: "alice",
		User:    "alice",
		Known:   ruleFakeKnown{},
	}
}

// ruleLines renders an extraction as sorted lines: F facts, S
// single-valued predicates, X invalidations, M memories, A aliases and
// E entities of the mention types (email, url, identifier).
func ruleLines(x *Extraction) []string {
	var out []string
	for _, f := range x.Facts {
		out = append(out, fmt.Sprintf("F %s|%s|%s", f.Subject, f.Predicate, f.Object))
	}
	for _, p := range x.SingleValued {
		out = append(out, "S "+p)
	}
	for _, f := range x.Invalidate {
		out = append(out, fmt.Sprintf("X %s|%s|%s", f.Subject, f.Predicate, f.Object))
	}
	for _, m := range x.Memories {
		out = append(out, fmt.Sprintf("M %s|%s", m.Kind, m.Text))
	}
	for _, e := range x.Entities {
		for _, a := range e.Aliases {
			out = append(out, fmt.Sprintf("A %s|%s", e.Name, a))
		}
		switch e.Type {
		case "email", "url", "identifier":
			out = append(out, fmt.Sprintf("E %s|%s", e.Name, e.Type))
		}
	}
	slices.Sort(out)
	return out
}

type ruleCase struct {
	text string
	want []string // every line of ruleLines, in any order
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			x, err := RuleExtractor{}.Extract(context.Background(), ruleInput(c.text))
			if err != nil {
				t.Fatal(err)
			}
			checkRuleInvariants(t, x)
			got := ruleLines(x)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%q\n got %q\nwant %q", c.text, got, want)
			}
		})
	}
}

// checkRuleInvariants checks what every extraction must satisfy.
func checkRuleInvariants(t *testing.T, x *Extraction) {
	t.Helper()
	ok := func(what, s string) {
		if strings.TrimSpace(s) == "" || !utf8.ValidString(s) || len(s) > 512 {
			t.Errorf("bad %s %q", what, s)
		}
	}
	for _, f := range x.Facts {
		ok("subject", f.Subject)
		ok("predicate", f.Predicate)
		ok("object", f.Object)
		if f.Predicate != strings.ToLower(f.Predicate) || strings.ContainsAny(f.Predicate, " -") {
			t.Errorf("predicate %q is not lower snake case", f.Predicate)
		}
		if f.Confidence < 0 || f.Confidence > 1 {
			t.Errorf("confidence %v", f.Confidence)
		}
	}
	for _, f := range x.Invalidate {
		ok("subject", f.Subject)
		ok("predicate", f.Predicate)
	}
	for _, e := range x.Entities {
		ok("entity", e.Name)
		for _, a := range e.Aliases {
			ok("alias", a)
		}
	}
	for _, m := range x.Memories {
		ok("memory", m.Text)
		if m.Kind != KindPreference && m.Kind != KindEpisode {
			t.Errorf("kind %q", m.Kind)
		}
		if m.Importance <= 0 || m.Importance > 1 {
			t.Errorf("importance %v", m.Importance)
		}
	}
	for _, p := range x.SingleValued {
		ok("single-valued predicate", p)
	}
}

func TestRuleExtractorRelations(t *testing.T) {
	runRuleCases(t, []ruleCase{
		// my X is Y
		{"My renewal owner is Dana.", []string{"F alice|renewal_owner|Dana Scully", "S renewal_owner"}},
		{"my manager is Carol Danvers", []string{"F alice|manager|Carol Danvers", "S manager"}},
		{"My new manager is Carol.", []string{"F alice|manager|Carol", "S manager"}},
		{"My best friend is Eve.", []string{"F alice|best_friend|Eve"}},
		{"My email is alice@example.com.", []string{"F alice|email|alice@example.com", "S email", "E alice@example.com|email"}},
		{"My phone number is 555-1234.", []string{"F alice|phone_number|555-1234", "S phone_number", "E 555-1234|identifier"}},
		{"My birthday is May 3.", []string{"F alice|birthday|May 3", "S birthday"}},
		{"My kids are Tom and Jerry.", []string{"F alice|kid|Tom", "F alice|kid|Jerry"}},
		{"My manager is Dana, not Eve.", []string{"F alice|manager|Dana Scully", "S manager"}},
		{"My manager is now Carol.", []string{"F alice|manager|Carol", "S manager"}},
		{"My dog's name is Rex.", []string{"F alice|has_dog|Rex"}},
		{"My daughter is named Emma.", []string{"F alice|daughter|Emma"}},
		// Y is my X
		{"Dana is my manager.", []string{"F alice|manager|Dana Scully", "S manager"}},
		{"Jane is my sister.", []string{"F alice|sister|Jane"}},
		{"My landlord is Mr. Thompson and he never fixes anything.", []string{"F alice|landlord|Mr. Thompson", "S landlord"}},
		{"Sarah is my therapist and she's great.", []string{"F alice|therapist|Sarah", "S therapist"}},
		{"My team lead is Priya Sharma.", []string{"F alice|team_lead|Priya Sharma", "S team_lead"}},
		{"Honestly, Eve is my best friend.", []string{"F alice|best_friend|Eve"}},
		// possessives
		{"Dana's manager is Eve.", []string{"F Dana Scully|manager|Eve", "S manager"}},
		{"Eve is Dana's manager.", []string{"F Dana Scully|manager|Eve", "S manager"}},
		// appositions
		{"My sister, Jane, lives nearby.", []string{"F alice|sister|Jane"}},
		{"I live with my boyfriend, Jake, in Austin.", []string{"F alice|boyfriend|Jake", "S boyfriend"}},
		{"My cat Luna hates the vacuum.", []string{"F alice|has_cat|Luna"}},
		{"Dana, my boss, is great.", []string{"F alice|boss|Dana Scully", "S boss"}},
		{"My friend Dana is coming over.", []string{"F alice|friend|Dana Scully"}},
		// verbs
		{"Dana owns Acme.", []string{"F Dana Scully|owns|Acme"}},
		{"Carol manages Globex.", []string{"F Carol|manages|Globex"}},
		{"I lead the Phoenix project.", nil},
		{"Bob leads Apollo.", []string{"F Bob|leads|Apollo"}},
		{"I work at Google as an engineer.", []string{"F alice|works_at|Google", "S works_at"}},
		{"I work at acme.", []string{"F alice|works_at|Acme", "S works_at"}},
		{"I work for IBM.", []string{"F alice|works_at|IBM", "S works_at"}},
		{"I work for Globex Corp.", []string{"F alice|works_at|Globex Corp", "S works_at"}},
		{"I work for Dana.", nil}, // a boss, not an employer
		{"My hometown is Boston.", []string{"F alice|hometown|Boston", "S hometown"}},
		{"I'm working at Initech now.", []string{"F alice|works_at|Initech", "S works_at"}},
		{"I live in New York.", []string{"F alice|lives_in|New York", "S lives_in"}},
		{"I live in the US.", []string{"F alice|lives_in|US", "S lives_in"}},
		{"I live in Paris, France.", []string{"F alice|lives_in|Paris", "S lives_in"}},
		{"I've moved to Berlin.", []string{"F alice|lives_in|Berlin", "S lives_in"}},
		{"Bob lives in Boston.", []string{"F Bob|lives_in|Boston", "S lives_in"}},
		{"Jane and I live in Boston.", []string{"F alice|lives_in|Boston", "S lives_in"}},
		{"Amazon owns Whole Foods.", []string{"F Amazon|owns|Whole Foods"}},
		// I have a Y named Z
		{"I have a dog named Max.", []string{"F alice|has_dog|Max"}},
		{"I've got a cat called Luna.", []string{"F alice|has_cat|Luna"}},
		{"I have a daughter named Emma.", []string{"F alice|daughter|Emma"}},
	})
}

// TestRuleExtractorClauses pins that every clause of a coordinated
// sentence is read, whatever its order: the sentence is split into clauses
// before the patterns run, so a clause after "and", "but", a comma or a
// semicolon is not taken for the rest of a list or lost to a negation in
// another clause.
func TestRuleExtractorClauses(t *testing.T) {
	runRuleCases(t, []ruleCase{
		// X and Y, both orders
		{"I work at Globex and I live in Berlin.", []string{"F alice|works_at|Globex", "S works_at", "F alice|lives_in|Berlin", "S lives_in"}},
		{"I live in Berlin and I work at Globex.", []string{"F alice|works_at|Globex", "S works_at", "F alice|lives_in|Berlin", "S lives_in"}},
		{"My manager is Dana and I work at Globex.", []string{"F alice|manager|Dana Scully", "S manager", "F alice|works_at|Globex", "S works_at"}},
		{"I work at Globex and my manager is Dana.", []string{"F alice|manager|Dana Scully", "S manager", "F alice|works_at|Globex", "S works_at"}},
		{"Dana owns Acme and Carol manages Globex.", []string{"F Dana Scully|owns|Acme", "F Carol|manages|Globex"}},
		// a left-out subject is the speaker's
		{"I live in Boston and work at Acme.", []string{"F alice|works_at|Acme", "S works_at", "F alice|lives_in|Boston", "S lives_in"}},
		{"I work at Acme and moved to Boston.", []string{"F alice|works_at|Acme", "S works_at", "F alice|lives_in|Boston", "S lives_in"}},
		// X, but Y
		{"I work at Globex, but I live in Berlin.", []string{"F alice|works_at|Globex", "S works_at", "F alice|lives_in|Berlin", "S lives_in"}},
		{"I live in Berlin but I work at Globex.", []string{"F alice|works_at|Globex", "S works_at", "F alice|lives_in|Berlin", "S lives_in"}},
		{"Sure, I work at Globex.", []string{"F alice|works_at|Globex", "S works_at"}},
		{"I don't live in Paris, but I work at Acme.", []string{"X alice|lives_in|Paris", "F alice|works_at|Acme", "S works_at"}},
		{"I don't live in Paris anymore, I live in Berlin.", []string{"X alice|lives_in|Paris", "F alice|lives_in|Berlin", "S lives_in"}},
		// X; Y
		{"I live in Berlin; I work at Globex.", []string{"F alice|works_at|Globex", "S works_at", "F alice|lives_in|Berlin", "S lives_in"}},
		{"Dana is my manager; Jane is my sister.", []string{"F alice|manager|Dana Scully", "S manager", "F alice|sister|Jane"}},
		// a preference after a comma, or beside another clause
		{"Please email me, no phone calls.", []string{"M preference|alice asks to email alice, no phone calls"}},
		{"No phone calls, please email me.", []string{"M preference|alice asks to email alice, no phone calls"}},
		{"No, I prefer tea.", []string{"M preference|alice prefers tea"}},
		{"I work at Globex and I prefer email.", []string{"F alice|works_at|Globex", "S works_at", "M preference|alice prefers email"}},
		{"I live in Berlin and I never drink coffee.", []string{"F alice|lives_in|Berlin", "S lives_in", "M preference|alice never drinks coffee"}},
		// lists and compound subjects stay whole
		{"Jane and I live in Boston.", []string{"F alice|lives_in|Boston", "S lives_in"}},
		{"My kids are Tom and Jerry.", []string{"F alice|kid|Tom", "F alice|kid|Jerry"}},
		{"My boss is Dana and Eve.", nil},
		{"Please send me the report, thanks.", nil},
		{"No worries, please send me the report.", nil},
	})
}

func TestRuleExtractorAliases(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"My name is Alice Smith.", []string{"A alice|Alice Smith"}},
		{"Hi, I'm Bob.", []string{"A alice|Bob"}},
		{"I am Roberta, from Acme.", []string{"A alice|Roberta"}},
		{"Call me Al.", []string{"A alice|Al"}},
		{"I go by Ally.", []string{"A alice|Ally"}},
		{"I'm Dr. Patel, the new resident.", []string{"A alice|Dr. Patel"}},
		{"My name is Alice.", nil}, // the speaker's own name
		{"I'm tired.", nil},
		{"I'm Canadian.", nil},
		{"I'm Sorry.", nil},
		{"call me ASAP", nil},
		{"Don't call me Al.", nil},
		{"Call me Monday.", nil},
		{"I'm Alice's mother.", nil},
	})
}

func TestRuleExtractorPreferences(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"I prefer email over phone.", []string{"M preference|alice prefers email over phone"}},
		{"I always take the stairs.", []string{"M preference|alice always takes the stairs"}},
		{"I never drink coffee after 6pm.", []string{"M preference|alice never drinks coffee after 6pm"}},
		{"I usually go to bed early.", []string{"M preference|alice usually goes to bed early"}},
		{"I love hiking in the mountains.", []string{"M preference|alice loves hiking in the mountains"}},
		{"I really enjoy painting landscapes.", []string{"M preference|alice really enjoys painting landscapes"}},
		{"I hate long meetings.", []string{"M preference|alice hates long meetings"}},
		{"I don't like mushrooms.", []string{"M preference|alice does not like mushrooms"}},
		{"I can't stand loud music.", []string{"M preference|alice cannot stand loud music"}},
		{"Please don't call me before 9am.", []string{"M preference|alice asks not to call alice before 9am"}},
		{"Please never share my address.", []string{"M preference|alice asks never to share alice's address"}},
		{"Always reply in English.", []string{"M preference|alice asks to always reply in English"}},
		{"Never use emojis.", []string{"M preference|alice asks never to use emojis"}},
		{"My favorite color is blue.", []string{"M preference|alice's favorite color is blue"}},
		{"Pizza is my favorite food.", []string{"M preference|alice's favorite food is Pizza"}},
		// not preferences
		{"I like that idea.", nil},
		{"I love you.", nil},
		{"I love the colors!", nil},
		{"I'd love a coffee.", nil},
		{"I hate to say it, but you are right.", nil},
		{"I would like to live in Paris.", nil},
		{"Please send me the report.", nil},
		{"Please don't forget the file.", nil},
		{"What is my favorite color?", nil},
		{"I loved the movie.", nil},
		{"I don't think I prefer tea.", nil},
	})
}

func TestRuleExtractorEpisodes(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"Last Saturday I went to the beach with my kids.", []string{"M episode|alice went to the beach with alice's kids (on Saturday 6 May 2023)"}},
		{"I went to a support group yesterday and it was so powerful.", []string{"M episode|alice went to a support group and it was so powerful (on Sunday 7 May 2023)"}},
		{"Two weeks ago we went camping.", []string{"M episode|alice and others went camping (2 weeks before 8 May 2023)"}},
		{"On May 3 I signed the contract.", []string{"M episode|alice signed the contract (on 3 May 2023)"}},
		{"I signed the lease on June 5th.", []string{"M episode|alice signed the lease (on 5 June 2022)"}},
		{"We visited Rome in June.", []string{"M episode|alice and others visited Rome (in June 2022)"}},
		{"I painted that lake sunrise last year!", []string{"M episode|alice painted that lake sunrise (in 2022)"}},
		{"I started playing guitar about five years ago.", []string{"M episode|alice started playing guitar (in 2018)"}},
		{"Last week I went to a pride parade.", []string{"M episode|alice went to a pride parade (the week before 8 May 2023)"}},
		{"Last month I got hurt.", []string{"M episode|alice got hurt (in April 2023)"}},
		{"Last Fri I finally took my kids to a pottery workshop.", []string{"M episode|alice finally took alice's kids to a pottery workshop (on Friday 5 May 2023)"}},
		{"I was at the concert last night.", []string{"M episode|alice was at the concert (on Sunday 7 May 2023)"}},
		{"I saw Bob on Friday.", []string{"M episode|alice saw Bob (on Friday 5 May 2023)"}},
		{"I saw Dr. Lee on Tuesday about my knee.", []string{"M episode|alice saw Dr. Lee about alice's knee (on Tuesday 2 May 2023)"}},
		{"In 2019 I ran the Boston Marathon.", []string{"M episode|alice ran the Boston Marathon (in 2019)"}},
		{"I joined a gym.", []string{"M episode|alice joined a gym (mentioned on 8 May 2023)"}},
		{"I moved to San Francisco last year.", []string{"F alice|lives_in|San Francisco", "S lives_in", "M episode|alice moved to San Francisco (in 2022)"}},
		// not events
		{"I thought about it.", nil},
		{"I'm so happy, I went to the park yesterday.", []string{"M episode|alice went to the park (on Sunday 7 May 2023)"}},
		{"I was so happy yesterday.", nil},
		{"I'm going to Paris next week.", nil},
		{"Tomorrow I will go hiking.", nil},
		{"Next Saturday I go to the beach.", nil},
		{"I didn't go to the gym yesterday.", nil},
		{"This book I read last year is great.", nil},
		{"That pic was from a show I went to.", nil},
		{"I painted it.", nil},
		{"Did you go to the gym yesterday?", nil},
	})
}

func TestRuleExtractorEpisodeWithoutTime(t *testing.T) {
	in := ruleInput("Last Saturday I went to the beach.")
	in.Message.Time = time.Time{}
	x, err := RuleExtractor{}.Extract(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ruleLines(x), []string{"M episode|alice went to the beach (last saturday)"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRuleExtractorCorrections(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"I don't live in Paris anymore.", []string{"X alice|lives_in|Paris"}},
		{"I no longer work at Acme.", []string{"X alice|works_at|Acme"}},
		{"My manager is no longer Dana.", []string{"X alice|manager|Dana Scully"}},
		{"My manager is not Dana.", []string{"X alice|manager|Dana Scully"}},
		{"Dana is no longer my manager.", []string{"X alice|manager|Dana Scully"}},
		{"Dana no longer owns Acme.", []string{"X Dana Scully|owns|Acme"}},
		// "the renewal" is the renewal_owner fact whose object is Dana.
		{"Dana no longer owns the renewal.", []string{"X alice|renewal_owner|Dana Scully"}},
		// "it" fits both of Dana's facts: ambiguous, so nothing.
		{"Dana no longer owns it.", nil},
		{"Dana doesn't own the account anymore.", nil},
	})
}

func TestRuleExtractorCorrectionFromPrevious(t *testing.T) {
	for _, c := range []struct {
		prev string
		want []string
	}{
		{"Who handles the renewal now?", []string{"X alice|renewal_owner|Dana Scully"}},
		{"What happened to Acme?", []string{"X Dana Scully|owns|Acme"}},
		{"Acme's renewal is due.", nil}, // both named: ambiguous
		{"Hello!", nil},
	} {
		in := ruleInput("Dana no longer owns it.")
		in.Previous = []Message{{Role: RoleUser, Content: "Good morning."}, {Role: RoleAssistant, Content: c.prev}}
		x, err := RuleExtractor{}.Extract(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ruleLines(x); !slices.Equal(got, c.want) {
			t.Errorf("after %q: got %q, want %q", c.prev, got, c.want)
		}
	}
}

func TestRuleExtractorCorrectionKnownError(t *testing.T) {
	in := ruleInput("Dana no longer owns the renewal.")
	boom := errors.New("boom")
	in.Known = ruleFakeKnown{err: boom}
	if _, err := (RuleExtractor{}).Extract(context.Background(), in); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

func TestRuleExtractorMentions(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"Please check account 3942.", []string{"E account 3942|identifier"}},
		{"Where is order #A-77?", []string{"E order #A-77|identifier"}},
		{"See https://example.com/x, or write to bob@example.org.", []string{"E https://example.com/x|url", "E bob@example.org|email"}},
		{"Ticket no. 12 is still open", []string{"E ticket 12|identifier"}},
		{"Invoice number 7 is late", []string{"E invoice 7|identifier"}},
		{"I counted 3942 sheep.", nil},
	})
}

func TestRuleExtractorMustNot(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"My pleasure is yours.", nil},
		{"Is my manager Dana?", nil},
		{"is my manager Dana", nil},
		{"If my manager were Dana, I'd quit.", nil},
		{"She said her manager is Dana.", nil},
		{"He told me my manager is Dana.", nil},
		{"I think my manager is Dana.", nil},
		{"Maybe I live in Paris.", nil},
		{"My manager might be Dana.", nil},
		{`"My manager is Dana," she joked.`, nil},
		{"Her manager is Dana.", nil},
		{"Our manager is Dana.", nil},
		{"My former manager is Bob.", nil},
		{"My boss is Dana and Eve.", nil},
		{"My manager is Dana Scully's friend.", nil},
		{"My dog is cute.", nil},
		{"Family is my priority.", nil},
		{"The meeting is my priority.", nil},
		{"Dana owns the Acme account.", nil},
		{"I moved to a new apartment.", []string{"M episode|alice moved to a new apartment (mentioned on 8 May 2023)"}},
		{"I work for myself.", nil},
		{"I work at home.", nil},
		{"When I went to Paris, I met Bob.", nil},
		{"Mi jefe es Dana y vivo en Madrid.", nil},
		{"Mein Manager ist Dana.", nil},
		{"私の上司はダナです。", nil},
		{"Hey Mel! Good to see you!", nil},
		{"Yesterday is my favorite song.", nil},
		{"My son is 5 years old.", nil},
		{"My son is 5.", nil},
		{"My boss is Canadian.", nil},
		{"My password is hunter2.", nil},
		{"My PIN is 1234.", nil},
		{"My brother is in Boston.", nil},
		{"My meeting is Monday.", nil},
		{"My address is 12 Main St.", nil},
		{"I own Tesla stock.", nil},
		{"The CEO owns Acme.", nil},
		{"Nobody owns Acme.", nil},
		{"Dana owns Acme, right?", nil},
		{"Let me know if Dana owns Acme.", nil},
		{"They live in Boston.", nil},
		{"I work at St. Mary's Hospital.", nil},
		{"The new manager is Tom.", nil},
		{"Our CEO is Linda.", nil},
		{"His name is Bob.", nil},
		{"I had a dog named Buddy.", nil},
		{"I'm allergic to peanuts.", nil},
		{"I used to live in Boston.", nil},
		{"I want to live in Boston.", nil},
		{"I'm Home!", nil},
		{"I'm Dana's sister.", nil},
		{"Please don't be late.", nil},
		{"Never mind.", nil},
		{"I like it here.", nil},
		{"I got you.", nil},
	})
}

func TestRuleExtractorRoles(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		role    Role
		speaker string
		want    []string
	}{
		{"tool", RoleTool, "alice", nil},
		{"system", RoleSystem, "alice", nil},
		{"assistant without a name", RoleAssistant, "", nil},
		{"assistant with a name", RoleAssistant, "helper", []string{"F helper|manager|Dana Scully", "S manager"}},
		{"user without a speaker", RoleUser, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := ruleInput("My manager is Dana. I prefer tea. Carol manages Globex.")
			in.Message.Role, in.Speaker = c.role, c.speaker
			x, err := RuleExtractor{}.Extract(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got := ruleLines(x)
			want := c.want
			if c.name == "assistant with a name" {
				want = append(want, "M preference|helper prefers tea")
			}
			if c.name == "user without a speaker" {
				want = []string{"F Carol|manages|Globex"}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	if x, err := (RuleExtractor{}).Extract(ctx, nil); err != nil || !x.Empty() {
		t.Errorf("nil input: %v, %v", x, err)
	}
	in := ruleInput("My manager is Dana.")
	in.Known = nil
	if x, err := (RuleExtractor{}).Extract(ctx, in); err != nil || len(x.Facts) != 1 || x.Facts[0].Object != "Dana" {
		t.Errorf("nil Known: %+v, %v", x, err)
	}
}

func TestRuleExtractorBadInput(t *testing.T) {
	ctx := context.Background()
	huge := strings.Repeat("a", 200<<10)
	binary := string([]byte{0, 1, 2, 0xff, 0xfe, 'M', 'y', ' ', 0x80})
	for name, text := range map[string]string{
		"empty":      "",
		"spaces":     "   \n\t ",
		"huge":       huge,
		"huge words": strings.Repeat("My manager is Dana. ", 20<<10),
		"binary":     binary,
		"marks":      strings.Repeat("!?.,'#@", 1000),
		"long name":  "My manager is " + strings.Repeat("Xy", 600) + ".",
		"digits":     strings.Repeat("1", 100<<10),
		"at signs":   strings.Repeat("a@b.", 10000),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			x, err := RuleExtractor{}.Extract(ctx, ruleInput(text))
			if err != nil {
				t.Fatal(err)
			}
			checkRuleInvariants(t, x)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestRuleExtractorConcurrent(t *testing.T) {
	var x RuleExtractor
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range ruleBenchMessages {
				if _, err := x.Extract(context.Background(), ruleInput(s)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzRuleExtractor(f *testing.F) {
	for _, s := range ruleBenchMessages {
		f.Add(s)
	}
	f.Add("")
	f.Add("My name is \x00Alice.")
	f.Add("I'm \u00a0Bob. Dana's 's manager is is Eve's.")
	f.Add("last last last Saturday on May 99 in 9999 I went")
	f.Fuzz(func(t *testing.T, text string) {
		in := ruleInput(text)
		x, err := RuleExtractor{}.Extract(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkRuleInvariants(t, x)
		in.Message.Time = time.Time{}
		x, err = RuleExtractor{}.Extract(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkRuleInvariants(t, x)
	})
}

// TestRuleExtractorVerbFrames has a case for each row of ruleVerbRels,
// with "I" and with a name as the subject where the row allows it.
func TestRuleExtractorVerbFrames(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"I own Globex.", []string{"F alice|owns|Globex"}},
		{"Bob owns Globex.", []string{"F Bob|owns|Globex"}},
		{"I manage Apollo.", []string{"F alice|manages|Apollo"}},
		{"Carol manages Apollo.", []string{"F Carol|manages|Apollo"}},
		{"Bob leads Apollo.", []string{"F Bob|leads|Apollo"}},
		{"Bob is leading Apollo.", []string{"F Bob|leads|Apollo"}},
		{"Eve heads Initech.", []string{"F Eve|heads|Initech"}},
		{"I work at Globex.", []string{"F alice|works_at|Globex", "S works_at"}},
		{"Bob works at Globex.", []string{"F Bob|works_at|Globex", "S works_at"}},
		{"I'm working for Globex Corp now.", []string{"F alice|works_at|Globex Corp", "S works_at"}},
		{"I live in Porto.", []string{"F alice|lives_in|Porto", "S lives_in"}},
		{"I'm living in Porto.", []string{"F alice|lives_in|Porto", "S lives_in"}},
		{"I relocated to Lisbon.", []string{"F alice|lives_in|Lisbon", "S lives_in"}},
		{"I'm based in Berlin.", []string{"F alice|lives_in|Berlin", "S lives_in"}},
		{"Bob moved to Berlin.", nil}, // only the speaker's move is a home
		{"I work a lot.", nil},
		{"I'm based on Berlin.", nil},
		{"Bob no longer works at Acme.", []string{"X Bob|works_at|Acme"}},
		{"Bob doesn't live in Boston anymore.", []string{"X Bob|lives_in|Boston"}},
	})
}
