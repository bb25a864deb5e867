package index

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// Default BM25 parameters: Lucene's, and the middle of the ranges Robertson
// and Zaragoza report as robust ("The Probabilistic Relevance Framework:
// BM25 and Beyond", 2009: k1 in [1.2, 2], b = 0.75).
const (
	defaultK1 = 1.2
	defaultB  = 0.75
)

// deadDoc marks a deleted document in BM25's lens: searches skip it, and
// compaction drops it. Lengths saturate one below.
const deadDoc = math.MaxUint32

// longQuery is the number of query terms past which a search finds
// repeated terms through a map instead of a scan.
const longQuery = 32

// BM25Options tunes the ranking function of a [BM25] index. A nil
// *BM25Options means defaults.
type BM25Options struct {
	// K1 sets how quickly repeats of a term stop adding to a document's
	// score: a term's weight approaches (K1+1)·idf as its frequency grows.
	// Zero means 1.2.
	K1 float64
	// B sets how much a document's length discounts its term frequencies,
	// from no discount (near 0) to full (1). Zero means 0.75; a B of
	// exactly 0 cannot be asked for, a tiny one such as 1e-9 can.
	B float64
}

// validate reports every bad field at once.
func (o BM25Options) validate() error {
	var errs []error
	if math.IsNaN(o.K1) || math.IsInf(o.K1, 0) || o.K1 < 0 {
		errs = append(errs, fmt.Errorf("K1 %v must be finite and not negative", o.K1))
	}
	if math.IsNaN(o.B) || o.B < 0 || o.B > 1 {
		errs = append(errs, fmt.Errorf("B %v not in [0, 1]", o.B))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// BM25 is a lexical index: it ranks documents by Okapi BM25 over the terms
// [Analyze] finds in their text. It is the index that finds "account 3942"
// when embeddings miss the number.
//
// Each document gets a dense index (its slot); a dictionary maps each term
// to a term id, and each term id has a postings list of (slot, term
// frequency) pairs, in slot order. A search adds the weights of the query
// terms' postings into an accumulator per slot and keeps the best k with a
// heap, so its cost is the length of the query terms' postings lists, not
// the size of the index.
//
// Delete leaves the slot's postings in place and marks the slot dead, but
// updates the statistics at once (document count, total length, and each of
// its terms' document frequency, from a forward list of the slot's term
// ids): scores are exactly those of an index built from the live documents
// alone. When dead slots outnumber live ones, the index is rebuilt without
// them, so memory stays within about twice that of the live documents and
// Delete is amortised O(terms per document).
//
// Scores follow Lucene's BM25: for each query term t in document d,
//
//	idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))
//	idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// where tf is the term's frequency in d, |d| the number of terms of d, avgdl
// their mean over the N documents held (empty ones included) and df(t) the
// number of documents holding t. This idf is never negative, unlike
// Robertson's original, so a term in most documents still counts a little.
// A term repeated in the query counts once per occurrence, as in Lucene,
// where each occurrence is a clause of the query.
//
// BM25 is safe for concurrent use: searches share a read lock and run in
// parallel; Add, AddTerms and Delete take the write lock (Add analyzes its
// text before taking it).
type BM25 struct {
	k1, b float64 // immutable after NewBM25

	// scratch holds per-search buffers (*bm25Scratch), so that a search
	// allocates only the slice it returns.
	scratch sync.Pool

	mu struct {
		sync.RWMutex
		dict  map[string]uint32 // term -> term id
		terms []string          // term id -> term
		post  [][]posting       // term id -> postings, by ascending slot
		df    []uint32          // term id -> live documents holding the term

		ids    []uint64          // slot -> caller's id
		lens   []uint32          // slot -> number of terms; deadDoc once deleted
		fwdEnd []uint32          // slot -> end of its term ids in fwd; start is fwdEnd[slot-1]
		fwd    []uint32          // each slot's distinct term ids, ascending, slot after slot
		slot   map[uint64]uint32 // id -> slot, live documents only
		total  uint64            // sum of the live documents' lens
		dead   int               // deleted slots still in ids

		tids []uint64 // addTerms' buffer of term ids and fields
	}
}

// posting is one document's entry in a term's postings list.
type posting struct {
	doc uint32 // slot
	tf  uint32 // occurrences of the term in the document
}

// bm25Scratch is the per-search state BM25 reuses through its pool.
type bm25Scratch struct {
	terms   []string    // Search's analyzed query
	q       []queryTerm // distinct query terms found in the dictionary
	acc     []float64   // slot -> score so far; zero between searches
	touched []uint32    // slots with a non-zero acc
	tk      topK

	wq       []weightedQueryTerm // SearchWeighted's resolved terms
	gacc     []float64           // slot -> best score in the current group; zero between groups
	gtouched []uint32            // slots with a non-zero gacc
}

// weightedQueryTerm is one term of a weighted query found in the
// dictionary.
type weightedQueryTerm struct {
	tid   uint32
	group uint32
	w     float64
}

// queryTerm is one distinct query term and how often the query holds it.
type queryTerm struct {
	tid, n uint32
}

// NewBM25 returns an empty BM25 index. opts may be nil, and a zero field
// means its default. Negative, NaN or infinite parameters, or a B above 1,
// are a programming error: NewBM25 panics with an error wrapping
// [ErrInvalidOptions] that names every bad field.
func NewBM25(opts *BM25Options) *BM25 {
	var o BM25Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		panic(err)
	}
	if o.K1 == 0 {
		o.K1 = defaultK1
	}
	if o.B == 0 {
		o.B = defaultB
	}
	return newBM25(o.K1, o.B)
}

// newBM25 returns an empty index with valid, non-zero parameters.
func newBM25(k1, b float64) *BM25 {
	x := &BM25{k1: k1, b: b}
	x.mu.dict = make(map[string]uint32)
	x.mu.slot = make(map[uint64]uint32)
	x.scratch.New = func() any { return new(bm25Scratch) }
	return x
}

// Options returns the parameters x ranks with, defaults filled in.
func (x *BM25) Options() BM25Options { return BM25Options{K1: x.k1, B: x.b} }

// Len returns the number of documents in x, empty ones included.
func (x *BM25) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.mu.ids) - x.mu.dead
}

