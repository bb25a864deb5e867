package memory

import (
	"strconv"
	"strings"
	"time"
)

// Time expressions of the rule extractor: "yesterday", "last Saturday",
// "two weeks ago", "on May 3", "in 2022", resolved against the message's
// time into the words a reader (or a question) uses: "on Sunday 7 May
// 2023", "the week before 8 May 2023", "in April 2023".

// ruleWhen is a time expression found in a sentence: tokens [start, end).
type ruleWhen struct {
	start, end int
	phrase     string // the expression as said, lower case: "last saturday"
	resolved   string // "on Saturday 6 May 2023"; "" when the message has no time
}

var ruleWeekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"mon": time.Monday, "tue": time.Tuesday, "tues": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday,
	"thur": time.Thursday, "thurs": time.Thursday, "fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday,
}

// ruleWeekday reads a weekday at toks[i]; an abbreviation must be
// capitalised ("last Fri", not "I sat").
func ruleWeekday(toks []ruleTok, i int) (time.Weekday, bool) {
	if i < 0 || i >= len(toks) || toks[i].k != rtWord {
		return 0, false
	}
	wd, ok := ruleWeekdays[toks[i].l]
	if ok && len(toks[i].l) < 6 && !toks[i].cap {
		return 0, false
	}
	return wd, ok
}

var ruleMonths = map[string]time.Month{
	"january": time.January, "february": time.February, "march": time.March, "april": time.April,
	"may": time.May, "june": time.June, "july": time.July, "august": time.August, "september": time.September,
	"october": time.October, "november": time.November, "december": time.December,
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April, "jun": time.June,
	"jul": time.July, "aug": time.August, "sep": time.September, "sept": time.September, "oct": time.October,
	"nov": time.November, "dec": time.December,
}

var ruleCounts = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2,
}

const (
	ruleDayFormat   = "Monday 2 January 2006"
	ruleDateFormat  = "2 January 2006"
	ruleMonthFormat = "January 2006"
)

// ruleDay returns the midnight of t's date shifted by days.
func ruleDay(t time.Time, days int) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d+days, 0, 0, 0, 0, t.Location())
}

// ruleBefore returns the last date before t's date that falls on wd.
func ruleBefore(t time.Time, wd time.Weekday) time.Time {
	back := (int(t.Weekday()) - int(wd) + 7) % 7
	if back == 0 {
		back = 7
	}
	return ruleDay(t, -back)
}

// ruleFindWhen finds the first time expression of s; t is the message's
// time (zero: leave it relative). A future expression ("next week",
// "tomorrow") is reported with future set, so the sentence is not taken
// as an event. The expressions are the rows of ruleDatePhrases (fixed
// words) and ruleDateReaders (words around a weekday, a month, a date, a
// year or a count), tried at each token in turn.
func ruleFindWhen(s *ruleSentence, t time.Time) (w ruleWhen, future, ok bool) {
	toks := s.toks
	for i := range toks {
		if ruleFutureAt(toks, i) {
			return ruleWhen{}, true, false
		}
		end, res, ok := ruleWhenAt(toks, i, t)
		if !ok {
			continue
		}
		w = ruleWhen{start: i, end: end, phrase: ruleLowerJoin(toks[i:end])}
		if !t.IsZero() {
			w.resolved = res
		}
		return w, false, true
	}
	return ruleWhen{}, false, false
}

// ruleWhenAt reads a time expression at toks[i]: its end and what it
// resolves to. Only the rows that start with toks[i]'s word are tried.
func ruleWhenAt(toks []ruleTok, i int, t time.Time) (end int, res string, ok bool) {
	rows := ruleDateIndex[ruleDateWord(toks, i)]
	if toks[i].k == rtNum {
		rows = ruleDateIndex[ruleDateNumber]
	}
	for _, rd := range rows.readers {
		if end, res, ok := rd(toks, i, t); ok {
			return end, res, true
		}
	}
	for _, p := range rows.phrases {
		if ruleWordsAt(toks, i, p.words) {
			return i + len(p.words), p.resolve(t), true
		}
	}
	return 0, "", false
}

// ruleDateRows are the rows of the date tables that start with one word.
type ruleDateRows struct {
	readers []ruleDateRead
	phrases []ruleDatePhrase
}

// ruleDateNumber is the key of ruleDateIndex for a number token.
const ruleDateNumber = "0"

