package memory

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/engramdb/engram/graph"
)

// RuleExtractor is the offline default [Extractor]: hand-written English
// patterns over a word tokeniser, no model and no network, a few
// microseconds a message. It prefers missing a fact to inventing one: a
// sentence that is a question, hypothetical ("if", "would"), reported
// ("she said"), uncertain ("I think", "maybe") or quoted yields no fact,
// preference or event, and text that does not look like English yields
// nothing at all.
//
// What it finds in a user message (in an assistant message only when its
// Speaker is set, and then only what the speaker says in the first
// person; tool and system messages yield nothing):
//
//   - the speaker as an entity: "I", "me" and "my" stand for
//     ExtractInput.Speaker, and "My name is Alice", "I'm Alice" or "call
//     me Al" add an alias to the speaker's entity;
//   - relations, with the predicate in lower snake case and singular:
//     "my X is Y" and "Y is my X" (speaker, x, Y); "N's X is Y" (N, x, Y);
//     "my X, Y," and "my friend Y" (speaker, x, Y); "X owns / manages /
//     leads / heads / founded Y"; "I work at / for Y" (works_at); "I live
//     in / moved to Y" (lives_in); "I have a dog named Z" (has_dog). A
//     relation to a person keeps the relation's name ("I have a daughter
//     named Emma": daughter); one to a thing or an animal is has_<thing>;
//   - mentions worth an entity even with no relation: e-mail addresses,
//     URLs and identifiers ("account 3942", "order #A-77"), and the
//     names of the user's graph that the message names (Known.Entities);
//   - preferences and standing instructions ("I prefer", "I love", "I
//     never", "please don't", "my favorite X is Y") as [KindPreference]
//     memories in the third person ("alice prefers email over phone");
//   - events: a first-person past-tense sentence with a time expression
//     ("last Saturday I went to ...") as a [KindEpisode] memory with the
//     date resolved against the message's time ("alice went to ... (on
//     Saturday 6 May 2023)"), and a past-tense sentence with an event verb
//     (went, visited, joined, bought, ...) and no time as an episode noted
//     with the message's date;
//   - corrections: predicates that hold one value at a time are listed in
//     Extraction.SingleValued, so a new value closes the old one; they
//     are works_at, lives_in and the x of "my x is Y" when x is singular
//     and not a relation people usually have several of (friend,
//     colleague, child, sibling, cousin, hobby, pet, ...: see
//     rulePluralValued). An explicit negation ("I no longer work at
//     Acme", "my manager is not Dana", "Dana no longer owns it") becomes
//     an Extraction.Invalidate; "it" or "the renewal" is resolved through
//     Known.Facts only when exactly one fact fits, or for "it" when the
//     two previous messages name the thing of exactly one of them.
//
// Names already in the user's graph (ExtractInput.Known) are linked to
// their canonical names ("Dana" → "Dana Scully" when Dana is an alias);
// other names must be capitalised, so "i work at google" yields nothing.
// Entity types are set only when the pattern makes them clear: "person"
// for the speaker of a user message and for the value of a relation to
// a person (manager, sister, friend, ...), "animal" for pets, "place"
// after lives_in, "organization" after works_at, and "email", "url" and
// "identifier" for those mentions.
//
// A sentence is split into clauses before the patterns run (at ";",
// "but", and at "and" or a comma that a new subject, a request or a
// refusal follows), so "I work at Globex and I live in Berlin" and "I
// live in Boston and work at Acme" yield both relations, and "Please
// email me, no phone calls." is a standing instruction.
//
// Limits: English only; lists are taken only
// after a plural relation ("my kids are Tom and Jerry"); "we" and "our"
// make no facts (only events, as "alice and others"); pronouns other
// than "it" / "the X" in corrections are not resolved, and Previous is
// read only for that "it". Only the first 16 KiB of a message are read. A RuleExtractor has no state: the zero value is ready to
// use and safe for concurrent use.
type RuleExtractor struct{}

var _ Extractor = RuleExtractor{}

