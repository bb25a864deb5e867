package memory

// Clauses of the rule extractor. A sentence is split into clauses once,
// before the clause patterns run, so that "I work at Globex and I live in
// Berlin" is read as two clauses: the patterns then see the end of a
// clause as the end of their tokens, "Globex and I" is not taken for a
// list, and a negation in one clause does not silence the next.
//
// A clause ends at a semicolon, before "but", and before "and", "so",
// "or", "yet" or a comma that a new clause follows: a first-person
// subject ("I", "my"), a name with a verb ("Carol manages"), a relation
// verb whose subject is the speaker again ("and work at Acme"), or, after
// a comma, a request or a refusal ("please email me", "no phone calls").
// "Jane and I live in Boston" stays whole: nothing before "and" is a
// verb, so "and I" joins a subject rather than a clause.

// ruleClause is one clause of a sentence: tokens of the sentence, without
// the conjunction or mark that separates it from the previous one.
type ruleClause struct {
	toks []ruleTok
	// implied is set when the clause left its subject out ("I live in
	// Boston and work at Acme"): toks then start with a made "I".
	implied bool
}

// ruleConj are the conjunctions that can join clauses.
var ruleConj = ruleWords("and but so or yet")

// ruleSubjectPronouns start a clause after a conjunction.
var ruleSubjectPronouns = ruleWords("i my")

// ruleVerbish are words that show a clause already has its verb.
var ruleVerbish = ruleWords(`i we you he she they is are am was were has have had do does did will would can
could not owns manages leads heads works lives own manage lead head work live moved relocated`)

// ruleNoInterjections are the "no X" that answer rather than ask: "no
// worries", "no problem".
var ruleNoInterjections = ruleWords(`worries worry problem problems way thanks thank rush idea clue doubt kidding
biggie prob probs need pressure sweat joke offense offence harm matter luck chance wonder shame`)

// ruleSplitClauses appends the clauses of toks to dst and returns it. The
// clauses share toks' array, except an implied subject's, which is a copy.
func ruleSplitClauses(dst []ruleClause, toks []ruleTok) []ruleClause {
	start := 0
	for i := 0; i < len(toks); i++ {
		skip, implied := ruleClauseBreak(toks, start, i)
		if skip == 0 {
			continue
		}
		dst = ruleAddClause(dst, toks[start:i], false)
		start = i + skip
		i = start - 1
		if implied {
			dst = ruleAddImplied(dst, toks, start)
			start = ruleNextBreak(toks, start)
			i = start - 1
		}
	}
	return ruleAddClause(dst, toks[start:], false)
}

// ruleAddClause appends a clause, without the marks that end it, unless it
// is empty.
func ruleAddClause(dst []ruleClause, toks []ruleTok, implied bool) []ruleClause {
	for len(toks) > 0 && toks[len(toks)-1].k == rtPunct {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return dst
	}
	return append(dst, ruleClause{toks: toks, implied: implied})
}

// ruleAddImplied appends the clause at toks[at:] up to its end with a
// made "I" as its subject.
func ruleAddImplied(dst []ruleClause, toks []ruleTok, at int) []ruleClause {
	end := ruleNextBreak(toks, at)
	c := make([]ruleTok, 0, end-at+1)
	c = append(c, ruleTok{s: "I", l: "i", k: rtWord, cap: true, sp: true})
	c = append(c, toks[at:end]...)
	return ruleAddClause(dst, c, true)
}

// ruleNextBreak returns where the clause starting at toks[at] ends.
func ruleNextBreak(toks []ruleTok, at int) int {
	for i := at; i < len(toks); i++ {
		if skip, _ := ruleClauseBreak(toks, at, i); skip > 0 {
			return i
		}
	}
	return len(toks)
}

// ruleClauseBreak reports whether a new clause starts at toks[i], the
// current one having started at toks[start]: it returns how many tokens
// the separator takes (0: no break), and whether the new clause left out
// its subject "I".
func ruleClauseBreak(toks []ruleTok, start, i int) (skip int, implied bool) {
	if i == start {
		return 0, false
	}
	t := toks[i]
	switch {
	case t.k == rtPunct && t.s == ";":
		return 1, false
	case t.k == rtPunct && t.s == ",":
		if ruleWord(toks, i+1) != "" && inSet(ruleConj, toks[i+1].l) {
			if s, imp := ruleConjBreak(toks, start, i+1); s > 0 {
				return s + 1, imp
			}
			return 0, false
		}
		if ruleCommaOpens(toks, i+1) {
			return 1, false
		}
	case t.k == rtWord && inSet(ruleConj, t.l):
		return ruleConjBreak(toks, start, i)
	}
	return 0, false
}

// ruleConjBreak reports whether the conjunction at toks[i] starts a
// clause; see ruleClauseBreak.
func ruleConjBreak(toks []ruleTok, start, i int) (int, bool) {
	if toks[i].l == "but" {
		return 1, false
	}
	if !ruleHasVerb(toks[start:i]) {
		return 0, false // "Jane and I", "Tom and Jerry"
	}
	next := ruleWord(toks, i+1)
	switch {
	case inSet(ruleSubjectPronouns, next):
		return 1, false
	case ruleNamedSubject(toks, i+1):
		return 1, false
	case toks[i].l == "and" && ruleWord(toks, start) == "i" && ruleImpliedVerb(toks, i+1):
		return 1, true
	}
	return 0, false
}

// ruleCommaOpens reports whether the words after a comma at toks[i-1]
// open a clause of their own: "I" with a verb, a request ("please email
// me") or a refusal ("no phone calls").
func ruleCommaOpens(toks []ruleTok, i int) bool {
	switch ruleWord(toks, i) {
	case "i":
		return i+1 < len(toks) && toks[i+1].k == rtWord
	case "please":
		return true
	case "no":
		return !inSet(ruleNoInterjections, ruleWord(toks, i+1)) && ruleWord(toks, i+1) != "longer"
	}
	return false
}

// ruleHasVerb reports whether toks seem to hold a verb or a subject
// pronoun, and so a clause rather than a noun phrase.
func ruleHasVerb(toks []ruleTok) bool {
	for _, t := range toks {
		if t.k == rtWord && (inSet(ruleVerbish, t.l) || inSet(ruleIrregularPast, t.l)) {
			return true
		}
	}
	return false
}

// ruleNamedSubject reports whether a capitalised name at toks[i] is
// followed by a verb: "and Carol manages Globex", not "and Jerry".
func ruleNamedSubject(toks []ruleTok, i int) bool {
	if i >= len(toks) || toks[i].k != rtWord || !toks[i].cap || toks[i].l == "i" {
		return false
	}
	e, ok := ruleNameSpan(toks, i, 4)
	if !ok {
		return false
	}
	w := ruleWord(toks, e)
	return w != "" && w != "and" && inSet(ruleVerbish, w) && w != "i"
}

// ruleImpliedVerb reports whether toks[i] is a relation verb that the
// speaker is the subject of when "I" is left out: "and work at Acme".
func ruleImpliedVerb(toks []ruleTok, i int) bool {
	w := ruleWord(toks, i)
	for _, vr := range ruleVerbRels {
		if w == vr.base && vr.prep != "" {
			return true
		}
	}
	return w == "moved" || w == "relocated"
}
