package memory

import "strings"

// Copula patterns of the rule extractor: "my X is Y", "Y is my X", "N's X
// is Y", "Y is N's X", their negations, and the appositions "my X, Y,"
// and "Y, my X,".

// myXIsY handles "my X is Y", "my X are Y and Z", "my X is no longer Y"
// and "my X is not Y" at toks[i] == "my".
func (r *ruleRun) myXIsY(toks []ruleTok, i, neg int) {
	pe, ok := rulePhrase(toks, i+1)
	if !ok {
		return
	}
	if ruleWordsMatch(toks, pe, []string{"'s", "name", "is"}) {
		// "my dog's name is Max".
		r.namedRelation(toks, toks[i+1:pe], pe+3, neg)
		return
	}
	verb := ruleWord(toks, pe)
	if verb != "is" && verb != "are" {
		return
	}
	pred, head, plural, ok := rulePred(toks[i+1 : pe])
	if !ok || plural != (verb == "are") || ruleFavorite(pred) {
		return // a favorite is a preference, see preferences
	}
	at := pe + 1
	if skip := ruleNegAt(toks, at); skip > 0 {
		// "my manager is no longer Dana", "my manager is not Dana".
		r.negatedValue(toks, at+skip, Fact{Subject: r.speaker, Predicate: ruleRelation(pred, head)})
		return
	}
	if w := ruleWord(toks, at); w == "named" || w == "called" {
		r.namedRelation(toks, toks[i+1:pe], at+1, neg)
		return
	}
	if neg >= 0 && neg < at+1 {
		return
	}
	if ruleWord(toks, at) == "now" {
		at++
	}
	r.myValues(toks, at, pred, head, plural)
}

// ruleFavorite reports whether pred is a favorite ("favorite_color").
func ruleFavorite(pred string) bool {
	return strings.HasPrefix(pred, "favorite_") || strings.HasPrefix(pred, "favourite_") || strings.HasPrefix(pred, "fav_")
}

// ruleNegAt returns how many words of negation are at toks[at]: "no
// longer" (2), "not" (1), or none.
func ruleNegAt(toks []ruleTok, at int) int {
	switch {
	case ruleWord(toks, at) == "no" && ruleWord(toks, at+1) == "longer":
		return 2
	case ruleWord(toks, at) == "not":
		return 1
	}
	return 0
}

// negatedValue invalidates f with the value at toks[at] as its object,
// when there is one value there and not a pronoun.
func (r *ruleRun) negatedValue(toks []ruleTok, at int, f Fact) {
	if v, ok := r.value(toks, at, false); ok && v.typ != "pronoun" && ruleNotList(toks, v.end) {
		f.Object = v.name
		r.invalidate(f)
	}
}

// myValues adds the facts of "my X is Y" (or with plural "my Xs are Y and
// Z") with the values at toks[at].
func (r *ruleRun) myValues(toks []ruleTok, at int, pred, head string, plural bool) {
	vals := r.values(toks, at, plural)
	if len(vals) == 0 || (!plural && len(vals) > 1) {
		return
	}
	slot := ruleSlotType(head)
	for _, v := range vals {
		if v.typ != "" && v.typ != "date" && slot != "" {
			return // "my son is 5": an age, not a name
		}
	}
	single := !plural && ruleSingleValued(head)
	for _, v := range vals {
		typ := v.typ
		if typ == "" {
			typ = slot
		}
		r.fact(r.speaker, ruleRelation(pred, head), v.name, r.speakerType(), typ, 0.9, single)
	}
}

// namedRelation handles "my X's name is Y" and "my X is named Y": the
// name of the speaker's X.
func (r *ruleRun) namedRelation(toks []ruleTok, phrase []ruleTok, at, neg int) {
	if neg >= 0 && neg < at {
		return
	}
	pred, head, plural, ok := rulePred(phrase)
	if !ok || plural {
		return
	}
	end, ok := ruleNameSpan(toks, at, 3)
	if !ok || (end < len(toks) && toks[end].l == "'s") {
		return
	}
	r.fact(r.speaker, ruleRelation(pred, head), ruleJoin(toks[at:end]), r.speakerType(), ruleSlotType(head), 0.9, false)
}