// Add indexes the terms [Analyze] finds in text under id, replacing the
// document of an existing id. A text with no terms is still a document: it
// counts in Len and in the average length, and matches nothing.
func (x *BM25) Add(id uint64, text string) {
	x.AddTerms(id, Analyze(text))
}

// AddTerms indexes already analyzed terms under id, replacing the document
// of an existing id. Terms are used as given (compared byte for byte, so
// they must come from the same analysis as the queries), except that empty
// terms are skipped and terms longer than 256 bytes are cut as [Analyze]
// cuts them. x keeps no reference to terms.
func (x *BM25) AddTerms(id uint64, terms []string) { x.addTerms(id, terms, nil) }

// AddFields indexes a document of two fields under id, replacing the
// document of an existing id: text, and context, whose terms count half
// (BM25F with weights 1 and ½: a term's frequency is its occurrences in
// text plus half those in context, and the document's length is summed
// the same way). Context is for words that describe the document without
// being its text, such as the question a reply answers.
func (x *BM25) AddFields(id uint64, text, context string) {
	x.addTerms(id, Analyze(text), Analyze(context))
}

// Term frequencies and document lengths are kept in half occurrences, so
// that a context term (weight ½) is one unit and a text term two.
const (
	unitsText    = 2
	unitsContext = 1
	unitsPerTerm = 2.0
)

