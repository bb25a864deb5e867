package memory

import (
	"strings"

	"github.com/engramdb/engram/graph"
)

// Verb relations, preferences and events of the rule extractor.

// ruleAdverbs may stand between a subject and its verb.
var ruleAdverbs = ruleWords(`still now currently also actually just recently officially finally really
absolutely totally definitely especially genuinely truly generally usually always never rarely seldom
often sometimes kind sort of all both already once even then first honestly literally`)

// ruleParticiples follow "have" in the verb relations: "I've moved to".
var ruleParticiples = ruleWords("moved relocated")

// ruleVerbRel is a verb frame: a relation verb, its forms after "I" and
// after a name, the preposition it needs, its predicate and its object's
// type. A new relation verb is a row of ruleVerbRels.
type ruleVerbRel struct {
	pred, base, third, prep, objType string
	role                             string // the noun of its subject: owns → owner
	// forms are more surface forms ("working"); with firstOnly they are
	// the only ones, and the frame holds only with "I" as the subject and
	// no negation ("I moved to Berlin").
	forms     []string
	firstOnly bool
	// orgFor: after "for" the object must be an organization ("I work for
	// Dana" names a boss, not an employer).
	orgFor bool
}

var ruleVerbRels = []ruleVerbRel{
	{pred: "owns", base: "own", third: "owns", role: "owner", forms: []string{"owning"}},
	{pred: "manages", base: "manage", third: "manages", role: "manager"},
	{pred: "leads", base: "lead", third: "leads", role: "lead", forms: []string{"leading"}},
	{pred: "heads", base: "head", third: "heads", role: "head", forms: []string{"heading"}},
	{pred: "works_at", base: "work", third: "works", prep: "at for", objType: "organization", forms: []string{"working"}, orgFor: true},
	{pred: "lives_in", base: "live", third: "lives", prep: "in", objType: "place", forms: []string{"living"}},
	{pred: "lives_in", prep: "to", objType: "place", forms: []string{"moved", "relocated"}, firstOnly: true},
	{pred: "lives_in", prep: "in", objType: "place", forms: []string{"based"}, firstOnly: true},
}

// matches reports whether the verb at toks[at] is this frame's, in the
// form its subject (first: "I") and a negation before it call for.
func (vr *ruleVerbRel) matches(toks []ruleTok, at int, first, negated bool) bool {
	v := toks[at].l
	if vr.firstOnly && (!first || negated) {
		return false
	}
	for _, f := range vr.forms {
		if v == f {
			return true
		}
	}
	if vr.firstOnly {
		return false
	}
	prev := ruleWord(toks, at-1)
	form := vr.third
	if first || (negated && prev == "not") {
		form = vr.base
	}
	return v == form
}

// verbs finds "X owns Y", "I work at Y", "I live in Y", "I moved to Y",
// "I have a dog named Z" and their negations ("I no longer work at Y",
// "Dana doesn't own it anymore").
func (r *ruleRun) verbs(toks []ruleTok, neg int) {
	for i := 0; i < len(toks) && r.err == nil; i++ {
		subj, subjType, at, first, ok := r.verbSubject(toks, i)
		if !ok {
			continue
		}
		if !first {
			i = at - 1
		}
		r.verbClause(toks, subj, subjType, at, first, neg)
	}
}

// verbSubject reads the subject of a verb relation at toks[i]: "I" (the
// speaker), or in a user message a capitalised name that starts a clause.
// It returns where the verb phrase starts.
func (r *ruleRun) verbSubject(toks []ruleTok, i int) (subj, subjType string, at int, first, ok bool) {
	if ruleWord(toks, i) == "i" {
		return r.speaker, r.speakerType(), i + 1, true, r.speaker != ""
	}
	if !r.user || toks[i].k != rtWord || !toks[i].cap || !ruleClauseStart(toks, i) {
		return "", "", 0, false, false
	}
	if i == 0 && inSet(ruleCommonStart, toks[0].l) {
		return "", "", 0, false, false
	}
	e, ok := ruleNameSpan(toks, i, 4)
	if !ok {
		return "", "", 0, false, false
	}
	return r.canon(ruleJoin(toks[i:e])), "", e, false, true
}

// ruleVerbLead skips what may stand between a subject and its verb ("no
// longer", "do not", "am", "have" before "moved", adverbs), returning the
// verb's index and whether the verb is negated.
func ruleVerbLead(toks []ruleTok, at int) (int, bool) {
	negated := false
	for at < len(toks) && toks[at].k == rtWord {
		skip, neg := ruleVerbLeadStep(toks, at)
		if skip == 0 {
			break
		}
		at += skip
		negated = negated || neg
	}
	return at, negated
}

