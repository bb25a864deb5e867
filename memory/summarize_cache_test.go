package memory

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engramdb/engram/index"
)

// referenceUnits is summaryUnits without parsedSummaries: prev and the
// messages parsed in one pass, one numbering of the terms.
func referenceUnits(prev string, msgs []Message) []summaryUnit {
	var units []summaryUnit
	ids := map[string]int{}
	add := func(speaker, text string) {
		for _, sp := range sentenceSpans(text) {
			s := text[sp.start:sp.end]
			counts := map[int]float64{}
			for _, t := range index.Analyze(s) {
				id, ok := ids[t]
				if !ok {
					id = len(ids)
					ids[t] = id
				}
				counts[id]++
			}
			if len(counts) == 0 {
				continue
			}
			vec := make([]termWeight, 0, len(counts))
			for id, c := range counts {
				vec = append(vec, termWeight{id, c})
			}
			slices.SortFunc(vec, func(a, b termWeight) int { return cmp.Compare(a.term, b.term) })
			units = append(units, summaryUnit{speaker: speaker, text: s, vec: vec})
		}
	}
	for line := range strings.Lines(strings.ToValidUTF8(prev, "\uFFFD")) {
		speaker, rest := speakerLabel(line)
		add(speaker, rest)
	}
	for i := range msgs {
		if m := &msgs[i]; summarizable(m) {
			add(speakerOf(m), strings.ToValidUTF8(m.Content, "\uFFFD"))
		}
	}
	return units
}

// TestSummaryUnitsMatchReference rolls random conversations through
// Extractive and checks that each fold's sentences, terms and counts are
// those of a parse of prev and the messages in one pass, whether prev's
// parse comes from parsedSummaries or not, and after a fold has scored
// (weighed in place) the units of a cached parse.
func TestSummaryUnitsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("acme contract renewal dana alice legal budget march invoice 3942 meeting porto venue " +
		"the a of and is to in signed approved owner price 12.5 q3 café ünïcödé 会議 🙂 — ’s \xff")
	roles := []Role{RoleUser, RoleAssistant, RoleUser, RoleSystem, RoleTool}
	names := []string{"", "", "alice", "bob"}
	ends := []string{". ", "! ", "? ", "\n", "。"}
	prev := ""
	for iter := range 200 {
		var msgs []Message
		for range rng.IntN(6) {
			var b strings.Builder
			for range 1 + rng.IntN(4) {
				for range 1 + rng.IntN(10) {
					b.WriteString(words[rng.IntN(len(words))] + " ")
				}
				b.WriteString(strconv.Itoa(iter) + ends[rng.IntN(len(ends))])
			}
			msgs = append(msgs, Message{Role: roles[rng.IntN(len(roles))], Name: names[rng.IntN(len(names))], Content: b.String()})
		}
		want := referenceUnits(prev, msgs)
		for pass := range 2 { // the second finds prev's parse cached
			got := summaryUnits(prev, msgs)
			if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Fatalf("iteration %d, pass %d: prev %q\nunits %+v\nwant  %+v", iter, pass, prev, got, want)
			}
			scoreUnits(got)
		}
		next, err := Extractive{}.Summarize(bg, prev, msgs, 1+rng.IntN(120))
		if err != nil {
			t.Fatal(err)
		}
		prev = next
	}
}
