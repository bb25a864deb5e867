package memory

import "testing"

// TestRuleFindWhen pins a row of each kind of the date tables
// (ruleDatePhrases, ruleDateReaders, ruleAgoUnits) against the Monday 8
// May 2023 of ruleTestTime: the phrase found and what it resolves to.
func TestRuleFindWhen(t *testing.T) {
	for _, c := range []struct {
		text, phrase, resolved string
		future                 bool
	}{
		{"I went yesterday", "yesterday", "on Sunday 7 May 2023", false},
		{"I went today", "today", "on Monday 8 May 2023", false},
		{"I went earlier today", "earlier today", "on Monday 8 May 2023", false},
		{"I ran this morning", "this morning", "on Monday 8 May 2023", false},
		{"I ran this week", "this week", "the week of 8 May 2023", false},
		{"I ran this weekend", "this weekend", "the weekend of 8 May 2023", false},
		{"I ran this month", "this month", "in May 2023", false},
		{"I ran this year", "this year", "in 2023", false},
		{"I ran last night", "last night", "on Sunday 7 May 2023", false},
		{"I ran last evening", "last evening", "on Sunday 7 May 2023", false},
		{"I ran last week", "last week", "the week before 8 May 2023", false},
		{"I ran last weekend", "last weekend", "the weekend before 8 May 2023", false},
		{"I ran last month", "last month", "in April 2023", false},
		{"I ran last year", "last year", "in 2022", false},
		{"I ran last summer", "last summer", "last summer (before 8 May 2023)", false},
		{"I ran the other day", "the other day", "a few days before 8 May 2023", false},
		{"I ran last Saturday", "last saturday", "on Saturday 6 May 2023", false},
		{"I ran past Friday night", "past friday night", "on Friday 5 May 2023", false},
		{"I ran this past Monday", "this past monday", "on Monday 1 May 2023", false},
		{"I ran last March", "last march", "in March 2023", false},
		{"I ran last June", "last june", "in June 2022", false},
		{"I ran on Friday", "on friday", "on Friday 5 May 2023", false},
		{"I ran on May 3", "on may 3", "on 3 May 2023", false},
		{"I ran on the 3rd of May, 2021", "on the 3rd of may , 2021", "on 3 May 2021", false},
		{"I ran in June", "in june", "in June 2022", false},
		{"I ran in June 2021", "in june 2021", "in June 2021", false},
		{"I ran in 2019", "in 2019", "in 2019", false},
		{"I ran two weeks ago", "two weeks ago", "2 weeks before 8 May 2023", false},
		{"I ran a week ago", "a week ago", "the week before 8 May 2023", false},
		{"I ran 3 days ago", "3 days ago", "on Friday 5 May 2023", false},
		{"I ran a few days ago", "a few days ago", "a few days before 8 May 2023", false},
		{"I ran a couple of months ago", "a couple of months ago", "in March 2023", false},
		{"I ran five years ago", "five years ago", "in 2018", false},
		{"I ran a few years ago", "a few years ago", "a few years before 8 May 2023", false},
		{"I run tomorrow", "", "", true},
		{"I run tonight", "", "", true},
		{"I run next week", "", "", true},
		{"I ran in the park", "", "", false},
		{"I sat down", "", "", false}, // "sat" is not "Sat"
	} {
		sents := ruleTokenize(c.text)
		w, future, ok := ruleFindWhen(&sents[0], ruleTestTime)
		if future != c.future || ok != (c.phrase != "") || w.phrase != c.phrase || w.resolved != c.resolved {
			t.Errorf("%q: got %q %q future=%v ok=%v, want %q %q future=%v", c.text, w.phrase, w.resolved, future, ok, c.phrase, c.resolved, c.future)
		}
	}
}