// ruleNameStart returns the start of the capitalised name that ends at
// toks[i-1], and whether it starts a clause: the sentence's start, after
// a mark, after a greeting, or after a word of also.
func ruleNameStart(toks []ruleTok, i int, also map[string]struct{}) (int, bool) {
	start := i - 1
	for start > 0 && toks[start-1].k == rtWord && toks[start-1].cap && toks[start-1].l != "i" {
		start--
	}
	if start < 0 {
		return start, false
	}
	if start == 0 || toks[start-1].k == rtPunct || inSet(ruleGreetings, toks[start-1].l) {
		return start, true
	}
	return start, also != nil && inSet(also, toks[start-1].l)
}

// yIsMyX handles "Y is my X", "Y is no longer my X", "Y is N's X" with
// toks[i] == "is".
func (r *ruleRun) yIsMyX(toks []ruleTok, i, neg int) {
	// Y must be the start of its clause: "Dana is my manager", "Yes,
	// Dana is my manager"; not "the friend of Dana is my manager".
	start, ok := ruleNameStart(toks, i, nil)
	if !ok {
		return
	}
	v, ok := r.value(toks, start, true)
	if !ok || v.end != i || v.typ == "pronoun" {
		return
	}
	at := i + 1
	skip := ruleNegAt(toks, at)
	if skip == 0 && neg >= 0 && neg < at {
		return
	}
	at += skip
	if w := ruleWord(toks, at); w == "also" || w == "now" {
		at++
	}
	subj, subjType, at, ok := r.copulaOwner(toks, at)
	if !ok {
		return
	}
	pred, head, ok := ruleCopulaRelation(toks, at)
	if !ok {
		return
	}
	if start == 0 && v.typ == "" && !v.known && ruleSlotType(head) != "person" && i-start < 2 {
		// A sentence-initial capitalised word is a name only when the
		// relation is to a person: "Family is my priority" is not a fact.
		return
	}
	f := Fact{Subject: subj, Predicate: ruleRelation(pred, head), Object: v.name}
	if skip > 0 {
		r.invalidate(f)
		return
	}
	typ := v.typ
	if typ == "" {
		typ = ruleSlotType(head)
	}
	r.fact(f.Subject, f.Predicate, f.Object, subjType, typ, 0.9, ruleSingleValued(head))
}

// copulaOwner reads whose relation "Y is ... X" names at toks[at]: "my"
// (the speaker) or "N's". It returns where the relation starts.
func (r *ruleRun) copulaOwner(toks []ruleTok, at int) (subj, subjType string, next int, ok bool) {
	switch {
	case ruleWord(toks, at) == "my" && r.speaker != "":
		return r.speaker, r.speakerType(), at + 1, true
	case ruleWord(toks, at) != "":
		// "Eve is Dana's manager".
		e, ok := ruleNameSpan(toks, at, 4)
		if !ok || ruleWord(toks, e) != "'s" {
			return "", "", 0, false
		}
		return r.canon(ruleJoin(toks[at:e])), "", e + 1, true
	}
	return "", "", 0, false
}

// ruleCopulaRelation reads the relation that ends "Y is my X" at
// toks[at]: one, not a favorite, ending the clause.
func ruleCopulaRelation(toks []ruleTok, at int) (pred, head string, ok bool) {
	pe, ok := rulePhrase(toks, at)
	if !ok || !ruleEndsClause(toks, pe) {
		return "", "", false
	}
	pred, head, plural, ok := rulePred(toks[at:pe])
	if !ok || plural || strings.HasPrefix(pred, "fav") {
		return "", "", false
	}
	return pred, head, true
}

