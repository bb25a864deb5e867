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
// as an event.
func ruleFindWhen(s *ruleSentence, t time.Time) (w ruleWhen, future, ok bool) {
	toks := s.toks
	word := func(i int) string {
		if i < 0 || i >= len(toks) || toks[i].k == rtPunct {
			return ""
		}
		return toks[i].l
	}
	day := func(d time.Time) string { return "on " + d.Format(ruleDayFormat) }
	for i := range toks {
		var res string
		end := i + 1
		switch w0 := word(i); w0 {
		case "tomorrow", "tonight", "next":
			if w0 != "next" || word(i+1) != "" {
				return ruleWhen{}, true, false
			}
			continue
		case "yesterday":
			res = day(ruleDay(t, -1))
		case "today":
			res = day(t)
		case "earlier":
			if word(i+1) != "today" {
				continue
			}
			end, res = i+2, day(t)
		case "this":
			switch word(i + 1) {
			case "morning", "afternoon":
				end, res = i+2, day(t)
			case "week":
				end, res = i+2, "the week of "+t.Format(ruleDateFormat)
			case "weekend":
				end, res = i+2, "the weekend of "+t.Format(ruleDateFormat)
			case "month":
				end, res = i+2, "in "+t.Format(ruleMonthFormat)
			case "year":
				end, res = i+2, "in "+strconv.Itoa(t.Year())
			case "past":
				if wd, ok := ruleWeekday(toks, i+2); ok {
					end, res = i+3, day(ruleBefore(t, wd))
				} else {
					continue
				}
			default:
				continue
			}
		case "last", "past":
			w1 := word(i + 1)
			if wd, ok := ruleWeekday(toks, i+1); ok {
				end, res = i+2, day(ruleBefore(t, wd))
				if word(end) == "night" || word(end) == "morning" || word(end) == "evening" || word(end) == "afternoon" {
					end++
				}
				break
			}
			if m, ok := ruleMonths[w1]; ok && toks[i+1].cap && w0 == "last" {
				y := t.Year()
				if m >= t.Month() {
					y--
				}
				end, res = i+2, "in "+time.Date(y, m, 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat)
				break
			}
			if w0 != "last" {
				continue
			}
			switch w1 {
			case "night", "evening":
				end, res = i+2, day(ruleDay(t, -1))
			case "week":
				end, res = i+2, "the week before "+t.Format(ruleDateFormat)
			case "weekend":
				end, res = i+2, "the weekend before "+t.Format(ruleDateFormat)
			case "month":
				end, res = i+2, "in "+time.Date(t.Year(), t.Month()-1, 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat)
			case "year":
				end, res = i+2, "in "+strconv.Itoa(t.Year()-1)
			case "summer", "winter", "spring", "fall", "autumn":
				end, res = i+2, "last "+w1+" (before "+t.Format(ruleDateFormat)+")"
			default:
				continue
			}
		case "on":
			if wd, ok := ruleWeekday(toks, i+1); ok {
				end, res = i+2, day(ruleBefore(t, wd))
				break
			}
			d, e, ok := ruleDate(toks, i+1, t)
			if !ok {
				continue
			}
			end, res = e, "on "+d.Format(ruleDateFormat)
		case "in":
			if m, ok := ruleMonths[word(i+1)]; ok && toks[i+1].cap {
				y, e := t.Year(), i+2
				if yy, ok := ruleYear(toks, e); ok {
					y, e = yy, e+1
				} else if m > t.Month() {
					y--
				}
				end, res = e, "in "+time.Date(y, m, 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat)
				break
			}
			if y, ok := ruleYear(toks, i+1); ok && y <= t.Year() {
				end, res = i+2, "in "+strconv.Itoa(y)
				break
			}
			continue
		case "the":
			if word(i+1) == "other" && word(i+2) == "day" {
				end, res = i+3, "a few days before "+t.Format(ruleDateFormat)
				break
			}
			continue
		default:
			// "two weeks ago", "a few days ago", "a couple of months ago".
			n, j := 0, i
			if v, ok := ruleCounts[w0]; ok {
				n, j = v, i+1
			} else if toks[i].k == rtNum {
				v, err := strconv.Atoi(toks[i].s)
				if err != nil || v <= 0 || v > 100 {
					continue
				}
				n, j = v, i+1
			} else {
				continue
			}
			few := false
			if word(j) == "few" || word(j) == "couple" {
				few = word(j) == "few"
				if word(j) == "couple" {
					n = 2
				}
				j++
				if word(j) == "of" {
					j++
				}
			}
			unit := word(j)
			if word(j+1) != "ago" {
				continue
			}
			end = j + 2
			switch strings.TrimSuffix(unit, "s") {
			case "day":
				if few {
					res = "a few days before " + t.Format(ruleDateFormat)
				} else {
					res = day(ruleDay(t, -n))
				}
			case "week":
				if few {
					res = "a few weeks before " + t.Format(ruleDateFormat)
				} else if n == 1 {
					res = "the week before " + t.Format(ruleDateFormat)
				} else {
					res = strconv.Itoa(n) + " weeks before " + t.Format(ruleDateFormat)
				}
			case "month":
				if few {
					res = "a few months before " + t.Format(ruleDateFormat)
				} else {
					res = "in " + time.Date(t.Year(), t.Month()-time.Month(n), 1, 0, 0, 0, 0, t.Location()).Format(ruleMonthFormat)
				}
			case "year":
				if few {
					res = "a few years before " + t.Format(ruleDateFormat)
				} else {
					res = "in " + strconv.Itoa(t.Year()-n)
				}
			default:
				continue
			}
		}
		var p strings.Builder
		for k := i; k < end; k++ {
			if k > i {
				p.WriteByte(' ')
			}
			p.WriteString(toks[k].l)
		}
		w = ruleWhen{start: i, end: end, phrase: p.String()}
		if !t.IsZero() {
			w.resolved = res
		}
		return w, false, true
	}
	return ruleWhen{}, false, false
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
