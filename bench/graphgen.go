package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/engramdb/engram/graph"
)

// Shape of the graphs [PowerLawFacts] generates.
const (
	// PowerLawEntitiesPerFact is the ratio of entities to facts: a graph of
	// n facts names about n/10 entities (at least two).
	PowerLawEntitiesPerFact = 10
	// PowerLawPredicates is how many predicates the facts use, uniformly.
	PowerLawPredicates = 50
	// PowerLawExponent is the Zipf exponent s of the subject and object
	// draws: P(rank k) ∝ 1/(1+k)^s. At 1.1 over 100,000 entities the top
	// entity is in about 13% of the draws, and most entities in one or
	// two, like the hubs and long tail of real knowledge graphs.
	PowerLawExponent = 1.1
)

// PowerLawFacts returns n distinct facts over about n/10 entities named
// "entity-N" and [PowerLawPredicates] predicates named "pred-N": subjects
// and objects are drawn independently from one Zipf distribution (exponent
// [PowerLawExponent]) over the entities, so in- and out-degrees follow a
// power law and the same few hubs dominate both; predicates are uniform.
// The popularity ranks are shuffled over the names, so a name says nothing
// about its degree and hubs are spread over the key space.
//
// A draw that repeats an earlier triple is drawn again (about a quarter of
// the draws at a million facts, nearly all between hubs), so every fact is
// stored and a peer that keeps a set of triples holds the same edges.
// Facts may link an entity to itself and carry no times ([graph.Store.Load]
// sets them). The result depends only on n and seed.
func PowerLawFacts(n int, seed uint64) []graph.Fact {
	if n <= 0 {
		return nil
	}
	entities := max(n/PowerLawEntitiesPerFact, 2)
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	// rank → entity number: a shuffled identity.
	byRank := r.Perm(entities)
	names := make([]string, entities)
	for i := range names {
		names[i] = "entity-" + strconv.Itoa(i)
	}
	preds := make([]string, PowerLawPredicates)
	for i := range preds {
		preds[i] = "pred-" + strconv.Itoa(i)
	}
	z := rand.NewZipf(r, PowerLawExponent, 1, uint64(entities-1))
	type triple struct{ s, o, p int32 }
	seen := make(map[triple]struct{}, n)
	facts := make([]graph.Fact, 0, n)
	for len(facts) < n {
		t := triple{s: int32(byRank[z.Uint64()]), o: int32(byRank[z.Uint64()]), p: int32(r.IntN(len(preds)))}
		if _, dup := seen[t]; dup {
			continue
		}
		seen[t] = struct{}{}
		facts = append(facts, graph.Fact{Subject: names[t.s], Predicate: preds[t.p], Object: names[t.o]})
	}
	return facts
}

// GraphSeeds returns k entity names drawn uniformly, with replacement,
// from the distinct subjects and objects of facts: the starting points of
// a traversal benchmark. Uniform over entities (not over facts) means most
// seeds are tail entities of low degree, which is what a query naming an
// entity usually starts from. The result depends only on the facts, k and
// seed; it is nil when there are no facts or k is not positive.
func GraphSeeds(facts []graph.Fact, k int, seed uint64) []string {
	if len(facts) == 0 || k <= 0 {
		return nil
	}
	seen := make(map[string]bool, len(facts)/4)
	for i := range facts {
		seen[facts[i].Subject] = true
		seen[facts[i].Object] = true
	}
	all := make([]string, 0, len(seen))
	for name := range seen {
		all = append(all, name)
	}
	slices.Sort(all) // map order is random; the draw must not be
	r := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	out := make([]string, k)
	for i := range out {
		out[i] = all[r.IntN(len(all))]
	}
	return out
}