// ruleVerbLeadStep returns how many words at toks[at] come before the
// verb (0: the verb is there), and whether they negate it.
func ruleVerbLeadStep(toks []ruleTok, at int) (int, bool) {
	w, next := toks[at].l, ruleWord(toks, at+1)
	switch {
	case w == "no" && next == "longer":
		return 2, true
	case (w == "do" || w == "does" || w == "am" || w == "is") && next == "not":
		return 2, true
	case w == "am" || w == "is":
		return 1, false
	case (w == "have" || w == "has") && inSet(ruleParticiples, next):
		return 1, false
	case inSet(ruleAdverbs, w) && w != "never":
		return 1, false
	}
	return 0, false
}

// ruleInList reports whether w is one of the space-separated words of
// list.
func ruleInList(list, w string) bool {
	for list != "" && w != "" {
		var f string
		f, list, _ = strings.Cut(list, " ")
		if f == w {
			return true
		}
	}
	return false
}

// verbClause reads the verb phrase after a subject at toks[at].
func (r *ruleRun) verbClause(toks []ruleTok, subj, subjType string, at int, first bool, neg int) {
	at, negated := ruleVerbLead(toks, at)
	v := ruleWord(toks, at)
	if v == "" || (!negated && neg >= 0 && neg < at) {
		return
	}
	// "I have a dog named Max", "I've got a cat called Luna".
	if !negated && first && (v == "have" || v == "got") {
		if v == "have" && ruleWord(toks, at+1) == "got" {
			at++
		}
		r.hasNamed(toks, subj, subjType, at+1)
		return
	}
	for k := range ruleVerbRels {
		if vr := &ruleVerbRels[k]; vr.matches(toks, at, first, negated) {
			r.verbRel(toks, subj, subjType, vr, at+1, negated)
			return
		}
	}
}

// verbRel reads the object of a verb frame at toks[obj]: its preposition,
// then a value, or with negated the value or "it" to invalidate.
func (r *ruleRun) verbRel(toks []ruleTok, subj, subjType string, vr *ruleVerbRel, obj int, negated bool) {
	if vr.prep != "" {
		if !ruleInList(vr.prep, ruleWord(toks, obj)) {
			return
		}
		obj++
	}
	if negated {
		r.negatedRelation(toks, subj, *vr, obj)
		return
	}
	vals := r.values(toks, obj, false)
	if len(vals) != 1 || (vals[0].typ != "" && vals[0].typ != "identifier") {
		return
	}
	if vr.prep != "" && vals[0].typ != "" {
		return // "I work at 9"
	}
	if vr.orgFor && ruleWord(toks, obj-1) == "for" && !r.organization(toks[obj:vals[0].end], vals[0]) {
		return // "I work for Dana": a boss, not an employer
	}
	typ := vr.objType
	if vals[0].typ != "" {
		typ = vals[0].typ
	}
	r.fact(subj, vr.pred, vals[0].name, subjType, typ, 0.9, vr.prep != "")
}

// organization reports whether the object of "work for" names an
// organization rather than a person: an organization word ("Acme Corp"),
// an acronym ("IBM"), or a graph entity that something works at.
func (r *ruleRun) organization(toks []ruleTok, v ruleVal) bool {
	for _, t := range toks {
		if inSet(ruleOrgWords, t.l) || (len(t.s) >= 2 && strings.ToUpper(t.s) == t.s && t.k == rtWord) {
			return true
		}
	}
	if !v.known {
		return false
	}
	facts, err := r.known.Facts(r.ctx, []string{v.name}, 32)
	if err != nil {
		r.err = err
		return false
	}
	for _, f := range facts {
		if strings.EqualFold(f.Object, v.name) && f.Predicate == "works_at" {
			return true
		}
	}
	return false
}

// ruleOrgWords mark a name as an organization's.
var ruleOrgWords = ruleWords(`inc corp corporation llc ltd limited company co group bank university college
labs lab systems technologies technology solutions foundation institute agency department ministry council
hospital school studio studios partners capital media games software airlines motors consulting holdings
industries international services`)