// ruleDateIndex holds the rows of ruleDateReaders and ruleDatePhrases by
// their first word, in table order, so that a sentence's words are not
// each tried against every row.
var ruleDateIndex = func() map[string]ruleDateRows {
	idx := map[string]ruleDateRows{}
	for _, rd := range ruleDateReaders {
		for _, w := range rd.first {
			e := idx[w]
			e.readers = append(e.readers, rd.read)
			idx[w] = e
		}
	}
	for _, p := range ruleDatePhrases {
		e := idx[p.words[0]]
		e.phrases = append(e.phrases, p)
		idx[p.words[0]] = e
	}
	return idx
}()

// ruleFutureAt reports whether toks[i] opens a future expression:
// "tomorrow", "tonight", "next <word>".
func ruleFutureAt(toks []ruleTok, i int) bool {
	switch ruleDateWord(toks, i) {
	case "tomorrow", "tonight":
		return true
	case "next":
		return ruleDateWord(toks, i+1) != ""
	}
	return false
}

// ruleDateWord returns the lower case of toks[i] unless it is a mark or
// out of range.
func ruleDateWord(toks []ruleTok, i int) string {
	if i < 0 || i >= len(toks) || toks[i].k == rtPunct {
		return ""
	}
	return toks[i].l
}

// ruleWordsAt reports whether the words at toks[i:] are words.
func ruleWordsAt(toks []ruleTok, i int, words []string) bool {
	for k, w := range words {
		if ruleDateWord(toks, i+k) != w {
			return false
		}
	}
	return true
}

// ruleLowerJoin joins the lower cases of toks with spaces.
func ruleLowerJoin(toks []ruleTok) string {
	var p strings.Builder
	for k, tk := range toks {
		if k > 0 {
			p.WriteByte(' ')
		}
		p.WriteString(tk.l)
	}
	return p.String()
}

// ruleOnDay renders a day: "on Saturday 6 May 2023".
func ruleOnDay(d time.Time) string { return "on " + d.Format(ruleDayFormat) }

// ruleInMonth renders the month m months after t's: "in April 2023".
func ruleInMonth(t time.Time, m int) string {
	return "in " + time.Date(t.Year(), t.Month()+time.Month(m), 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat)
}

// ruleRelDate renders a span relative to t's date: "the week before 8 May
// 2023".
func ruleRelDate(what string) func(time.Time) string {
	return func(t time.Time) string { return what + " " + t.Format(ruleDateFormat) }
}

// ruleDatePhrase is a time expression of fixed words and what it
// resolves to against the message's time.
type ruleDatePhrase struct {
	words   []string
	resolve func(t time.Time) string
}

// ruleDatePhrases are the time expressions of fixed words. A new one is a
// row.
var ruleDatePhrases = []ruleDatePhrase{
	{[]string{"yesterday"}, func(t time.Time) string { return ruleOnDay(ruleDay(t, -1)) }},
	{[]string{"today"}, ruleOnDay},
	{[]string{"earlier", "today"}, ruleOnDay},
	{[]string{"this", "morning"}, ruleOnDay},
	{[]string{"this", "afternoon"}, ruleOnDay},
	{[]string{"this", "week"}, ruleRelDate("the week of")},
	{[]string{"this", "weekend"}, ruleRelDate("the weekend of")},
	{[]string{"this", "month"}, func(t time.Time) string { return ruleInMonth(t, 0) }},
	{[]string{"this", "year"}, func(t time.Time) string { return "in " + strconv.Itoa(t.Year()) }},
	{[]string{"last", "night"}, func(t time.Time) string { return ruleOnDay(ruleDay(t, -1)) }},
	{[]string{"last", "evening"}, func(t time.Time) string { return ruleOnDay(ruleDay(t, -1)) }},
	{[]string{"last", "week"}, ruleRelDate("the week before")},
	{[]string{"last", "weekend"}, ruleRelDate("the weekend before")},
	{[]string{"last", "month"}, func(t time.Time) string { return ruleInMonth(t, -1) }},
	{[]string{"last", "year"}, func(t time.Time) string { return "in " + strconv.Itoa(t.Year()-1) }},
	{[]string{"last", "summer"}, ruleLastSeason("summer")},
	{[]string{"last", "winter"}, ruleLastSeason("winter")},
	{[]string{"last", "spring"}, ruleLastSeason("spring")},
	{[]string{"last", "fall"}, ruleLastSeason("fall")},
	{[]string{"last", "autumn"}, ruleLastSeason("autumn")},
	{[]string{"the", "other", "day"}, ruleRelDate("a few days before")},
}

func ruleLastSeason(season string) func(time.Time) string {
	return func(t time.Time) string { return "last " + season + " (before " + t.Format(ruleDateFormat) + ")" }
}