func (x *BM25) addTerms(id uint64, terms, context []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.mu.slot[id]; ok {
		// Before the terms are looked up: deleting may compact and renumber
		// term ids.
		x.deleteLocked(id, s)
	}
	// Slots, term ids and forward offsets are uint32. Filling them takes
	// over 48 GiB, so the panic is unreachable in practice.
	if x.fullLocked(len(terms) + len(context)) {
		x.compactLocked()
		if x.fullLocked(len(terms) + len(context)) {
			panic("index: BM25 full: 2^32 documents or term occurrences")
		}
	}

	// Each entry is a term id shifted left by one, its low bit set for a
	// context occurrence: sorted, a term's occurrences are adjacent.
	tids := x.mu.tids[:0]
	for field, list := range [2][]string{terms, context} {
		for _, t := range list {
			if t = clipTerm(t); t == "" {
				continue
			}
			tid, ok := x.mu.dict[t]
			if !ok {
				tid = uint32(len(x.mu.terms))
				t = strings.Clone(t) // a term may be a substring of a large text
				x.mu.dict[t] = tid
				x.mu.terms = append(x.mu.terms, t)
				x.mu.post = append(x.mu.post, nil)
				x.mu.df = append(x.mu.df, 0)
			}
			tids = append(tids, uint64(tid)<<1|uint64(field))
		}
	}
	slices.Sort(tids)

	s := uint32(len(x.mu.ids))
	var dl uint64
	for i := 0; i < len(tids); {
		tid, j := uint32(tids[i]>>1), i
		var tf uint32
		for ; j < len(tids) && uint32(tids[j]>>1) == tid; j++ {
			if tids[j]&1 == 0 {
				tf += unitsText
			} else {
				tf += unitsContext
			}
		}
		x.mu.post[tid] = append(x.mu.post[tid], posting{doc: s, tf: tf})
		x.mu.df[tid]++
		x.mu.fwd = append(x.mu.fwd, tid)
		dl += uint64(tf)
		i = j
	}
	x.mu.tids = tids[:0]
	if cap(x.mu.tids) > 1<<16 { // one huge document should not pin its buffer
		x.mu.tids = nil
	}
	dl = min(dl, deadDoc-1)
	x.mu.ids = append(x.mu.ids, id)
	x.mu.lens = append(x.mu.lens, uint32(dl))
	x.mu.fwdEnd = append(x.mu.fwdEnd, uint32(len(x.mu.fwd)))
	x.mu.slot[id] = s
	x.mu.total += dl
}

// fullLocked reports whether a document of n terms might overflow the
// uint32 slots or forward offsets (which also bound the term ids: every
// term id was once in fwd).
func (x *BM25) fullLocked(n int) bool {
	return uint64(len(x.mu.ids)) >= deadDoc-1 ||
		uint64(len(x.mu.fwd))+uint64(n) > math.MaxUint32
}

// Delete removes the document stored under id; a missing id is a no-op.
func (x *BM25) Delete(id uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.mu.slot[id]; ok {
		x.deleteLocked(id, s)
	}
}

// deleteLocked marks slot s (holding id) dead and takes its terms out of
// the statistics, then compacts when dead slots outnumber live ones.
func (x *BM25) deleteLocked(id uint64, s uint32) {
	delete(x.mu.slot, id)
	for _, tid := range x.fwdLocked(s) {
		x.mu.df[tid]--
	}
	x.mu.total -= uint64(x.mu.lens[s])
	x.mu.lens[s] = deadDoc
	x.mu.dead++
	// A rebuild copies every live posting; waiting until half the slots are
	// dead makes that O(1) copies per deleted posting, amortised.
	if x.mu.dead >= 32 && 2*x.mu.dead > len(x.mu.ids) {
		x.compactLocked()
	}
}

// fwdLocked returns the distinct term ids of slot s.
func (x *BM25) fwdLocked(s uint32) []uint32 {
	var start uint32
	if s > 0 {
		start = x.mu.fwdEnd[s-1]
	}
	return x.mu.fwd[start:x.mu.fwdEnd[s]]
}

// compactLocked rebuilds x without its dead slots and without terms no live
// document holds, renumbering both in their current order (so postings
// stay sorted) and into right-sized storage. Go maps never shrink, hence
// new maps.
func (x *BM25) compactLocked() {
	live := len(x.mu.ids) - x.mu.dead
	newSlot := make([]uint32, len(x.mu.ids))
	ids := make([]uint64, 0, live)
	lens := make([]uint32, 0, live)
	for s, l := range x.mu.lens {
		if l != deadDoc {
			newSlot[s] = uint32(len(ids))
			ids = append(ids, x.mu.ids[s])
			lens = append(lens, l)
		}
	}

	newTid := make([]uint32, len(x.mu.terms))
	var terms []string
	var post [][]posting
	var df []uint32
	dict := make(map[string]uint32)
	for tid, t := range x.mu.terms {
		n := x.mu.df[tid]
		if n == 0 {
			continue
		}
		newTid[tid] = uint32(len(terms))
		dict[t] = uint32(len(terms))
		terms = append(terms, t)
		df = append(df, n)
		p := make([]posting, 0, n)
		for _, e := range x.mu.post[tid] {
			if x.mu.lens[e.doc] != deadDoc {
				p = append(p, posting{doc: newSlot[e.doc], tf: e.tf})
			}
		}
		post = append(post, p)
	}

	fwdEnd := make([]uint32, 0, live)
	var fwd []uint32
	for s, l := range x.mu.lens {
		if l == deadDoc {
			continue
		}
		for _, tid := range x.fwdLocked(uint32(s)) {
			fwd = append(fwd, newTid[tid])
		}
		fwdEnd = append(fwdEnd, uint32(len(fwd)))
	}

	slot := make(map[uint64]uint32, live)
	for s, id := range ids {
		slot[id] = uint32(s)
	}
	x.mu.dict, x.mu.terms, x.mu.post, x.mu.df = dict, terms, post, df
	x.mu.ids, x.mu.lens, x.mu.fwdEnd, x.mu.fwd = ids, lens, fwdEnd, slices.Clip(fwd)
	x.mu.slot, x.mu.dead = slot, 0
}