// Extract implements [Extractor]. It returns an error only when reading
// Known fails.
func (RuleExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	out := &Extraction{}
	if in == nil {
		return out, nil
	}
	switch {
	case in.Message.Role == RoleUser:
	case in.Message.Role == RoleAssistant && in.Speaker != "":
	default:
		return out, nil
	}
	text := in.Message.Content
	if len(text) > maxRuleBytes {
		text = text[:maxRuleBytes]
		// Drop the sentence the cut went through.
		if k := strings.LastIndexAny(text, ".!?\n"); k > 0 {
			text = text[:k+1]
		} else {
			return out, nil
		}
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	sents := ruleTokenize(text)
	if !ruleLooksEnglish(sents) {
		return out, nil
	}
	r := ruleRun{
		ctx:     ctx,
		in:      in,
		known:   in.Known,
		speaker: strings.TrimSpace(in.Speaker),
		user:    in.Message.Role == RoleUser,
		out:     out,
	}
	if r.known == nil {
		r.known = ruleNoKnown{}
	}
	if len(r.speaker) > graph.MaxNameLength {
		r.speaker = ""
	}
	if r.user {
		// Names the user's graph already holds: nothing new to write,
		// but the mention is part of what the message says.
		for _, n := range r.known.Entities(text) {
			r.entity(n, "", "")
		}
	}
	for i := range sents {
		r.sentence(&sents[i])
		if r.err != nil {
			return &Extraction{}, r.err
		}
	}
	return out, nil
}

// ruleNoKnown stands in for a nil Known.
type ruleNoKnown struct{}

func (ruleNoKnown) Entities(string) []string { return nil }
func (ruleNoKnown) Facts(context.Context, []string, int) ([]Fact, error) {
	return nil, nil
}
func (ruleNoKnown) Memories(context.Context, string, int) ([]Memory, error) {
	return nil, nil
}

// ruleRun is the state of one Extract call.
type ruleRun struct {
	ctx     context.Context
	in      *ExtractInput
	known   Known
	speaker string
	user    bool
	out     *Extraction
	err     error

	entities map[string]int // folded name → index in out.Entities
	seen     map[string]bool
}

// once reports whether key is new, and marks it seen.
func (r *ruleRun) once(key string) bool {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[key] {
		return false
	}
	r.seen[key] = true
	return true
}

// entity adds (or extends) an entity.
func (r *ruleRun) entity(name, typ string, alias string) {
	if !ruleValidName(name) {
		return
	}
	if r.entities == nil {
		r.entities = map[string]int{}
	}
	key := graph.Fold(name)
	i, ok := r.entities[key]
	if !ok {
		i = len(r.out.Entities)
		r.entities[key] = i
		r.out.Entities = append(r.out.Entities, graph.Entity{Name: name})
	}
	e := &r.out.Entities[i]
	if e.Type == "" {
		e.Type = typ
	}
	if alias != "" && ruleValidName(alias) && !strings.EqualFold(alias, name) {
		for _, a := range e.Aliases {
			if strings.EqualFold(a, alias) {
				return
			}
		}
		e.Aliases = append(e.Aliases, alias)
	}
}

// speakerType is the entity type of the speaker.
func (r *ruleRun) speakerType() string {
	if r.user {
		return "person"
	}
	return ""
}

// fact adds a fact and its entities.
func (r *ruleRun) fact(subj, pred, obj, subjType, objType string, conf float64, single bool) {
	if !ruleValidName(subj) || !ruleValidName(pred) || !ruleValidName(obj) || strings.EqualFold(subj, obj) {
		return
	}
	if !r.once("f\x00" + graph.Fold(subj) + "\x00" + pred + "\x00" + graph.Fold(obj)) {
		return
	}
	r.out.Facts = append(r.out.Facts, Fact{Subject: subj, Predicate: pred, Object: obj, Confidence: conf})
	if single && r.once("s\x00"+pred) {
		r.out.SingleValued = append(r.out.SingleValued, pred)
	}
	r.entity(subj, subjType, "")
	if objType != "date" {
		r.entity(obj, objType, "")
	}
}

// invalidate adds an invalidation.
func (r *ruleRun) invalidate(f Fact) {
	if !ruleValidName(f.Subject) || !ruleValidName(f.Predicate) || (f.Object != "" && !ruleValidName(f.Object)) {
		return
	}
	if !r.once("x\x00" + f.ID + "\x00" + graph.Fold(f.Subject) + "\x00" + f.Predicate + "\x00" + graph.Fold(f.Object)) {
		return
	}
	r.out.Invalidate = append(r.out.Invalidate, f)
}

// memory adds a memory.
func (r *ruleRun) memory(kind Kind, text string, importance float64) {
	text = strings.TrimSpace(text)
	if text == "" || len(text) > 600 || !utf8.ValidString(text) {
		return
	}
	if !r.once("m\x00" + strings.ToLower(text)) {
		return
	}
	r.out.Memories = append(r.out.Memories, Memory{Kind: kind, Text: text, Importance: importance})
}

// ruleValidName reports whether s can be a name or predicate in the graph.
func ruleValidName(s string) bool {
	if strings.TrimSpace(s) == "" || len(s) > graph.MaxNameLength || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// sentence runs every pattern over one sentence: the mentions and the
// events over the whole of it, the other patterns over each of its
// clauses.
func (r *ruleRun) sentence(s *ruleSentence) {
	toks := s.toks
	if r.user {
		r.mentions(toks)
	}
	if s.question || len(toks) == 0 || inSet(ruleQuestionStart, toks[0].l) {
		return
	}
	var buf [8]ruleClause // most sentences have fewer clauses: no allocation
	clauses := ruleSplitClauses(buf[:0], toks)
	// Appositions hold in reported speech too ("she said my sister Jane
	// called"), so they run before the guard.
	for _, c := range clauses {
		r.appositions(c.toks)
	}
	if s.guarded {
		return
	}
	for i := range clauses {
		r.clause(clauses[i].toks)
		if r.err != nil {
			return
		}
	}
	r.requests(clauses)
	r.episode(s)
}

// clause runs the clause patterns over one clause.
func (r *ruleRun) clause(toks []ruleTok) {
	neg := -1
	for i, t := range toks {
		if t.k == rtWord && inSet(ruleNeg, t.l) {
			neg = i
			break
		}
	}
	r.aliases(toks, neg)
	r.copulas(toks, neg)
	r.verbs(toks, neg)
	if r.err != nil {
		return
	}
	r.preferences(toks)
}

// ruleHypothetical reports whether toks hold a word that makes a clause
// hypothetical.
func ruleHypothetical(toks []ruleTok) bool {
	for _, t := range toks {
		if t.k == rtWord && inSet(ruleHypo, t.l) {
			return true
		}
	}
	return false
}

var ruleHypo = ruleWords("if unless imagine imagined suppose supposing pretend were hypothetically")

// ruleQuestionStart are words that open a question even without "?".
var ruleQuestionStart = ruleWords(`is are am was were do does did can could would will should shall have has had
who what where when why how which whose whom`)

// ruleWord returns the lower-case word at i, or "" (a number, a mark, out of
// range).
func ruleWord(toks []ruleTok, i int) string {
	if i < 0 || i >= len(toks) || toks[i].k != rtWord {
		return ""
	}
	return toks[i].l
}

// mentions adds entities for e-mail addresses, URLs and identifiers.
func (r *ruleRun) mentions(toks []ruleTok) {
	for i, t := range toks {
		switch t.k {
		case rtEmail:
			r.entity(t.s, "email", "")
		case rtURL:
			if len(t.s) <= 200 {
				r.entity(t.s, "url", "")
			}
		case rtNum, rtIdent:
			// "account 3942", "order #A-77", "ticket no. 12", "invoice number 7".
			j := i - 1
			if j >= 0 && (toks[j].l == "#" || toks[j].l == "." || toks[j].l == ":") {
				j--
			}
			if j >= 0 && (toks[j].l == "number" || toks[j].l == "no." || toks[j].l == "id") {
				j--
			}
			if n := ruleWord(toks, j); inSet(ruleIDNouns, n) && len(t.s) <= 40 {
				id := t.s
				if i > 0 && toks[i-1].l == "#" {
					id = "#" + id
				}
				r.entity(n+" "+id, "identifier", "")
			}
		}
	}
}

// ruleIDNouns name things that carry identifiers.
var ruleIDNouns = ruleWords(`account order ticket invoice case booking reservation flight policy contract
customer claim issue pr incident request receipt transaction shipment package parcel tracking member
membership subscription license licence serial card room confirmation reference ref bug job project
employee patient student`)

// aliases finds "my name is X", "I'm X", "call me X" and "I go by X": the
// rows of ruleAliasFrames.
func (r *ruleRun) aliases(toks []ruleTok, neg int) {
	if r.speaker == "" {
		return
	}
	for i := 0; i+2 < len(toks); i++ {
		f, ok := ruleAliasFrameAt(toks, i)
		if !ok {
			continue
		}
		at := i + len(f.words)
		if neg >= 0 && neg < at {
			return
		}
		if name, ok := ruleAliasName(toks, at, f.nameEndsClause); ok {
			r.entity(r.speaker, r.speakerType(), name)
			return
		}
	}
}

// ruleAliasFrame is a way of giving one's name: the words before it, a
// test of what comes before them, and whether the name must end the
// clause.
type ruleAliasFrame struct {
	words []string
	// before, when set, must hold of the words' position.
	before func(toks []ruleTok, i int) bool
	// nameEndsClause: "I'm Alice" only when the name ends the clause, not
	// "I'm Canadian-born" or "I'm Catholic school trained".
	nameEndsClause bool
}

// ruleAliasFrames are the ways of giving one's name. A new one is a row.
var ruleAliasFrames = []ruleAliasFrame{
	{words: []string{"my", "name", "is"}},
	{words: []string{"i", "am"}, before: ruleClauseStart, nameEndsClause: true},
	{words: []string{"call", "me"}, before: func(toks []ruleTok, i int) bool { return ruleWord(toks, i-1) != "to" }},
	{words: []string{"i", "go", "by"}},
}

// ruleAliasFrameAt returns the alias frame whose words are at toks[i].
func ruleAliasFrameAt(toks []ruleTok, i int) (*ruleAliasFrame, bool) {
	for k := range ruleAliasFrames {
		f := &ruleAliasFrames[k]
		if ruleWordsMatch(toks, i, f.words) && (f.before == nil || f.before(toks, i)) {
			return f, true
		}
	}
	return nil, false
}

// ruleWordsMatch reports whether the words at toks[i:] are words.
func ruleWordsMatch(toks []ruleTok, i int, words []string) bool {
	for k, w := range words {
		if ruleWord(toks, i+k) != w {
			return false
		}
	}
	return true
}

// ruleAliasName reads the name given at toks[at].
func ruleAliasName(toks []ruleTok, at int, endsClause bool) (string, bool) {
	end, ok := ruleNameSpan(toks, at, 3)
	if !ok || ruleNationality(toks[at].l) || (end < len(toks) && toks[end].l == "'s") {
		return "", false
	}
	if endsClause && end < len(toks) && toks[end].k != rtPunct && !inSet(ruleAfterIntro, toks[end].l) {
		return "", false
	}
	name := ruleJoin(toks[at:end])
	if strings.ToUpper(name) == name && len(name) <= 5 {
		return "", false // "call me ASAP"
	}
	return name, true
}

var ruleAfterIntro = ruleWords("and from here btw by the way too also")

// ruleClauseStart reports whether toks[i] starts a clause: the sentence's
// start, after a mark, or after a greeting.
func ruleClauseStart(toks []ruleTok, i int) bool {
	return i == 0 || toks[i-1].k == rtPunct || inSet(ruleGreetings, toks[i-1].l)
}

var ruleGreetings = ruleWords("hi hello hey hiya yes yeah yep well oh so and but ok okay")

// copulas finds "my X is Y", "Y is my X", "N's X is Y", "Y is N's X" and
// their negations.
func (r *ruleRun) copulas(toks []ruleTok, neg int) {
	for i := 0; i < len(toks); i++ {
		switch ruleWord(toks, i) {
		case "my":
			if r.speaker == "" || ruleWord(toks, i-1) == "of" {
				continue
			}
			r.myXIsY(toks, i, neg)
		case "is":
			if i == 0 {
				continue
			}
			r.yIsMyX(toks, i, neg)
		case "'s":
			r.possessive(toks, i, neg)
		}
	}
}

// rulePhrase reads the words of a relation ("renewal owner") from i up to
// a verb: at most 3 words, no function words. It returns the end.
func rulePhrase(toks []ruleTok, i int) (int, bool) {
	j := i
	for j < len(toks) && j-i < 3 {
		t := toks[j]
		if t.k != rtWord || t.l == "'s" || t.l == "named" || t.l == "called" || inSet(ruleFunctionWords, t.l) || inSet(ruleNeg, t.l) || len(t.l) > 30 ||
			(t.cap && strings.ToUpper(t.s) != t.s) {
			break
		}
		j++
	}
	return j, j > i
}

// rulePred turns the words of a relation into a predicate: lower snake
// case, the last word singular. It reports the head (last) word and
// whether the relation is one that takes several values.
func rulePred(toks []ruleTok) (pred, head string, plural, ok bool) {
	words := make([]string, 0, len(toks))
	for k, t := range toks {
		w := strings.ReplaceAll(t.l, "-", "_")
		for _, c := range w {
			if !(c >= 'a' && c <= 'z' || c == '_' || c >= '0' && c <= '9') {
				return "", "", false, false
			}
		}
		if k == 0 && len(toks) > 1 && inSet(ruleDropAdj, w) {
			continue
		}
		if inSet(ruleNotCurrent, w) {
			return "", "", false, false
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return "", "", false, false
	}
	head = words[len(words)-1]
	if s, ok := ruleSingular(head); ok {
		head, plural = s, true
	}
	if syn, ok := ruleSynonyms[head]; ok {
		head = syn
	}
	words[len(words)-1] = head
	if inSet(ruleNotRelations, head) || inSet(ruleNotRelations, words[0]) || inSet(ruleSecrets, head) || inSet(ruleSecrets, words[0]) {
		return "", "", false, false
	}
	return strings.Join(words, "_"), head, plural, true
}

// ruleSingular returns the singular of a plural noun it knows how to
// handle.
func ruleSingular(w string) (string, bool) {
	if s, ok := ruleIrregularPlurals[w]; ok {
		return s, true
	}
	if len(w) < 4 || !strings.HasSuffix(w, "s") || strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is") {
		return w, false
	}
	if strings.HasSuffix(w, "ies") {
		return w[:len(w)-3] + "y", true
	}
	return w[:len(w)-1], true
}

var ruleIrregularPlurals = map[string]string{"children": "child", "kids": "kid", "people": "person", "wives": "wife"}

var ruleSynonyms = map[string]string{"mom": "mother", "mum": "mother", "mommy": "mother", "dad": "father",
	"daddy": "father", "hubby": "husband", "coworker": "colleague", "co_worker": "colleague"}

// ruleDropAdj are leading words dropped from a relation ("my new manager").
var ruleDropAdj = ruleWords("new current present")

// ruleNotCurrent are words that make "my X" something other than a
// current relation ("my former manager", "my dream job").
var ruleNotCurrent = ruleWords(`former ex old previous late first future next last dream ideal only own whole
real biggest greatest worst best_case favorite favourite fav`)

// ruleNotRelations are heads of "my X is Y" that are not relations.
var ruleNotRelations = ruleWords(`pleasure bad fault guess point turn goal plan idea question problem concern
hope wish opinion advice answer day life heart mind bet honor honour treat apology apologies thing reason
priority focus passion story experience understanding impression feeling take vote choice pick mistake job work
role title name way style type kind sort love time place excuse aim dream intention issue worry fear
guess bad pleasure god gosh goodness word`)

// ruleSecrets are relations whose values must not be remembered.
var ruleSecrets = ruleWords(`password passcode passphrase pin ssn cvv cvc secret token key api_key
social_security_number security_code otp`)

// rulePluralValued are relation heads that people usually have several
// of: "my friend is Dana" adds a friend rather than replacing one.
var rulePluralValued = ruleWords(`friend bestie buddy pal colleague teammate roommate flatmate housemate
neighbor neighbour child kid baby son daughter sibling sister brother cousin aunt uncle niece nephew
grandchild grandson granddaughter grandparent grandmother grandfather grandma grandpa parent hobby interest
pet dog cat client customer student classmate contact report skill language stepsister stepbrother stepson
stepdaughter stepchild fan follower member partner_in_crime`)

// ruleSingleValued reports whether the relation named by a singular
// head holds one value at a time: every relation but those people have
// several of (rulePluralValued) and pets (has_dog: one may have two).
// The rule depends on the head alone, so every pattern that makes the
// relation agrees on it.
func ruleSingleValued(head string) bool {
	return !inSet(rulePluralValued, head) && !inSet(rulePets, head)
}

// rulePersonRoles are relation heads whose value is a person.
var rulePersonRoles = ruleWords(`manager boss supervisor lead leader mentor owner contact rep representative
wife husband partner spouse girlfriend boyfriend fiance fiancee mother father parent sister brother sibling
son daughter child kid baby aunt uncle cousin niece nephew grandmother grandma grandfather grandpa grandparent
grandson granddaughter grandchild friend bestie buddy pal colleague teammate roommate flatmate housemate
neighbor neighbour doctor dentist therapist lawyer accountant teacher coach landlord landlady assistant advisor
adviser tutor trainer counselor counsellor physician nurse pastor priest rabbi stepmother stepfather stepson
stepdaughter stepsister stepbrother classmate hero idol inspiration`)

// rulePets are relation heads whose value is an animal; the predicate is
// has_<pet>.
var rulePets = ruleWords(`dog cat puppy kitten pet hamster parrot horse rabbit bunny bird fish turtle snake
lizard ferret goldfish pony tortoise`)

// rulePlaceHeads and ruleOrgHeads are relation heads whose value is a
// place or an organization.
var (
	rulePlaceHeads = ruleWords("hometown city country town state neighborhood neighbourhood birthplace address")
	ruleOrgHeads   = ruleWords("company employer school university college bank team club church gym agency firm")
)

// ruleSlotType returns the entity type of the value of a relation head.
func ruleSlotType(head string) string {
	switch {
	case inSet(rulePersonRoles, head):
		return "person"
	case inSet(rulePets, head):
		return "animal"
	case inSet(rulePlaceHeads, head):
		return "place"
	case inSet(ruleOrgHeads, head):
		return "organization"
	}
	return ""
}

// ruleRelation maps a relation head to its predicate: has_<pet> for
// animals, the relation itself otherwise.
func ruleRelation(pred, head string) string {
	if inSet(rulePets, head) {
		return "has_" + pred
	}
	return pred
}

var ruleJoinPreps = ruleWords("with to and from for met saw")

// ruleEndsClause reports whether toks[i] ends a clause.
func ruleEndsClause(toks []ruleTok, i int) bool {
	return i >= len(toks) || toks[i].k == rtPunct || inSet(ruleClauseWords, toks[i].l)
}

var ruleClauseWords = ruleWords("and but so because since now too as who which though although while")

// ruleNotList reports whether toks[i] does not continue a list of names.
func ruleNotList(toks []ruleTok, i int) bool {
	if i+1 < len(toks) && (toks[i].s == "," || toks[i].l == "and" || toks[i].l == "or" || toks[i].s == "&" || toks[i].s == "/") {
		n := toks[i+1]
		return !(n.cap || n.k == rtEmail || n.k == rtIdent || n.k == rtNum)
	}
	return true
}

// ruleVal is a value read at a slot.
type ruleVal struct {
	end   int
	name  string
	typ   string // email, url, identifier, date, pronoun, or "" for a name
	known bool   // a name of the user's graph
}

// value reads the object of a relation at toks[i]: an e-mail address, a
// URL, an identifier or number, a date, a capitalised name (after an
// optional "the"), or a name the user's graph knows. initial allows a
// capitalised word at the sentence's start that is not a common word.
func (r *ruleRun) value(toks []ruleTok, i int, initial bool) (ruleVal, bool) {
	if i >= len(toks) {
		return ruleVal{}, false
	}
	t := toks[i]
	if t.k != rtWord {
		return ruleMarkValue(toks, i)
	}
	if inSet(rulePronouns, t.l) {
		return ruleVal{end: i + 1, name: t.l, typ: "pronoun"}, true
	}
	if v, ok := ruleMonthDayValue(toks, i); ok {
		return v, true
	}
	at := i
	if t.l == "the" && i+1 < len(toks) && toks[i+1].cap {
		at = i + 1
	}
	if toks[at].cap {
		return r.nameValue(toks, at, initial)
	}
	return r.knownValue(toks, i)
}

// ruleMarkValue reads a value that is not a word at toks[i]: an e-mail
// address, a URL, an identifier or number, "#" and a code.
func ruleMarkValue(toks []ruleTok, i int) (ruleVal, bool) {
	t := toks[i]
	switch t.k {
	case rtEmail:
		return ruleVal{end: i + 1, name: t.s, typ: "email"}, true
	case rtURL:
		return ruleVal{end: i + 1, name: t.s, typ: "url"}, len(t.s) <= 200
	case rtNum, rtIdent:
		if len(t.s) > 40 || (i+1 < len(toks) && toks[i+1].k != rtPunct && !inSet(ruleAfterValue, toks[i+1].l)) {
			return ruleVal{}, false // "5 years old"
		}
		return ruleVal{end: i + 1, name: t.s, typ: "identifier"}, true
	case rtPunct:
		if t.s == "#" && i+1 < len(toks) && (toks[i+1].k == rtNum || toks[i+1].k == rtIdent) {
			return ruleVal{end: i + 2, name: "#" + toks[i+1].s, typ: "identifier"}, len(toks[i+1].s) <= 40
		}
	}
	return ruleVal{}, false
}

// ruleMonthDayValue reads a date "May 3" at toks[i].
func ruleMonthDayValue(toks []ruleTok, i int) (ruleVal, bool) {
	t := toks[i]
	if m, ok := ruleMonths[t.l]; !ok || !t.cap || m == 0 || i+1 >= len(toks) {
		return ruleVal{}, false
	}
	if d, ok := ruleDayNum(toks[i+1]); ok && d > 0 {
		return ruleVal{end: i + 2, name: t.s + " " + toks[i+1].s, typ: "date"}, true
	}
	return ruleVal{}, false
}

// nameValue reads a capitalised name at toks[at] that is a whole value,
// not a modifier ("the Acme account").
func (r *ruleRun) nameValue(toks []ruleTok, at int, initial bool) (ruleVal, bool) {
	if at == 0 && !initial {
		return ruleVal{}, false
	}
	end, ok := ruleNameSpan(toks, at, 4)
	if !ok || (at == 0 && inSet(ruleCommonStart, toks[0].l)) {
		return ruleVal{}, false
	}
	if end < len(toks) && toks[end].k != rtPunct && !inSet(ruleAfterValue, toks[end].l) {
		return ruleVal{}, false // "the Acme account": a name as a modifier
	}
	name := ruleJoin(toks[at:end])
	canon, known := r.lookup(name)
	return ruleVal{end: end, name: canon, known: known}, true
}

// knownValue reads a lower-case name the graph knows at toks[i]: "I work
// at acme".
func (r *ruleRun) knownValue(toks []ruleTok, i int) (ruleVal, bool) {
	t := toks[i]
	if inSet(ruleFunctionWords, t.l) || len(t.l) < 2 || len(t.l) > maxRuleTokenBytes {
		return ruleVal{}, false
	}
	for n := 2; n >= 1; n-- {
		if i+n > len(toks) {
			continue
		}
		phrase := ruleJoin(toks[i : i+n])
		if names := r.known.Entities(phrase); len(names) == 1 && strings.EqualFold(names[0], phrase) {
			return ruleVal{end: i + n, name: names[0], known: true}, true
		}
	}
	return ruleVal{}, false
}

// values reads one value, or with list set a list "A, B and C".
func (r *ruleRun) values(toks []ruleTok, i int, list bool) []ruleVal {
	var vals []ruleVal
	for {
		v, ok := r.value(toks, i, false)
		if !ok || v.typ == "pronoun" || (v.end < len(toks) && toks[v.end].l == "'s") {
			return nil
		}
		vals = append(vals, v)
		i = v.end
		if !list && i+1 < len(toks) && toks[i].s == "," && toks[i+1].cap {
			// "Paris, France": a place and its region, not a list.
			if e, ok := ruleNameSpan(toks, i+1, 3); ok && (e == len(toks) || toks[e].k == rtPunct) {
				return vals
			}
		}
		if ruleNotList(toks, i) {
			if i < len(toks) && toks[i].k == rtWord && toks[i].cap {
				return nil
			}
			return vals
		}
		if !list {
			return nil
		}
		i++
		if i < len(toks) && toks[i].l == "and" {
			i++
		}
	}
}

// ruleAfterValue may follow a name that is a whole value: a clause word,
// a preposition or a time word, not a noun the name modifies.
var ruleAfterValue = ruleWords(`and but so because since now too as who which whose though although while at in
on with from for to by of last yesterday today tonight this next after before until when where anymore again
also any now either then or nor is was are were has had have will would can could did does do not no 's`)

var rulePronouns = ruleWords("it that this these those them him her he she they you yours mine his hers theirs one")

// canon returns the graph's name for name when the user's graph knows it
// by that name or by an alias ("Dana" → "Dana Scully"), and whether it
// does. A longer name is not mapped to a shorter one: "Dana Smith" is not
// "Dana".
func (r *ruleRun) canon(name string) string {
	c, _ := r.lookup(name)
	return c
}

func (r *ruleRun) lookup(name string) (string, bool) {
	names := r.known.Entities(name)
	if len(names) == 1 && (strings.EqualFold(names[0], name) || strings.Count(name, " ") <= strings.Count(names[0], " ")) {
		return names[0], true
	}
	return name, false
}

// ruleNameSpan reads a capitalised name of at most max words at toks[i]
// ("Dana", "Dana Scully", "Bank of America"), returning its end.
func ruleNameSpan(toks []ruleTok, i, max int) (int, bool) {
	j, words := i, 0
	for j < len(toks) && words < max {
		t := toks[j]
		if t.k == rtWord && t.cap && t.l != "i" && t.l != "'s" && len(t.s) <= maxRuleTokenBytes {
			j++
			words++
			continue
		}
		if t.k == rtWord && j > i && inSet(ruleNameJoins, t.l) && j+1 < len(toks) && toks[j+1].k == rtWord && toks[j+1].cap {
			j++
			continue
		}
		break
	}
	if words == 0 {
		return i, false
	}
	if l := toks[i].l; inSet(ruleFunctionWords, l) && strings.ToUpper(toks[i].s) != toks[i].s {
		return i, false // "The CEO", "My Mom"
	}
	if words == 1 && !ruleOneWordName(toks[i]) {
		return i, false
	}
	return j, true
}

// ruleOneWordName reports whether the capitalised word t can be a name on
// its own: not a nationality ("my boss is Canadian"), a weekday, a month,
// a word that is not a name, or a function word unless an acronym.
func ruleOneWordName(t ruleTok) bool {
	l := t.l
	if ruleNationality(l) || inSet(ruleNotNames, l) {
		return false
	}
	if _, ok := ruleWeekdays[l]; ok {
		return false
	}
	if _, ok := ruleMonths[l]; ok {
		return false
	}
	return !inSet(ruleFunctionWords, l) || (len(l) >= 2 && strings.ToUpper(t.s) == t.s)
}

var ruleNameJoins = ruleWords("of de da van von del la le")

// ruleNotNames are capitalised words that are not names.
var ruleNotNames = ruleWords(`ok okay hi hello hey thanks thank yes yeah yep no nope lol omg god gosh wow
internet christmas easter halloween thanksgiving english sorry please dear sir madam mr mrs ms dr
tv pc ai btw fyi asap mr. mrs. ms. dr. st. prof. home back done ready fine good great tired busy sick excited happy hungry new
sure glad in out on off`)

// ruleCommonStart are words that start sentences and are not names.
var ruleCommonStart = ruleWords(`yesterday today tomorrow tonight everyone everybody someone somebody anyone
anybody nobody everything something anything nothing family work life home school coffee music love health
money time nothing each every another other such both either neither mine yours ours theirs here there now
then also still just only even really actually honestly basically apparently hopefully luckily sadly
unfortunately fortunately finally recently currently usually sometimes always never often maybe perhaps
that this these those which whatever whoever please thanks sure cool great nice awesome wow well oh ah um
so but and or yes no ok okay hey hi hello dear`)

// ruleNationality reports whether w names a nationality, faith or group
// rather than a person ("I'm Canadian").
func ruleNationality(w string) bool {
	return inSet(ruleGroups, w)
}

var ruleGroups = ruleWords(`american canadian british english french german spanish italian chinese japanese
korean indian mexican brazilian russian irish scottish welsh australian dutch swedish norwegian danish
finnish polish greek turkish jewish muslim christian catholic protestant hindu buddhist sikh asian african
european latino latina latinx hispanic vietnamese thai filipino portuguese swiss austrian belgian israeli
iranian pakistani egyptian nigerian kenyan ukrainian republican democrat libertarian lgbtq lgbt trans
agnostic atheist mormon gen`)

// ruleJoin joins the surfaces of toks with spaces.
func ruleJoin(toks []ruleTok) string {
	if len(toks) == 1 {
		return toks[0].s
	}
	var b strings.Builder
	for k, t := range toks {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.s)
	}
	return b.String()
}