// negatedRelation handles the object of a negated relation verb: a name
// ("I no longer work at Acme"), or "it", "the renewal", "my account"
// resolved through Known.Facts.
func (r *ruleRun) negatedRelation(toks []ruleTok, subj string, vr ruleVerbRel, at int) {
	if v, ok := r.value(toks, at, false); ok && v.typ != "pronoun" {
		if ruleNotList(toks, v.end) {
			r.invalidate(Fact{Subject: subj, Predicate: vr.pred, Object: v.name})
		}
		return
	}
	if vr.role == "" {
		return
	}
	noun, ok := ruleNegatedNoun(toks, at)
	if !ok {
		return
	}
	facts, err := r.known.Facts(r.ctx, []string{subj}, 32)
	if err != nil {
		r.err = err
		return
	}
	found, n := ruleNegatedFact(facts, subj, vr, noun)
	if n > 1 && noun == "" {
		// "it": the thing the last messages talked about, if only one of
		// the candidates was named there.
		found, n = r.recent(facts, subj, vr)
	}
	if n == 1 {
		r.invalidate(Fact{ID: found.ID, Subject: found.Subject, Predicate: found.Predicate, Object: found.Object})
	}
}

// ruleNegatedNoun reads what a negated relation refers to at toks[at]:
// "it" (noun ""), or the noun of "that account", "the renewal", "my
// account".
func ruleNegatedNoun(toks []ruleTok, at int) (string, bool) {
	switch w := ruleWord(toks, at); w {
	case "it", "that", "this":
		e := ruleWord(toks, at+1)
		if e == "" || e == "anymore" || e == "any" || e == "now" || e == "and" || e == "but" {
			return "", true
		}
		return e, w != "it" // "that account"; "it" before a word is something else
	case "the", "my", "our":
		noun := ruleWord(toks, at+1)
		return noun, noun != "" && !inSet(ruleFunctionWords, noun)
	}
	return "", false
}

// ruleNegatedFact returns the fact of facts a negated relation of subj
// names (noun "" for "it"), and how many fit.
func ruleNegatedFact(facts []Fact, subj string, vr ruleVerbRel, noun string) (*Fact, int) {
	var found *Fact
	n := 0
	for k := range facts {
		f := &facts[k]
		ok := false
		switch {
		case strings.EqualFold(f.Subject, subj) && f.Predicate == vr.pred:
			ok = noun == "" || strings.Contains(graph.Fold(f.Object), noun)
		case strings.EqualFold(f.Object, subj) && (f.Predicate == vr.role || strings.HasSuffix(f.Predicate, "_"+vr.role)):
			ok = noun == "" || strings.Contains(f.Predicate, noun)
		}
		if ok {
			found = f
			n++
		}
	}
	return found, n
}

// recent returns the one fact among the subj-vr candidates of facts whose
// thing ("Acme" of (Dana, owns, Acme), "renewal" of (alice,
// renewal_owner, Dana)) the two messages before this one name, and how
// many do.
func (r *ruleRun) recent(facts []Fact, subj string, vr ruleVerbRel) (*Fact, int) {
	var prev strings.Builder
	for k := len(r.in.Previous) - 1; k >= 0 && k >= len(r.in.Previous)-2; k-- {
		c := r.in.Previous[k].Content
		if len(c) > 4096 {
			c = c[:4096]
		}
		prev.WriteString(strings.ToLower(c))
		prev.WriteByte(' ')
	}
	text := " " + prev.String()
	var found *Fact
	n := 0
	for k := range facts {
		f := &facts[k]
		var thing string
		switch {
		case strings.EqualFold(f.Subject, subj) && f.Predicate == vr.pred:
			thing = strings.ToLower(f.Object)
		case strings.EqualFold(f.Object, subj) && strings.HasSuffix(f.Predicate, "_"+vr.role):
			thing = strings.ReplaceAll(strings.TrimSuffix(f.Predicate, "_"+vr.role), "_", " ")
		default:
			continue
		}
		if thing != "" && ruleContainsWord(text, thing) {
			found = f
			n++
		}
	}
	return found, n
}

// ruleContainsWord reports whether text holds w as whole words.
func ruleContainsWord(text, w string) bool {
	for i := 0; ; {
		k := strings.Index(text[i:], w)
		if k < 0 {
			return false
		}
		k += i
		before, after := k == 0 || !ruleAlnumAt(text, k-1), k+len(w) >= len(text) || !ruleAlnumAt(text, k+len(w))
		if before && after {
			return true
		}
		i = k + 1
	}
}