// Search returns the k documents that best match the terms [Analyze] finds
// in query, best first: BM25 score descending (Result.Score; comparable only
// within one query), ties by smaller ID. Only documents holding at least
// one query term are returned, so there may be fewer than k; a query with
// no index terms, all stop words say, returns nil, nil. A k <= 0 returns
// nil, nil, as [Flat.Search] does. opts may be nil; its Ef is ignored, and
// its Filter is applied to each document that would enter the results.
//
// The Filter runs while x's read lock is held: it must not call methods of
// x, or it may deadlock with a waiting writer. The returned slice is new and
// belongs to the caller. The error is always nil today; it is there for
// options that can be invalid.
func (x *BM25) Search(query string, k int, opts *SearchOptions) ([]Result, error) {
	if k <= 0 {
		return nil, nil
	}
	sc := x.scratch.Get().(*bm25Scratch)
	sc.terms = AppendTerms(sc.terms[:0], query)
	res := x.search(sc, sc.terms, k, opts)
	clear(sc.terms) // do not pin the query's text
	x.scratch.Put(sc)
	return res, nil
}

// SearchTerms is [BM25.Search] for already analyzed query terms, which are
// compared with the indexed terms byte for byte (after the cut of
// [BM25.AddTerms]). Results, errors and the Filter's rules are those of
// Search. x keeps no reference to terms.
func (x *BM25) SearchTerms(terms []string, k int, opts *SearchOptions) ([]Result, error) {
	if k <= 0 {
		return nil, nil
	}
	sc := x.scratch.Get().(*bm25Scratch)
	res := x.search(sc, terms, k, opts)
	x.scratch.Put(sc)
	return res, nil
}

// search ranks the documents for terms with sc's buffers. It leaves sc's
// accumulator zeroed; if the filter panics it does not, and the caller
// does not return sc to the pool.
func (x *BM25) search(sc *bm25Scratch, terms []string, k int, opts *SearchOptions) []Result {
	var filter Filter
	if opts != nil {
		filter = opts.Filter
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.mu.ids) - x.mu.dead
	if n == 0 {
		return nil
	}

	q := sc.q[:0]
	// A repeated term is counted, not searched again: found by a scan in
	// a short query, through a map in a long one (a text given as a
	// query), so the cost grows with the query's length, not its square.
	var slot map[uint32]int
	if len(terms) > longQuery {
		slot = make(map[uint32]int, len(terms))
	}
	for _, t := range terms {
		tid, ok := x.mu.dict[clipTerm(t)]
		if !ok || x.mu.df[tid] == 0 {
			continue
		}
		i := -1
		if slot != nil {
			if j, ok := slot[tid]; ok {
				i = j
			} else {
				slot[tid] = len(q)
			}
		} else {
			i = slices.IndexFunc(q, func(e queryTerm) bool { return e.tid == tid })
		}
		if i >= 0 {
			q[i].n++
		} else {
			q = append(q, queryTerm{tid: tid, n: 1})
		}
	}
	sc.q = q
	if len(q) == 0 {
		return nil
	}

	// Per posting the score is w·tf/(tf + c1 + c2·dl), with the constant
	// parts hoisted: w = idf·(k1+1)·repeats, c1 = k1·(1−b), c2 = k1·b/avgdl.
	// avgdl > 0: some live document holds a query term.
	N := float64(n)
	avgdl := float64(x.mu.total) / N       // in units: tf and dl are too
	c1, c2 := x.k1*(1-x.b), x.k1*x.b/avgdl // dl/avgdl is the same in units
	if cap(sc.acc) < len(x.mu.ids) {
		sc.acc = make([]float64, len(x.mu.ids))
	}
	acc, lens, touched := sc.acc[:len(x.mu.ids)], x.mu.lens, sc.touched[:0]
	for _, e := range q {
		df := float64(x.mu.df[e.tid])
		w := math.Log(1+(N-df+0.5)/(df+0.5)) * (x.k1 + 1) * float64(e.n)
		for _, p := range x.mu.post[e.tid] {
			dl := lens[p.doc]
			if dl == deadDoc {
				continue
			}
			tf := float64(p.tf) / unitsPerTerm
			// Every contribution is > 0, so a zero accumulator means the
			// slot is not yet touched.
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += w * tf / (tf + c1 + c2*float64(dl))
		}
	}
	sc.touched = touched
	return x.collectLocked(sc, k, filter)
}