// possessive handles "N's X is Y" with toks[i] == "'s".
func (r *ruleRun) possessive(toks []ruleTok, i, neg int) {
	start, ok := ruleNameStart(toks, i, nil)
	if !ok {
		return
	}
	n, ok := r.value(toks, start, true)
	if !ok || n.end != i || n.typ != "" {
		return
	}
	pe, ok := rulePhrase(toks, i+1)
	if !ok || ruleWord(toks, pe) != "is" {
		return
	}
	pred, head, plural, ok := rulePred(toks[i+1 : pe])
	if !ok || plural || strings.HasPrefix(pred, "fav") {
		return
	}
	at := pe + 1
	if ruleNegAt(toks, at) == 2 {
		r.negatedValue(toks, at+2, Fact{Subject: n.name, Predicate: ruleRelation(pred, head)})
		return
	}
	if neg >= 0 && neg < at+1 {
		return
	}
	if start == 0 && !n.known && !inSet(rulePersonRoles, head) && !inSet(rulePets, head) {
		return
	}
	r.possessiveValue(toks, at, n.name, pred, head)
}

// possessiveValue adds the fact of "N's X is Y" with Y at toks[at].
func (r *ruleRun) possessiveValue(toks []ruleTok, at int, subj, pred, head string) {
	vals := r.values(toks, at, false)
	if len(vals) != 1 {
		return
	}
	typ := vals[0].typ
	if typ == "" {
		typ = ruleSlotType(head)
	}
	subjType := ""
	if inSet(rulePersonRoles, head) {
		subjType = "person"
	}
	r.fact(subj, ruleRelation(pred, head), vals[0].name, subjType, typ, 0.85, ruleSingleValued(head))
}

// appositions handles "my X, Y,", "my X Y" (for relations to people and
// pets) and "Y, my X,".
func (r *ruleRun) appositions(toks []ruleTok) {
	if r.speaker == "" || ruleHypothetical(toks) {
		return
	}
	for i := 0; i+2 < len(toks); i++ {
		if ruleWord(toks, i) == "my" && (i == 0 || !inSet(ruleNeg, toks[i-1].l)) {
			r.appositionAfter(toks, i)
		}
	}
	// "Dana, my manager, ..."
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].s == "," && ruleWord(toks, i+1) == "my" {
			r.appositionBefore(toks, i)
		}
	}
}

// ruleRoleAt reads a relation to a person or a pet at toks[at:pe].
func ruleRoleAt(toks []ruleTok, at, pe int) (pred, head string, ok bool) {
	pred, head, plural, ok := rulePred(toks[at:pe])
	if !ok || plural || (!inSet(rulePersonRoles, head) && !inSet(rulePets, head)) {
		return "", "", false
	}
	return pred, head, true
}

// appositionAfter handles "my X, Y," and "my X Y" at toks[i] == "my".
func (r *ruleRun) appositionAfter(toks []ruleTok, i int) {
	pe, ok := rulePhrase(toks, i+1)
	if !ok || pe-i > 3 {
		return
	}
	pred, head, ok := ruleRoleAt(toks, i+1, pe)
	if !ok {
		return
	}
	at := pe
	comma := at < len(toks) && toks[at].s == ","
	if comma {
		at++
	}
	end, ok := ruleNameSpan(toks, at, 3)
	if !ok || (end < len(toks) && toks[end].l == "'s") {
		return
	}
	if comma && !(end == len(toks) || toks[end].k == rtPunct) {
		return // "my sister, Jane and Bob" is a list
	}
	name := r.canon(ruleJoin(toks[at:end]))
	r.fact(r.speaker, ruleRelation(pred, head), name, r.speakerType(), ruleSlotType(head), 0.8, ruleSingleValued(head))
}

// appositionBefore handles "Y, my X," with the first comma at toks[i].
func (r *ruleRun) appositionBefore(toks []ruleTok, i int) {
	start, ok := ruleNameStart(toks, i, ruleJoinPreps)
	if !ok {
		return
	}
	end, ok := ruleNameSpan(toks, start, 4)
	if !ok || end != i || (start == 0 && inSet(ruleCommonStart, toks[0].l)) {
		return
	}
	pe, ok := rulePhrase(toks, i+2)
	if !ok || pe >= len(toks) || toks[pe].k != rtPunct {
		return
	}
	pred, head, ok := ruleRoleAt(toks, i+2, pe)
	if !ok {
		return
	}
	name := r.canon(ruleJoin(toks[start:end]))
	r.fact(r.speaker, ruleRelation(pred, head), name, r.speakerType(), ruleSlotType(head), 0.8, ruleSingleValued(head))
}