// hasNamed handles "a dog named Max" after "I have".
func (r *ruleRun) hasNamed(toks []ruleTok, subj, subjType string, at int) {
	if w := ruleWord(toks, at); w != "a" && w != "an" {
		return
	}
	pe, ok := rulePhrase(toks, at+1)
	if !ok || pe-at > 3 {
		return
	}
	nw := ruleWord(toks, pe)
	if nw != "named" && nw != "called" {
		return
	}
	pred, head, plural, ok := rulePred(toks[at+1 : pe])
	if !ok || plural {
		return
	}
	end, ok := ruleNameSpan(toks, pe+1, 3)
	if !ok || (end < len(toks) && toks[end].l == "'s") {
		return
	}
	if !inSet(rulePersonRoles, head) {
		pred = "has_" + pred
	}
	r.fact(subj, pred, r.canon(ruleJoin(toks[pe+1:end])), subjType, ruleSlotType(head), 0.9, false)
}

// rulePrefVerbs map a preference verb to its third person.
var rulePrefVerbs = map[string]string{
	"prefer": "prefers", "love": "loves", "like": "likes", "enjoy": "enjoys", "adore": "adores",
	"hate": "hates", "dislike": "dislikes", "detest": "detests", "loathe": "loathes",
}

// rulePrefBlock are first words of an object that make a preference about
// the conversation rather than the speaker ("I love that", "I like your
// idea").
var rulePrefBlock = ruleWords(`it that this these those them you him her how what when where your yours
everything everyone anything something the_idea being`)

// ruleToBlock are verbs after "I hate to" / "I love to" that speak
// about the conversation, not a preference.
var ruleToBlock = ruleWords("say admit tell ask bother interrupt break hear see know")

// ruleHabits are adverbs that make "I <adverb> <verb>" a standing habit.
var ruleHabits = ruleWords("always never usually rarely seldom generally")

// preferences finds preferences, habits and standing instructions.
func (r *ruleRun) preferences(toks []ruleTok) {
	if r.speaker == "" {
		return
	}
	for i := 0; i < len(toks); i++ {
		switch ruleWord(toks, i) {
		case "i":
			r.preference(toks, i)
		case "my":
			r.favorite(toks, i)
		case "is":
			r.favoriteAfter(toks, i)
		case "please", "always", "never":
			if r.user && (i == 0 || toks[i-1].k == rtPunct) {
				r.instruction(toks, i)
			}
		}
	}
}

