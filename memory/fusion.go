package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/index"
)

// rrfK is the constant of reciprocal-rank fusion (Cormack, Clarke and
// Büttcher, SIGIR 2009): 60, their value, which damps the difference
// between a first and a tenth place.
const rrfK = 60

// fusion collects the candidates of the ranked lists. A Recall takes one
// from fusionPool and gives it back when done: its candidate slab and id
// map were 13% of the bytes a Recall allocated (27 of 204 KB in
// BenchmarkRecall/recall), and the garbage collector's marking, which
// grows with those bytes, took about a quarter of its time (issue 15).
type fusion struct {
	byID  map[candidateKey]*Candidate
	order []*Candidate
	lists map[string]int
	// weights scales each list's reciprocal ranks; a list without one
	// weighs 1.
	weights map[string]float64
	// slab holds new candidates, allocated a chunk at a time; chunks are
	// every chunk allocated, kept for the next Recall.
	slab   []Candidate
	chunks [][]Candidate
	used   int // chunks in use, the slab the last of them
}

// slabChunk is how many candidates a chunk of fusion.slab holds, and
// maxPooledChunks how many chunks a fusion keeps when given back (a
// default Recall has at most 60 candidates; one with TopK 200 up to 1,200).
const (
	slabChunk       = 32
	maxPooledChunks = 8
)

var fusionPool = sync.Pool{New: func() any {
	return &fusion{byID: make(map[candidateKey]*Candidate, 64), lists: map[string]int{}, weights: map[string]float64{}}
}}

// newFusion returns an empty fusion; release gives it back.
func newFusion() *fusion { return fusionPool.Get().(*fusion) }

// release empties f and puts it back in the pool. Nothing may use f, its
// candidates or the pointers to them afterwards: settle has copied what a
// Recollection keeps.
func (f *fusion) release() {
	for _, ch := range f.chunks[:f.used] {
		clear(ch[:cap(ch)]) // drop what the candidates point to
	}
	if len(f.chunks) > maxPooledChunks {
		clear(f.chunks[maxPooledChunks:])
		f.chunks = f.chunks[:maxPooledChunks]
	}
	f.used = 0
	f.slab = nil
	clear(f.byID)
	clear(f.order)
	f.order = f.order[:0]
	clear(f.lists)
	clear(f.weights)
	fusionPool.Put(f)
}

// candidateKey names a candidate: ids are unique within a source.
type candidateKey struct {
	src Source
	id  string
}

func (f *fusion) candidate(id string, src Source) *Candidate {
	key := candidateKey{src, id}
	c, ok := f.byID[key]
	if !ok {
		if len(f.slab) == cap(f.slab) {
			f.slab = f.nextChunk()
		}
		f.slab = append(f.slab, Candidate{ID: id, Source: src})
		c = &f.slab[len(f.slab)-1]
		f.byID[key] = c
		f.order = append(f.order, c)
	}
	return c
}

// nextChunk returns an empty chunk for the slab: the next of f.chunks
// not in use, or a new one.
func (f *fusion) nextChunk() []Candidate {
	if f.used == len(f.chunks) {
		f.chunks = append(f.chunks, make([]Candidate, 0, slabChunk))
	}
	f.used++
	return f.chunks[f.used-1][:0]
}

func (f *fusion) rankIn(c *Candidate, list string, rank int, score float64) {
	if c.setRank(list, rank, score) {
		f.lists[list]++
	}
}

// maxCandidateLists is how many ranked lists a candidate can be in:
// vector, bm25, graph or graph.other (a fact is in one of the two), and
// reply.
const maxCandidateLists = 5

// listRank is a candidate's rank and score in one ranked list.
type listRank struct {
	list  string
	rank  int
	score float64
}

// rankOf returns c's rank in a list, 0 if it is not in it.
func (c *Candidate) rankOf(list string) int {
	for _, lr := range c.lists[:c.nlists] {
		if lr.list == list {
			return lr.rank
		}
	}
	return 0
}

// setRank records c's rank and score in a list, unless c has one there
// already (or is in every list it can be); it reports whether it did.
func (c *Candidate) setRank(list string, rank int, score float64) bool {
	for _, lr := range c.lists[:c.nlists] {
		if lr.list == list {
			return false
		}
	}
	if c.nlists == len(c.lists) {
		return false
	}
	c.lists[c.nlists] = listRank{list, rank, score}
	c.nlists++
	return true
}

// sourcedHit is a search hit and the source it came from.
type sourcedHit struct {
	src Source
	hit engine.Hit
}

