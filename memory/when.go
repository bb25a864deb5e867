package memory

import (
	"strconv"
	"strings"
	"time"
)

// queryWhen finds the first past time expression of a query ("last week",
// "in May 2023", "two days ago") with the rule extractor's date resolver,
// resolved against now, and returns it with the span of time it names.
func queryWhen(text string, now time.Time) (w ruleWhen, from, to time.Time, ok bool) {
	if now.IsZero() {
		return ruleWhen{}, from, to, false
	}
	for _, s := range ruleTokenize(text) {
		w, future, found := ruleFindWhen(&s, now)
		if future || !found {
			continue
		}
		if from, to, ok := ruleSpanOf(w.resolved, now.Location()); ok {
			return w, from, to, true
		}
	}
	return ruleWhen{}, from, to, false
}

// ruleSpans read what ruleFindWhen resolves an expression to back into the
// span of time it names, [from, to): "on Sunday 7 May 2023" is that day,
// "the week before 8 May 2023" the two weeks before it (people round), "in
// April 2023" the month. A row per form the date tables render.
var ruleSpans = []struct {
	prefix, layout string
	span           func(t time.Time, n int) (from, to time.Time)
}{
	{"on ", ruleDayFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t, t.AddDate(0, 0, 1) }},
	{"on ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t, t.AddDate(0, 0, 1) }},
	{"in ", ruleMonthFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t, t.AddDate(0, 1, 0) }},
	{"in ", "2006", func(t time.Time, _ int) (time.Time, time.Time) { return t, t.AddDate(1, 0, 0) }},
	{"the week of ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -7), t.AddDate(0, 0, 1) }},
	{"the weekend of ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -3), t.AddDate(0, 0, 1) }},
	{"the week before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -14), t }},
	{"the weekend before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -10), t }},
	{"a few days before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -10), t }},
	{"a few weeks before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, 0, -56), t.AddDate(0, 0, -7) }},
	{"a few months before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(0, -8, 0), t.AddDate(0, -1, 0) }},
	{"a few years before ", ruleDateFormat, func(t time.Time, _ int) (time.Time, time.Time) { return t.AddDate(-8, 0, 0), t.AddDate(-1, 0, 0) }},
	{"# weeks before ", ruleDateFormat, func(t time.Time, n int) (time.Time, time.Time) {
		return t.AddDate(0, 0, -7*(n+1)), t.AddDate(0, 0, -7*(n-1))
	}},
}

// ruleSpanOf returns the span of time a resolved expression names (see
// ruleSpans); "last summer (before …)" and the like name none.
func ruleSpanOf(resolved string, loc *time.Location) (from, to time.Time, ok bool) {
	n := 0
	if i := strings.IndexByte(resolved, ' '); i > 0 {
		if v, err := strconv.Atoi(resolved[:i]); err == nil {
			n, resolved = v, "# "+resolved[i+1:]
		}
	}
	for _, r := range ruleSpans {
		rest, found := strings.CutPrefix(resolved, r.prefix)
		if !found {
			continue
		}
		if t, err := time.ParseInLocation(r.layout, rest, loc); err == nil {
			from, to = r.span(t, n)
			return from, to, true
		}
	}
	return from, to, false
}