// preference handles "I prefer / love / don't like / always / never ...".
func (r *ruleRun) preference(toks []ruleTok, i int) {
	if ruleHasNeg(toks[:i]) {
		return
	}
	adv, habit, j := rulePrefAdverbs(toks, i+1)
	negated := false
	if ruleWord(toks, j) == "do" && ruleWord(toks, j+1) == "not" {
		negated, j = true, j+2
	}
	v := ruleWord(toks, j)
	verb, j, importance, ok := rulePrefVerb(toks, j, habit, negated)
	if !ok {
		return
	}
	rest, end := ruleRest(toks, j+1)
	if !rulePrefObject(rest, v, negated) || end-j > 20 {
		return
	}
	var b strings.Builder
	b.WriteString(r.speaker)
	for _, a := range adv {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	b.WriteByte(' ')
	b.WriteString(verb)
	r.say(&b, rest)
	r.memory(KindPreference, b.String(), importance)
}

// rulePrefAdverbs reads up to 3 adverbs at toks[j] ("I really enjoy",
// "I never drink"): them, the last habit among them, and where the verb
// starts.
func rulePrefAdverbs(toks []ruleTok, j int) (adv []string, habit string, next int) {
	for j < len(toks) && toks[j].k == rtWord && inSet(ruleAdverbs, toks[j].l) && len(adv) < 3 {
		if inSet(ruleHabits, toks[j].l) {
			habit = toks[j].l
		}
		adv = append(adv, toks[j].l)
		j++
	}
	return adv, habit, j
}

// rulePrefVerb reads the verb of a preference at toks[j]: its words in
// the third person, the index of its last word, and the memory's
// importance.
func rulePrefVerb(toks []ruleTok, j int, habit string, negated bool) (verb string, last int, importance float64, ok bool) {
	v := ruleWord(toks, j)
	switch {
	case rulePrefVerbs[v] != "" && !(habit != "" && !negated):
		importance = 0.5
		if v == "prefer" {
			importance = 0.6
		}
		if negated {
			return "does not " + v, j, importance, true
		}
		return rulePrefVerbs[v], j, importance, true
	case v == "can" && ruleWord(toks, j+1) == "not" && ruleWord(toks, j+2) == "stand" && !negated:
		return "cannot stand", j + 2, 0.5, true
	case habit != "" && !negated && ruleBaseVerb(v):
		return ruleThird(v), j, 0.6, true
	}
	return "", j, 0, false
}

// rulePrefObject reports whether rest, the object of the preference verb
// v, says something about the speaker rather than the conversation.
func rulePrefObject(rest []ruleTok, v string, negated bool) bool {
	if len(rest) == 0 || inSet(rulePrefBlock, rest[0].l) {
		return false
	}
	if (v == "love" || v == "like") && !negated && (rest[0].l == "the" || rest[0].l == "all") {
		// "I love the colors": a reaction to something shown, more
		// often than a standing preference.
		return false
	}
	// "I hate to say it".
	return rest[0].l != "to" || (len(rest) >= 2 && !inSet(ruleToBlock, rest[1].l))
}

// instruction handles "please don't ...", "please always ...", "never
// ..." at the start of a clause.
func (r *ruleRun) instruction(toks []ruleTok, i int) {
	j := i
	if toks[j].l == "please" {
		j++
	}
	var ask string
	switch {
	case ruleWord(toks, j) == "do" && ruleWord(toks, j+1) == "not" && ruleWord(toks, j+2) == "ever":
		ask, j = "asks never to", j+3
	case ruleWord(toks, j) == "do" && ruleWord(toks, j+1) == "not" && toks[i].l == "please":
		ask, j = "asks not to", j+2
	case ruleWord(toks, j) == "never":
		ask, j = "asks never to", j+1
	case ruleWord(toks, j) == "always":
		ask, j = "asks to always", j+1
	default:
		return
	}
	v := ruleWord(toks, j)
	if !ruleBaseVerb(v) || inSet(ruleOneOff, v) {
		return
	}
	rest, end := ruleRest(toks, j)
	if end-j > 20 {
		return
	}
	var b strings.Builder
	b.WriteString(r.speaker)
	b.WriteByte(' ')
	b.WriteString(ask)
	r.say(&b, rest)
	r.memory(KindPreference, b.String(), 0.7)
}

// requests handles a request beside a refusal in one sentence, in either
// order: "Please email me, no phone calls." The request alone is one-off
// ("please send me the report"); with the refusal it is a standing
// instruction.
func (r *ruleRun) requests(clauses []ruleClause) {
	if !r.user || r.speaker == "" || len(clauses) < 2 {
		return
	}
	var ask, refuse []ruleTok
	for _, c := range clauses {
		switch t := c.toks; {
		case ruleWord(t, 0) == "please" && ruleBaseVerb(ruleWord(t, 1)) && !inSet(ruleOneOff, ruleWord(t, 1)) && ruleWord(t, 1) != "do":
			ask = t[1:]
		case ruleWord(t, 0) == "no" && len(t) > 1 && t[1].k == rtWord && !inSet(ruleNoInterjections, t[1].l):
			refuse = t
		}
	}
	if ask == nil || refuse == nil || len(ask)+len(refuse) > 20 {
		return
	}
	var b strings.Builder
	b.WriteString(r.speaker)
	b.WriteString(" asks to")
	r.say(&b, ask)
	b.WriteByte(',')
	no := append([]ruleTok{{s: "no", l: "no", k: rtWord, sp: true}}, refuse[1:]...)
	r.say(&b, no)
	r.memory(KindPreference, b.String(), 0.7)
}

// ruleOneOff are verbs of requests that are not standing instructions
// ("please don't forget the file").
var ruleOneOff = ruleWords("forget worry hesitate mind panic bother stop be")

// favorite handles "my favorite X is Y".
func (r *ruleRun) favorite(toks []ruleTok, i int) {
	f := ruleWord(toks, i+1)
	if f != "favorite" && f != "favourite" && f != "fav" {
		return
	}
	pe, ok := rulePhrase(toks, i+2)
	if !ok || (ruleWord(toks, pe) != "is" && ruleWord(toks, pe) != "are") {
		return
	}
	rest, end := ruleRest(toks, pe+1)
	if len(rest) == 0 || end-pe > 12 || inSet(rulePrefBlock, rest[0].l) || inSet(ruleNeg, rest[0].l) {
		return
	}
	b := r.favoriteOf(toks[i+2 : pe])
	b.WriteByte(' ')
	b.WriteString(toks[pe].l)
	r.say(b, rest)
	r.memory(KindPreference, b.String(), 0.5)
}

// favoriteAfter handles "Y is my favorite X" with toks[i] == "is".
func (r *ruleRun) favoriteAfter(toks []ruleTok, i int) {
	if ruleWord(toks, i+1) != "my" {
		return
	}
	f := ruleWord(toks, i+2)
	if f != "favorite" && f != "favourite" && f != "fav" {
		return
	}
	pe, ok := rulePhrase(toks, i+3)
	if !ok || !ruleEndsClause(toks, pe) || i > 6 || i == 0 {
		return
	}
	if inSet(rulePrefBlock, toks[0].l) || inSet(ruleCommonStart, toks[0].l) || toks[0].k == rtPunct {
		return
	}
	for k := 0; k < i; k++ {
		if toks[k].k == rtPunct || inSet(ruleNeg, toks[k].l) {
			return
		}
	}
	b := r.favoriteOf(toks[i+3 : pe])
	b.WriteString(" is")
	r.say(b, toks[:i])
	r.memory(KindPreference, b.String(), 0.5)
}

// favoriteOf starts the text of a favorite: "alice's favorite" and what
// of, lower case.
func (r *ruleRun) favoriteOf(what []ruleTok) *strings.Builder {
	b := &strings.Builder{}
	b.WriteString(r.speaker)
	b.WriteString("'s favorite")
	for _, t := range what {
		b.WriteByte(' ')
		b.WriteString(t.l)
	}
	return b
}

// ruleRest returns the tokens from i to the end of the clause.
func ruleRest(toks []ruleTok, i int) ([]ruleTok, int) {
	j := i
	for j < len(toks) {
		t := toks[j]
		if t.k == rtPunct && t.s != "'" && t.s != "-" && t.s != "&" && t.s != "/" && t.s != "%" && t.s != "$" && t.s != "#" && t.s != "+" {
			break
		}
		if t.k == rtWord && j > i && inSet(ruleRestStop, t.l) {
			break
		}
		j++
	}
	if i > len(toks) {
		return nil, i
	}
	return toks[i:j], j
}

var ruleRestStop = ruleWords("but because although though since")

// ruleBaseVerb reports whether w may be a verb's base form.
func ruleBaseVerb(w string) bool {
	if w == "" || len(w) > 20 {
		return false
	}
	switch w {
	case "do", "have", "go", "get", "make", "take", "use":
		return true
	}
	return !inSet(ruleFunctionWords, w) && !inSet(ruleAdverbs, w) && !inSet(ruleIrregularPast, w) &&
		!strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "ing") &&
		(!strings.HasSuffix(w, "ly") || inSet(ruleLyVerbs, w)) &&
		!inSet(ruleNotVerbs, w)
}