// collectLocked returns the best k of the slots sc.touched lists by their
// scores in sc.acc, filtered, zeroing the accumulator as it goes.
func (x *BM25) collectLocked(sc *bm25Scratch, k int, filter Filter) []Result {
	acc, touched := sc.acc, sc.touched
	tk := &sc.tk
	tk.reset(min(k, len(touched)))
	thr, full := tk.worst()
	for _, s := range touched {
		score := float32(acc[s])
		acc[s] = 0
		if full && score < thr {
			continue
		}
		id := x.mu.ids[s]
		if filter != nil && !filter(id) {
			continue
		}
		tk.push(id, score)
		thr, full = tk.worst()
	}
	if tk.len() == 0 {
		return nil
	}
	return tk.appendSorted(make([]Result, 0, tk.len()))
}

// WeightedTerm is one term of a query for [BM25.SearchWeighted]: an
// analyzed term (compared with the indexed terms byte for byte, as in
// [BM25.SearchTerms]), the factor its BM25 score is multiplied by, and
// an optional group.
type WeightedTerm struct {
	// Term is the analyzed term.
	Term string
	// Weight multiplies the term's BM25 score; it must be positive and
	// finite. A query of terms of weight 1 in group 0 ranks as
	// SearchTerms does.
	Weight float64
	// Group, when not zero, joins terms that stand for one thing, such
	// as the synonyms of one query word: in each document they count
	// once, by the largest of their weighted scores (a disjunction max),
	// instead of adding up. Terms of group 0 each add their score.
	Group uint32
}

// SearchWeighted is [BM25.SearchTerms] for terms of unequal weight: a
// document's score is the sum over the terms of group 0 of Weight times
// the term's BM25 score, plus for each other group the largest such
// product among its terms. A term given twice counts twice, as in
// SearchTerms. Results and the Filter's rules are those of [BM25.Search];
// a weight that is not positive and finite returns an error wrapping
// [ErrInvalidOptions]. x keeps no reference to terms.
func (x *BM25) SearchWeighted(terms []WeightedTerm, k int, opts *SearchOptions) ([]Result, error) {
	for _, t := range terms {
		if !(t.Weight > 0) || math.IsInf(t.Weight, 0) {
			return nil, fmt.Errorf("%w: weight %v of term %q must be positive and finite", ErrInvalidOptions, t.Weight, t.Term)
		}
	}
	if k <= 0 {
		return nil, nil
	}
	var filter Filter
	if opts != nil {
		filter = opts.Filter
	}
	sc := x.scratch.Get().(*bm25Scratch)
	res := x.searchWeighted(sc, terms, k, filter)
	x.scratch.Put(sc)
	return res, nil
}

