// Package plural writes counts as English does: "1 fact", "2 facts",
// "0 entities". Every count the engram command prints goes through Count,
// so none reads "1 facts".
package plural

import (
	"strconv"
	"strings"
)

// Count returns n and noun, the noun's last word in the plural unless n
// is 1 or -1: Count(1, "fact") is "1 fact", Count(3, "parked job") is
// "3 parked jobs", Count(0, "entity") is "0 entities".
func Count[N ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10)
	if n == 1 || s == "-1" {
		return s + " " + noun
	}
	return s + " " + Of(noun)
}

// Of returns the plural of noun's last word, with the words before it as
// they are: "entity" becomes "entities", "batch" "batches", "parked job"
// "parked jobs".
func Of(noun string) string {
	i := strings.LastIndexByte(noun, ' ') + 1
	head, w := noun[:i], noun[i:]
	switch {
	case w == "":
		return noun
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return head + w[:len(w)-1] + "ies"
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return head + w + "es"
	}
	return head + w + "s"
}