var ruleLyVerbs = ruleWords("reply apply rely supply fly multiply comply imply ally")

var ruleNotVerbs = ruleWords("able sure happy glad late early right wrong ready here there again been gone done seen gotten")

// ruleThird conjugates a base-form verb in the third person singular.
func ruleThird(v string) string {
	switch v {
	case "have":
		return "has"
	case "do", "go":
		return v + "es"
	case "be":
		return "is"
	}
	switch {
	case strings.HasSuffix(v, "s"), strings.HasSuffix(v, "x"), strings.HasSuffix(v, "z"),
		strings.HasSuffix(v, "ch"), strings.HasSuffix(v, "sh"):
		return v + "es"
	case len(v) > 1 && strings.HasSuffix(v, "y") && !strings.ContainsRune("aeiou", rune(v[len(v)-2])):
		return v[:len(v)-1] + "ies"
	}
	return v + "s"
}

// say writes toks after a space, with the first person put in the third:
// "I" and "me" become the speaker, "my" the speaker's, "we" the speaker
// and others.
func (r *ruleRun) say(b *strings.Builder, toks []ruleTok) {
	out := make([]ruleTok, 0, len(toks))
	subject := false
	for _, t := range toks {
		if t.k == rtWord {
			sub := ""
			switch t.l {
			case "i", "me", "myself":
				sub = r.speaker
			case "my", "mine":
				sub = r.speaker + "'s"
			case "we", "us", "ourselves":
				sub = r.speaker + " and others"
			case "our", "ours":
				sub = r.speaker + "'s"
			}
			if sub != "" {
				out = append(out, ruleTok{s: sub, l: sub, k: rtWord, sp: true})
				subject = t.l == "i"
				continue
			}
			if subject {
				switch t.l {
				case "am":
					t.s = "is"
				case "have":
					t.s = "has"
				case "do":
					t.s = "does"
				}
			}
		}
		subject = false
		out = append(out, t)
	}
	if len(out) > 0 {
		out[0].sp = true
	}
	ruleRender(b, out)
}