// searchWeighted ranks the documents for weighted terms with sc's
// buffers, leaving its accumulators zeroed (unless the filter panics).
func (x *BM25) searchWeighted(sc *bm25Scratch, terms []WeightedTerm, k int, filter Filter) []Result {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.mu.ids) - x.mu.dead
	if n == 0 {
		return nil
	}
	q := sc.wq[:0]
	// A term given twice is searched once: in group 0 its weights add up,
	// in a group the larger counts (the same scores as two entries). Found
	// by a scan in a short query, through a map in a long one.
	type termInGroup struct{ tid, group uint32 }
	var slot map[termInGroup]int
	if len(terms) > longQuery {
		slot = make(map[termInGroup]int, len(terms))
	}
	for _, t := range terms {
		tid, ok := x.mu.dict[clipTerm(t.Term)]
		if !ok || x.mu.df[tid] == 0 {
			continue
		}
		i := -1
		if slot != nil {
			key := termInGroup{tid, t.Group}
			if j, ok := slot[key]; ok {
				i = j
			} else {
				slot[key] = len(q)
			}
		} else {
			i = slices.IndexFunc(q, func(e weightedQueryTerm) bool { return e.tid == tid && e.group == t.Group })
		}
		switch {
		case i < 0:
			q = append(q, weightedQueryTerm{tid: tid, group: t.Group, w: t.Weight})
		case t.Group == 0:
			q[i].w += t.Weight
		default:
			q[i].w = max(q[i].w, t.Weight)
		}
	}
	sc.wq = q
	if len(q) == 0 {
		return nil
	}
	// Groups contiguous; group 0 first, each of its terms on its own.
	slices.SortStableFunc(q, func(a, b weightedQueryTerm) int { return cmp.Compare(a.group, b.group) })

	N := float64(n)
	avgdl := float64(x.mu.total) / N
	c1, c2 := x.k1*(1-x.b), x.k1*x.b/avgdl
	if cap(sc.acc) < len(x.mu.ids) {
		sc.acc = make([]float64, len(x.mu.ids))
	}
	acc, lens, touched := sc.acc[:len(x.mu.ids)], x.mu.lens, sc.touched[:0]
	for i := 0; i < len(q); {
		j := i + 1
		for q[i].group != 0 && j < len(q) && q[j].group == q[i].group {
			j++
		}
		if j == i+1 { // a term on its own adds to the accumulator directly
			e := q[i]
			df := float64(x.mu.df[e.tid])
			w := math.Log(1+(N-df+0.5)/(df+0.5)) * (x.k1 + 1) * e.w
			for _, p := range x.mu.post[e.tid] {
				dl := lens[p.doc]
				if dl == deadDoc {
					continue
				}
				tf := float64(p.tf) / unitsPerTerm
				if acc[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				acc[p.doc] += w * tf / (tf + c1 + c2*float64(dl))
			}
			i = j
			continue
		}
		if cap(sc.gacc) < len(x.mu.ids) {
			sc.gacc = make([]float64, len(x.mu.ids))
		}
		gacc, gtouched := sc.gacc[:len(x.mu.ids)], sc.gtouched[:0]
		for _, e := range q[i:j] {
			df := float64(x.mu.df[e.tid])
			w := math.Log(1+(N-df+0.5)/(df+0.5)) * (x.k1 + 1) * e.w
			for _, p := range x.mu.post[e.tid] {
				dl := lens[p.doc]
				if dl == deadDoc {
					continue
				}
				tf := float64(p.tf) / unitsPerTerm
				s := w * tf / (tf + c1 + c2*float64(dl))
				if gacc[p.doc] == 0 {
					gtouched = append(gtouched, p.doc)
				}
				gacc[p.doc] = max(gacc[p.doc], s)
			}
		}
		for _, d := range gtouched {
			if acc[d] == 0 {
				touched = append(touched, d)
			}
			acc[d] += gacc[d]
			gacc[d] = 0
		}
		sc.gtouched = gtouched
		i = j
	}
	sc.touched = touched
	return x.collectLocked(sc, k, filter)
}

// Bytes returns an estimate of the memory x holds, in bytes, in constant
// time: the dictionary (each term at 8 bytes, the average English stem,
// with its string, slice and map entry), the per-slot slices at their
// capacity, and the postings, one per distinct term of a document (the
// forward lists' length) plus a quarter for the slack of appends. The
// per-search scratch, which a garbage collection frees, is left out.
func (x *BM25) Bytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	const termBytes = 8 + 16 + 24 + mapEntryBytes // bytes, string and postings headers, map entry
	const postingBytes = 8                        // doc, tf
	return int64(len(x.mu.terms))*termBytes + int64(len(x.mu.fwd))*postingBytes*5/4 +
		int64(cap(x.mu.df))*4 + int64(cap(x.mu.ids))*8 + int64(cap(x.mu.lens))*4 +
		int64(cap(x.mu.fwdEnd))*4 + int64(cap(x.mu.fwd))*4 + int64(cap(x.mu.tids))*8 +
		int64(len(x.mu.slot))*mapEntryBytes + int64(unsafe.Sizeof(*x))
}