// addMerged adds the hits of several sources as one list, best score
// first (ties in the order given).
func (f *fusion) addMerged(list string, hits []sourcedHit) {
	slices.SortStableFunc(hits, func(a, b sourcedHit) int { return cmp.Compare(b.hit.Score, a.hit.Score) })
	for i, sh := range hits {
		c := f.candidate(sh.hit.ID, sh.src)
		if sh.hit.Text != "" && !c.hydrated {
			c.fill(sh.hit.Record)
		}
		f.rankIn(c, list, i+1, float64(sh.hit.Score))
	}
}

// rank fuses the lists (reciprocal-rank fusion with recency decay), drops
// what the query's filters exclude, and returns every candidate in final
// order with its Rank set. Duplicates are dropped as the context is
// assembled.
func (f *fusion) rank(q *Query, inWindow map[string]bool) []*Candidate {
	for _, c := range f.order {
		for _, lr := range c.lists[:c.nlists] {
			w, ok := f.weights[lr.list]
			if !ok {
				w = 1
			}
			c.Fused += w / float64(rrfK+lr.rank)
		}
		if q.HalfLife > 0 && !c.Time.IsZero() {
			if age := q.Now.Sub(c.Time); age > 0 {
				c.Fused *= math.Exp2(-float64(age) / float64(q.HalfLife))
			}
		}
		c.item.Score = c.Fused
		switch {
		case c.Reason != "":
		case inWindow[c.ID]:
			c.Reason = "in window"
		case c.hydrated:
			c.Reason = screen(c, q)
		}
	}
	cands := slices.Clone(f.order)
	slices.SortStableFunc(cands, compareCandidates)
	for i, c := range cands {
		c.Rank = i + 1
	}
	return cands
}

// compareCandidates orders candidates best first: by fused score, then
// (ties are common: the first of each list scores alike) by source, newer
// first, and id, so the order never depends on how ids were minted.
func compareCandidates(a, b *Candidate) int {
	switch {
	case a.Fused > b.Fused:
		return -1
	case a.Fused < b.Fused:
		return 1
	}
	if c := a.Source.spec().tie - b.Source.spec().tie; c != 0 {
		return c
	}
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// mmr re-orders the candidates still in play by maximal marginal
// relevance: each next pick maximizes λ·relevance − (1−λ)·(its highest
// cosine similarity to a pick so far), relevance being the fused score
// over the best one. Facts are embedded here, as they have no stored
// vector.
func (s *Store) mmr(ctx context.Context, h *hydrator, cands []*Candidate, q *Query) error {
	var live []*Candidate
	for _, c := range cands {
		if c.Reason == "" {
			live = append(live, c)
		}
	}
	live = live[:min(len(live), 4*q.TopK)]
	h.vectors = true
	if err := h.hydrate(ctx, live); err != nil {
		return err
	}
	live = slices.DeleteFunc(live, func(c *Candidate) bool { return c.Reason != "" })
	var texts []string
	var need []*Candidate
	for _, c := range live {
		if c.vector == nil {
			texts, need = append(texts, c.Text), append(need, c)
		}
	}
	if len(texts) > 0 {
		vecs, err := s.embedQueryBatch(ctx, texts)
		if err != nil {
			return err
		}
		for i, c := range need {
			c.vector = vecs[i]
		}
	}
	if len(live) == 0 {
		return nil
	}
	picked := mmrPick(live, q.MMR)
	// Give the picks the first ranks, in pick order; the others follow.
	rank := 1
	for _, c := range picked {
		c.Rank = rank
		rank++
	}
	for _, c := range cands {
		if !slices.Contains(picked, c) {
			c.Rank = rank
			rank++
		}
	}
	slices.SortStableFunc(cands, func(a, b *Candidate) int { return a.Rank - b.Rank })
	return nil
}

// mmrPick returns live (best fused score first, each with its vector) in
// the order maximal marginal relevance with λ = lambda picks them.
func mmrPick(live []*Candidate, lambda float64) []*Candidate {
	best := live[0].Fused
	picked := make([]*Candidate, 0, len(live))
	rest := slices.Clone(live)
	for len(rest) > 0 {
		bi, bs := 0, math.Inf(-1)
		for i, c := range rest {
			sim := 0.0
			for _, p := range picked {
				if d, err := index.Dot(c.vector, p.vector); err == nil {
					sim = max(sim, float64(d)/(norm(c.vector)*norm(p.vector)+1e-12))
				}
			}
			score := lambda*c.Fused/best - (1-lambda)*sim
			if score > bs {
				bi, bs = i, score
			}
		}
		picked = append(picked, rest[bi])
		rest = slices.Delete(rest, bi, bi+1)
	}
	return picked
}

func norm(v []float32) float64 {
	d, err := index.Dot(v, v)
	if err != nil {
		return 0
	}
	return math.Sqrt(float64(d))
}