// ruleIrregularPast are irregular past-tense verbs.
var ruleIrregularPast = ruleWords(`went saw met got took made ran won bought brought built began came did drew
drove ate fell felt fought found flew forgot gave grew had heard held kept knew led left lent lost meant
paid put read rode rang rose said sang sat sold sent set shook shot showed shut slept spent spoke stood
stole swam swung taught told thought threw understood woke wore wrote became caught chose dug fed hung hid
hit hurt laid let lit quit rang sank shone sought split spread sprang stuck stung struck swore swept tore
wept wound`)

// ruleNotEvents are past-tense verbs of thought or state, not events.
var ruleNotEvents = ruleWords(`thought felt knew meant wanted needed liked loved hated hoped wondered guessed
realized realised seemed used supposed did had said told heard understood believed remembered forgot
preferred enjoyed appreciated missed expected imagined assumed figured noticed decided wished`)

// ruleEventVerbs are past-tense verbs that make an event worth keeping
// even without a time: "I joined a gym".
var ruleEventVerbs = ruleWords(`went visited started began finished completed bought adopted moved joined
attended graduated married signed traveled travelled booked won ran hiked painted wrote published launched
built took met learned learnt played volunteered donated organized organised hosted celebrated quit retired
applied received baked cooked climbed camped swam flew drove performed competed lost opened created designed
planted fixed repaired sold rented upgraded switched renewed cancelled canceled ordered paid shipped returned
got gave made taught studied passed failed entered left found saw watched read visited tried hired fired
recorded released launched raised saved donated`)

// episode turns a first-person past-tense sentence into an event memory:
// the first clause whose subject is "I" or "we" with a past-tense verb.
func (r *ruleRun) episode(s *ruleSentence) {
	if r.speaker == "" {
		return
	}
	toks := s.toks
	var when ruleWhen
	looked, dated := false, false
	for si := 0; si < len(toks); si++ {
		if w := ruleWord(toks, si); w != "i" && w != "we" {
			continue
		}
		if !looked {
			var future bool
			when, future, dated = ruleFindWhen(s, r.in.Message.Time)
			if future {
				return
			}
			looked = true
		}
		// The subject must start a clause: "Yesterday I went", "so I
		// went", not the relative clause of "the book I read".
		if si > 0 && toks[si-1].k != rtPunct && !inSet(ruleEpisodeLead, toks[si-1].l) && !(dated && when.end == si) {
			continue
		}
		if vi, perfect, ok := ruleEpisodeVerb(toks, si); ok {
			r.episodeAt(toks, ruleEpisodeSpan{si: si, vi: vi, perfect: perfect}, when, dated)
			return
		}
	}
}

// ruleEpisodeSpan is the clause of an event: its subject at si, its verb
// at vi (after "have" when perfect), its end.
type ruleEpisodeSpan struct {
	si, vi, end int
	perfect     bool
}

// ruleEpisodeVerb reads the past-tense verb after the subject at toks[si]:
// its index and whether it follows "have" or "had".
func ruleEpisodeVerb(toks []ruleTok, si int) (vi int, perfect, ok bool) {
	vi = ruleSkipAdverbs(toks, si+1)
	if v := ruleWord(toks, vi); v == "have" || v == "had" {
		vi, perfect = ruleSkipAdverbs(toks, vi+1), true
	}
	v := ruleWord(toks, vi)
	past := inSet(ruleIrregularPast, v) || v == "was" || v == "were" || v == "been" ||
		(strings.HasSuffix(v, "ed") && len(v) > 4 && !inSet(ruleNotPastEd, v))
	if !past || inSet(ruleNotEvents, v) || (perfect && v == "been" && ruleWord(toks, vi+1) != "to") {
		return 0, false, false
	}
	return vi, perfect, true
}

// ruleSkipAdverbs returns the index of the first word at or after i that
// is not an adverb.
func ruleSkipAdverbs(toks []ruleTok, i int) int {
	for i < len(toks) && toks[i].k == rtWord && inSet(ruleAdverbs, toks[i].l) {
		i++
	}
	return i
}