// ruleDateRead reads a time expression at toks[i] that is not fixed
// words: its end and what it resolves to against t.
type ruleDateRead func(toks []ruleTok, i int, t time.Time) (end int, res string, ok bool)

// ruleDateReader is a reader of time expressions and the words they may
// start with (ruleDateNumber for a number).
type ruleDateReader struct {
	first []string
	read  ruleDateRead
}

// ruleDateReaders are the time expressions around a weekday, a month, a
// date, a year or a count. A new one is a row.
var ruleDateReaders = []ruleDateReader{
	{[]string{"last", "past", "this"}, ruleWhenLastWeekday}, // "last Saturday", "past Friday night", "this past Monday"
	{[]string{"last"}, ruleWhenLastMonth},                   // "last March"
	{[]string{"on"}, ruleWhenOn},                            // "on Friday", "on May 3"
	{[]string{"in"}, ruleWhenIn},                            // "in June", "in June 2021", "in 2019"
	// "two weeks ago", "3 days ago", "a few days ago", "a couple of months ago"
	{append([]string{ruleDateNumber}, ruleCountWords()...), ruleWhenAgo},
}

// ruleCountWords are the words of ruleCounts.
func ruleCountWords() []string {
	out := make([]string, 0, len(ruleCounts))
	for w := range ruleCounts {
		out = append(out, w)
	}
	return out
}

// ruleWhenLastWeekday reads "last Saturday", "past Friday night" and "this
// past Monday".
func ruleWhenLastWeekday(toks []ruleTok, i int, t time.Time) (int, string, bool) {
	j := i
	switch ruleDateWord(toks, i) {
	case "this":
		if ruleDateWord(toks, i+1) != "past" {
			return 0, "", false
		}
		j = i + 1
	case "last", "past":
	default:
		return 0, "", false
	}
	wd, ok := ruleWeekday(toks, j+1)
	if !ok {
		return 0, "", false
	}
	end := j + 2
	if j == i {
		switch ruleDateWord(toks, end) {
		case "night", "morning", "evening", "afternoon":
			end++
		}
	}
	return end, ruleOnDay(ruleBefore(t, wd)), true
}

// ruleWhenLastMonth reads "last March": the last March before t's month.
func ruleWhenLastMonth(toks []ruleTok, i int, t time.Time) (int, string, bool) {
	if ruleDateWord(toks, i) != "last" {
		return 0, "", false
	}
	m, ok := ruleMonths[ruleDateWord(toks, i+1)]
	if !ok || !toks[i+1].cap {
		return 0, "", false
	}
	y := t.Year()
	if m >= t.Month() {
		y--
	}
	return i + 2, "in " + time.Date(y, m, 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat), true
}

// ruleWhenOn reads "on Friday" and "on May 3".
func ruleWhenOn(toks []ruleTok, i int, t time.Time) (int, string, bool) {
	if ruleDateWord(toks, i) != "on" {
		return 0, "", false
	}
	if wd, ok := ruleWeekday(toks, i+1); ok {
		return i + 2, ruleOnDay(ruleBefore(t, wd)), true
	}
	d, e, ok := ruleDate(toks, i+1, t)
	if !ok {
		return 0, "", false
	}
	return e, "on " + d.Format(ruleDateFormat), true
}

// ruleWhenIn reads "in June", "in June 2021" and "in 2019".
func ruleWhenIn(toks []ruleTok, i int, t time.Time) (int, string, bool) {
	if ruleDateWord(toks, i) != "in" {
		return 0, "", false
	}
	if m, ok := ruleMonths[ruleDateWord(toks, i+1)]; ok && toks[i+1].cap {
		y, e := t.Year(), i+2
		if yy, ok := ruleYear(toks, e); ok {
			y, e = yy, e+1
		} else if m > t.Month() {
			y--
		}
		return e, "in " + time.Date(y, m, 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat), true
	}
	if y, ok := ruleYear(toks, i+1); ok && y <= t.Year() {
		return i + 2, "in " + strconv.Itoa(y), true
	}
	return 0, "", false
}

// ruleAgoUnit resolves "n <unit>s ago" (few: "a few <unit>s ago").
type ruleAgoUnit func(t time.Time, n int, few bool) string