// ruleEpisodeEnd returns the end of an event's clause whose verb is at
// toks[vi]: a mark that ends a clause, or "but", "because", ...
func ruleEpisodeEnd(toks []ruleTok, vi int) int {
	end := vi + 1
	for end < len(toks) && !(toks[end].k == rtPunct && strings.Contains(";:()—–", toks[end].s)) && !(toks[end].k == rtWord && inSet(ruleRestStop, toks[end].l)) {
		end++
	}
	return end
}

// ruleHasNeg reports whether toks hold a negation.
func ruleHasNeg(toks []ruleTok) bool {
	for _, t := range toks {
		if t.k == rtWord && inSet(ruleNeg, t.l) {
			return true
		}
	}
	return false
}

// episodeAt makes the event memory of the clause at sp, if it says
// enough.
func (r *ruleRun) episodeAt(toks []ruleTok, sp ruleEpisodeSpan, when ruleWhen, dated bool) {
	sp.end = ruleEpisodeEnd(toks, sp.vi)
	if ruleHasNeg(toks[sp.si:sp.end]) || sp.end-sp.vi < 2 || sp.end-sp.si > 40 {
		return
	}
	v := toks[sp.vi].l
	if v == "was" || v == "were" {
		// "I was at the concert last night": an event only with a time
		// and a place.
		if p := ruleWord(toks, sp.vi+1); !dated || (p != "at" && p != "in" && p != "on" && p != "with") {
			return
		}
	}
	clause := ruleEpisodeClause(toks, sp, when, dated)
	if len(clause) < 3 || inSet(rulePreps, clause[len(clause)-1].l) {
		return // "the parade I went to ...": the object is elsewhere
	}
	if !dated && ruleEpisodeVague(toks, sp) {
		return // "I painted it": nothing to remember without the context
	}
	var b strings.Builder
	r.say(&b, clause)
	text := strings.TrimSpace(b.String())
	switch {
	case dated && when.resolved != "":
		r.memory(KindEpisode, text+" ("+when.resolved+")", 0.5)
	case dated:
		r.memory(KindEpisode, text+" ("+when.phrase+")", 0.5)
	case inSet(ruleEventVerbs, v) && !sp.perfect:
		if t := r.in.Message.Time; !t.IsZero() {
			text += " (mentioned on " + t.Format(ruleDateFormat) + ")"
		}
		r.memory(KindEpisode, text, 0.4)
	}
}

// ruleEpisodeClause returns the words of an event's clause without its
// time expression and what that leaves dangling ("about", a mark).
func ruleEpisodeClause(toks []ruleTok, sp ruleEpisodeSpan, when ruleWhen, dated bool) []ruleTok {
	clause := make([]ruleTok, 0, sp.end-sp.si)
	for k := sp.si; k < sp.end; k++ {
		if dated && k >= when.start && k < when.end {
			continue
		}
		clause = append(clause, toks[k])
	}
	for len(clause) > 0 && (clause[len(clause)-1].k == rtPunct || inSet(ruleApprox, clause[len(clause)-1].l)) {
		clause = clause[:len(clause)-1]
	}
	return clause
}

// ruleEpisodeVague reports whether an undated event's clause is too long
// or its object a bare pronoun ("I painted it").
func ruleEpisodeVague(toks []ruleTok, sp ruleEpisodeSpan) bool {
	if sp.end-sp.si > 25 {
		return true
	}
	if !inSet(rulePronouns, ruleWord(toks, sp.vi+1)) {
		return false
	}
	next := ruleWord(toks, sp.vi+2)
	return ruleEndsClause(toks, sp.vi+2) || inSet(rulePreps, next) || inSet(ruleRestStop, next) || next == "after"
}

// ruleEpisodeLead may come before the subject of an event.
var ruleEpisodeLead = ruleWords(`and but so then also yeah yes oh well actually honestly recently finally
yesterday today tonight earlier lately`)

// ruleApprox are words left dangling by removing a time expression
// ("about two years ago").
var ruleApprox = ruleWords("about around roughly almost nearly over like approximately some")

// rulePreps are prepositions a clause cannot end with.
var rulePreps = ruleWords("to at in on with for from of about into by")

// ruleNotPastEd are words ending in "ed" that are not past tenses.
var ruleNotPastEd = ruleWords("need needed indeed embed exceed proceed succeed speed breed bleed freed shred")