// ruleAgoUnits are the units of "n <unit>s ago". A new one is a row.
var ruleAgoUnits = map[string]ruleAgoUnit{
	"day": func(t time.Time, n int, few bool) string {
		if few {
			return "a few days before " + t.Format(ruleDateFormat)
		}
		return ruleOnDay(ruleDay(t, -n))
	},
	"week": func(t time.Time, n int, few bool) string {
		switch {
		case few:
			return "a few weeks before " + t.Format(ruleDateFormat)
		case n == 1:
			return "the week before " + t.Format(ruleDateFormat)
		}
		return strconv.Itoa(n) + " weeks before " + t.Format(ruleDateFormat)
	},
	"month": func(t time.Time, n int, few bool) string {
		if few {
			return "a few months before " + t.Format(ruleDateFormat)
		}
		return ruleInMonth(t, -n)
	},
	"year": func(t time.Time, n int, few bool) string {
		if few {
			return "a few years before " + t.Format(ruleDateFormat)
		}
		return "in " + strconv.Itoa(t.Year()-n)
	},
}

// ruleWhenAgo reads "two weeks ago", "3 days ago", "a few days ago" and
// "a couple of months ago".
func ruleWhenAgo(toks []ruleTok, i int, t time.Time) (int, string, bool) {
	n, j, ok := ruleCountAt(toks, i)
	if !ok {
		return 0, "", false
	}
	few := false
	if w := ruleDateWord(toks, j); w == "few" || w == "couple" {
		few = w == "few"
		if w == "couple" {
			n = 2
		}
		j++
		if ruleDateWord(toks, j) == "of" {
			j++
		}
	}
	unit, ok := ruleAgoUnits[strings.TrimSuffix(ruleDateWord(toks, j), "s")]
	if !ok || ruleDateWord(toks, j+1) != "ago" {
		return 0, "", false
	}
	return j + 2, unit(t, n, few), true
}

// ruleCountAt reads a count at toks[i]: a number word or 1 to 100.
func ruleCountAt(toks []ruleTok, i int) (n, next int, ok bool) {
	if v, ok := ruleCounts[ruleDateWord(toks, i)]; ok {
		return v, i + 1, true
	}
	if toks[i].k != rtNum {
		return 0, 0, false
	}
	v, err := strconv.Atoi(toks[i].s)
	if err != nil || v <= 0 || v > 100 {
		return 0, 0, false
	}
	return v, i + 1, true
}

// ruleDate reads "May 3", "May 3rd, 2022", "3 May" or "the 3rd of May"
// at toks[i]: a date no later than t unless the year is said.
func ruleDate(toks []ruleTok, i int, t time.Time) (time.Time, int, bool) {
	if i < len(toks) && toks[i].l == "the" {
		i++
	}
	var m time.Month
	d, e := 0, i
	if i < len(toks) {
		if mm, ok := ruleMonths[toks[i].l]; ok && (toks[i].cap || len(toks[i].l) > 3) && i+1 < len(toks) {
			if dd, ok := ruleDayNum(toks[i+1]); ok {
				m, d, e = mm, dd, i+2
			}
		} else if dd, ok := ruleDayNum(toks[i]); ok && i+1 < len(toks) {
			j := i + 1
			if toks[j].l == "of" {
				j++
			}
			if j < len(toks) {
				if mm, ok := ruleMonths[toks[j].l]; ok && (toks[j].cap || len(toks[j].l) > 3) {
					m, d, e = mm, dd, j+1
				}
			}
		}
	}
	if d == 0 {
		return time.Time{}, 0, false
	}
	y := t.Year()
	if e < len(toks) && toks[e].s == "," {
		if yy, ok := ruleYear(toks, e+1); ok {
			y, e = yy, e+2
		}
	} else if yy, ok := ruleYear(toks, e); ok {
		y, e = yy, e+1
	} else if time.Date(y, m, d, 0, 0, 0, 0, t.Location()).After(t) {
		y--
	}
	date := time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	if date.Day() != d {
		return time.Time{}, 0, false
	}
	return date, e, true
}

// ruleDayNum reads a day of the month: "3", "3rd", "21st".
func ruleDayNum(t ruleTok) (int, bool) {
	s := t.l
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		s = strings.TrimSuffix(s, suf)
	}
	if len(s) == 0 || len(s) > 2 {
		return 0, false
	}
	d, err := strconv.Atoi(s)
	return d, err == nil && d >= 1 && d <= 31
}

// ruleYear reads a four-digit year at toks[i].
func ruleYear(toks []ruleTok, i int) (int, bool) {
	if i >= len(toks) || toks[i].k != rtNum || len(toks[i].s) != 4 {
		return 0, false
	}
	y, err := strconv.Atoi(toks[i].s)
	return y, err == nil && y >= 1900 && y <= 2100
}
