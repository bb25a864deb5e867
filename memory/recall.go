package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// Source is a kind of candidate [Store.Recall] draws on.
type Source string

// The sources of recall.
const (
	// SourceMemories are the user's memories (see [Store.Remember]).
	SourceMemories Source = "memories"
	// SourceEpisodes are the user's earlier messages, from every session,
	// recalled as episodes with their dates.
	SourceEpisodes Source = "episodes"
	// SourceGraph are facts of the user's knowledge graph valid now, within
	// Query.Hops of the entities the query names (the user's own entity
	// for "I", "me" and "my").
	SourceGraph Source = "graph"
	// SourceShared are the tenant's shared memories: those remembered with
	// a scope that names no user, which every user of the tenant may be
	// given. Recall draws on them only when asked.
	SourceShared Source = "shared"
)

// Sources returns every source, in the order the preamble shows them.
func Sources() []Source {
	out := make([]Source, len(recallSources))
	for i := range recallSources {
		out[i] = recallSources[i].source
	}
	return out
}

// DefaultSources returns the sources a [Query] with nil Sources draws on:
// everything that is the user's own (memories, episodes, the graph), in
// the order [Sources] lists them. Append [SourceShared] to it to add the
// tenant's shared memories to a default recall.
func DefaultSources() []Source {
	var out []Source
	for i := range recallSources {
		if recallSources[i].byDefault {
			out = append(out, recallSources[i].source)
		}
	}
	return out
}

// isMemory reports whether a source's items are memories.
func (s Source) isMemory() bool { return s.spec().space == spaceMemories }

// Retrieval says how memories and episodes are matched to the query.
type Retrieval int

// The retrieval methods.
const (
	// RetrievalHybrid fuses vector and BM25 search, vector search weighted
	// by Options.VectorWeight (none by default with the offline hashing
	// embedder, so BM25 alone). The default.
	RetrievalHybrid Retrieval = iota
	// RetrievalVector uses the embedder's vectors alone.
	RetrievalVector
	// RetrievalLexical uses BM25 alone.
	RetrievalLexical
)

// String returns "hybrid", "vector" or "lexical".
func (r Retrieval) String() string {
	switch r {
	case RetrievalHybrid:
		return "hybrid"
	case RetrievalVector:
		return "vector"
	case RetrievalLexical:
		return "lexical"
	}
	return fmt.Sprintf("Retrieval(%d)", int(r))
}

// Defaults of a [Query].
const (
	// DefaultRecallTokens is the token budget of a Recall whose MaxTokens
	// is zero: the window, the summary and the recalled context together.
	DefaultRecallTokens = 4000
	// DefaultTopK is how many recalled items (memories, episodes and facts
	// together) the context holds at most when TopK is zero.
	DefaultTopK = 10
	// DefaultRecallMessages is the window's message budget when
	// MaxMessages is zero.
	DefaultRecallMessages = 20
	// DefaultHops is the graph distance when Hops is zero.
	DefaultHops = 2
	// MaxTopK bounds TopK.
	MaxTopK = 200
	// windowShare is the share of the token budget the window may take;
	// the rest (and whatever the window leaves) is for recalled context.
	windowShare = 0.6
)

// Query is one [Store.Recall].
type Query struct {
	// Scope names the user (Tenant and User, required) and the current
	// session (optional): its window and summary open the context, and its
	// messages in the window are not recalled again as episodes.
	Scope Scope
	// Text is what the context is for: usually the user's latest message.
	Text string
	// MaxMessages bounds the window; zero means [DefaultRecallMessages].
	MaxMessages int
	// MaxTokens bounds the whole context (window, summary and recalled
	// items, chat framing included); zero means [DefaultRecallTokens].
	MaxTokens int
	// TopK bounds the recalled items; zero means [DefaultTopK].
	TopK int
	// Hops bounds the graph walk from the entities the query names; zero
	// means [DefaultHops], at most graph.MaxHopsLimit.
	Hops int
	// Since and Until bound recalled items by time (a memory's CreatedAt,
	// an episode's message time, a fact's ValidFrom): Since inclusive,
	// Until exclusive; zero means unbounded.
	Since, Until time.Time
	// HalfLife, when positive, decays an item's fused score by half for
	// every HalfLife of its age. Zero means no decay.
	HalfLife time.Duration
	// Sources lists what to draw on; nil means memories, episodes (the
	// user's earlier messages, those in the current session's window
	// excepted) and the graph: everything that is the user's own. Add
	// SourceShared for the tenant's shared memories.
	Sources []Source
	// Retrieval picks vector, BM25 or both for memories and episodes.
	Retrieval Retrieval
	// MMR, when in (0, 1], re-ranks the fused list by maximal marginal
	// relevance with this λ (1 is pure relevance; 0.5 weighs novelty as
	// much), so near-identical items do not crowd the context. Zero is off.
	MMR float64
	// Now is the time the query is asked at: facts valid then, ages for
	// decay, dates in the preamble. Zero means the current time.
	Now time.Time
	// Trace asks for the whole trace: Recollection.Trace's Candidates
	// (each with its Ranks and Scores) and Lists. Without it they are nil,
	// and a Recall allocates nothing to build them; the trace's other
	// fields (entities, time span, token counts, timings) are always set.
	Trace bool
}

// Recollection is what [Store.Recall] returns: the context for the next
// model call and how it was chosen.
type Recollection struct {
	// Window is the current session's window, oldest first.
	Window []Message
	// Summary is the current session's rolling summary of the messages
	// that left the window, if any.
	Summary string
	// Items are the recalled memories, episodes and facts in the context,
	// best first.
	Items []Item
	// Preamble is the system message that carries the summary and items;
	// empty when there is nothing to say.
	Preamble string
	// Trace says how the context was chosen; with Query.Trace, how every
	// candidate was scored and why it was kept or dropped.
	Trace Trace
}

// ChatMessages returns the context as chat messages: one system preamble
// with the summary and the recalled items, then the window. It is ready for
// a chat-completions call (append the new user message if the window does
// not hold it yet).
func (r *Recollection) ChatMessages() []Message {
	out := make([]Message, 0, len(r.Window)+1)
	if r.Preamble != "" {
		out = append(out, Message{Role: RoleSystem, Content: r.Preamble})
	}
	return append(out, r.Window...)
}

// Item is one recalled memory, episode or fact.
type Item struct {
	// ID is the memory's id, the message's id or the fact's id.
	ID string
	// Source says which it is.
	Source Source
	// Text is how it appears in the preamble (without the date).
	Text string
	// Time is when it was remembered, said or became valid.
	Time time.Time
	// Session is the session an episode was said in.
	Session string
	// Score is its final score (fused, decayed).
	Score float64
	// Memory is set for a memory, Fact for a fact.
	Memory *Memory
	Fact   *Fact
}

// Trace records how a Recall chose its context.
type Trace struct {
	// Entities are the graph entities the query named, in order of first
	// mention; the user's own entity when it said "I", "me" or "my".
	Entities []string
	// Lists are the ranked lists fused, by name ("vector" and "bm25",
	// each over memories, shared memories and episodes together, merged
	// by score; "graph" and "graph.other"), with how many candidates each
	// gave. When the query has terms beyond the entities it names,
	// "graph" holds the facts that share at least one of them, most
	// shared first, and "graph.other" the rest at a tenth of the weight;
	// otherwise "graph" holds every fact reached, nearest first.
	Lists map[string]int
	// When is the time expression the query named ("last week", "in May
	// 2023"), resolved against Query.Now, or nil. Episodes and memories
	// from its span ranked higher (Candidate.Boost).
	When *TimeSpan
	// Candidates are every candidate, in final order (best first), kept or
	// dropped; nil unless Query.Trace asked for them, as is Lists.
	// Records are read only for candidates that could reach the context:
	// one dropped for "top k" before being read has no Text or Time.
	Candidates []Candidate
	// Budget is the token budget; WindowTokens, SummaryTokens and
	// PreambleTokens what the window, summary and the whole preamble
	// (summary included) took; TokensUsed is their total, never above
	// Budget. The preamble's figure is exact when it came near the budget
	// and otherwise the sum of its lines' counts, which the whole text
	// never exceeds.
	Budget, WindowTokens, SummaryTokens, PreambleTokens, TokensUsed int
	// Took is how long the Recall took, embedding included; Embed is the
	// part spent embedding the query.
	Took, Embed time.Duration
}

// Candidate is one memory, episode or fact that a ranked list returned.
type Candidate struct {
	ID     string
	Source Source
	Text   string
	Time   time.Time
	// Ranks holds its 1-based rank in each list that returned it, Scores
	// its score there (cosine, BM25, or for a fact the number of the
	// query's terms it shares plus 1/(1+hops)).
	Ranks  map[string]int
	Scores map[string]float64
	// Fused is the weighted reciprocal-rank fusion score (Σ weight/(60 +
	// rank) over the lists), after recency decay and Boost.
	Fused float64
	// Boost, when not zero, is the factor the fused score was multiplied
	// by once the record was read: above 1 for an item from the span of
	// time the query names (Trace.When), below 1 for an earlier message
	// the query repeats (a question whose words are all the query's, or a
	// near copy), whose reply then takes its score (Ranks["reply"]).
	Boost float64
	// Rank is its 1-based place in the final order.
	Rank int
	// Kept says whether it is in the context; Reason says why not ("top
	// k", "budget", "duplicate of ID", "expired", "outside time range",
	// "in window").
	Kept   bool
	Reason string
	// Tokens is what it takes in the preamble (when kept).
	Tokens int

	item      Item
	lists     [maxCandidateLists]listRank // what Ranks and Scores show, in the order ranked
	nlists    int
	vector    []float32
	hydrated  bool   // item is set (facts are born hydrated)
	tokenMeta string // a memory's or an episode's memoryTokensKey value, if any
	// For a fact: tokensRead is set once its count was looked for (see
	// hydrator.factTokens); then lineCount is its line's count when the
	// count cache held it (line is the line), else factTokens is its
	// text's count. Zero means not known.
	tokensRead bool
	lineCount  int
	line       string
	lineKey    tokenKey // line's key in the count cache
	factTokens int
}

func (q *Query) normalize() error {
	var errs []string
	if q.MaxMessages < 0 {
		errs = append(errs, fmt.Sprintf("MaxMessages %d is negative", q.MaxMessages))
	}
	if q.MaxTokens < 0 {
		errs = append(errs, fmt.Sprintf("MaxTokens %d is negative", q.MaxTokens))
	}
	if q.TopK < 0 || q.TopK > MaxTopK {
		errs = append(errs, fmt.Sprintf("TopK %d is outside [0, %d]", q.TopK, MaxTopK))
	}
	if q.Hops < 0 || q.Hops > graph.MaxHopsLimit {
		errs = append(errs, fmt.Sprintf("Hops %d is outside [0, %d]", q.Hops, graph.MaxHopsLimit))
	}
	if q.HalfLife < 0 {
		errs = append(errs, fmt.Sprintf("HalfLife %v is negative", q.HalfLife))
	}
	if q.MMR < 0 || q.MMR > 1 || q.MMR != q.MMR {
		errs = append(errs, fmt.Sprintf("MMR %v is outside [0, 1]", q.MMR))
	}
	if q.Retrieval < RetrievalHybrid || q.Retrieval > RetrievalLexical {
		errs = append(errs, fmt.Sprintf("unknown Retrieval %d", q.Retrieval))
	}
	for _, src := range q.Sources {
		if !slices.Contains(Sources(), src) {
			errs = append(errs, fmt.Sprintf("unknown Source %q", src))
		}
	}
	if !q.Until.IsZero() && !q.Until.After(q.Since) {
		errs = append(errs, "Until is not after Since")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(errs, "; "))
	}
	if q.MaxMessages == 0 {
		q.MaxMessages = DefaultRecallMessages
	}
	if q.MaxTokens == 0 {
		q.MaxTokens = DefaultRecallTokens
	}
	if q.TopK == 0 {
		q.TopK = DefaultTopK
	}
	if q.Hops == 0 {
		q.Hops = DefaultHops
	}
	if q.Sources == nil {
		q.Sources = DefaultSources()
	}
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	return nil
}

// Recall returns the context for the next model call about q.Text: the
// current session's window and rolling summary, then the user's memories,
// earlier messages of the user's sessions (episodes) and graph facts valid
// now that match the query, fused by reciprocal rank, decayed by age,
// optionally diversified by MMR and deduplicated, within q.MaxTokens.
// A default Query draws on all three, so what a user said in one session
// is recalled in the next with no options.
// [Recollection.ChatMessages] is the result as chat messages;
// Recollection.Trace says why each candidate was kept or dropped.
//
// The graph is entered at the entities the query names (names and
// aliases, compared folded) and, for the first-person words "I", "me",
// "my", "mine" and "myself", at the user's own entity: the one named by
// q.Scope.User or with it as an alias, in this user's graph only. So "Who
// owns my renewal?" reaches the fact (alice, renewal_owner, Dana) without
// naming Alice. The facts reached are ranked by how many of the query's
// other terms they share; see Trace.Lists for how the rest are weighed.
//
// The window takes at most 60% of the budget; the preamble (summary and
// items) gets the rest and whatever the window leaves. Items are added
// best first while they fit, so the budget is never exceeded. Errors:
// [ErrInvalidScope], [ErrInvalidOptions], [ErrBudgetTooSmall] when the
// session's system messages alone exceed the window's share, and
// [ErrEmbedding]. A failing Summarizer is not an error: the stored summary
// is used, the failure logged to Options.Logger, and the next Recall tries
// again.
func (s *Store) Recall(ctx context.Context, q Query) (*Recollection, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	began := time.Now()
	if err := q.normalize(); err != nil {
		return nil, err
	}
	if err := q.Scope.Validate(engine.LevelUser); err != nil {
		return nil, err
	}
	enc, err := s.encoder()
	if err != nil {
		return nil, err
	}
	rec := &Recollection{Trace: Trace{Budget: q.MaxTokens}}
	user := Scope{Tenant: q.Scope.Tenant, User: q.Scope.User}

	// 1. The window and the summary.
	inWindow, err := s.recallWindow(ctx, &q, rec)
	if err != nil {
		return nil, err
	}

	// 2. Candidates from every list.
	f := newFusion()
	// Released once Recall is done with the candidates: settle has copied
	// them into a traced recollection, and the items hold copies.
	defer f.release()
	if err := s.searchLists(ctx, &q, user, f, &rec.Trace); err != nil {
		return nil, err
	}
	// The entity names are looked up before the transaction below opens:
	// a name set built on a miss must come from a snapshot no older than
	// the cache's generation check (see Store.names).
	var ns *nameSet
	if slices.Contains(q.Sources, SourceGraph) {
		if ns, err = s.names(ctx, user); err != nil {
			return nil, err
		}
	}

	// 3. The graph walk, fusion, filters, decay and the assembly read the
	// store in one transaction: the walk, then the records of the
	// candidates that can reach the context (see hydrate), from one
	// snapshot. MMR may embed facts, a provider call that no transaction
	// waits on, so with MMR the records are read in transactions of their
	// own after it.
	h := &hydrator{s: s, user: user, q: &q}
	var cands []*Candidate
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		h.tx = tx
		defer func() { h.tx = nil }()
		if ns != nil {
			if err := s.graphCandidates(tx, ns, user, &q, f, &rec.Trace); err != nil {
				return err
			}
		}
		// Decay and time bounds need every candidate's time, and so its
		// record.
		if q.HalfLife > 0 || !q.Since.IsZero() || !q.Until.IsZero() {
			if err := h.hydrate(ctx, f.order); err != nil {
				return err
			}
		}
		cands = f.rank(&q, inWindow)
		if cands, err = s.rerank(ctx, h, f, cands, &q, &rec.Trace); err != nil {
			return err
		}
		if q.MMR > 0 {
			return nil
		}
		// 4. Assembly within the budget, deduplicated.
		rec.Trace.Candidates = settle(cands, q.Trace)
		return s.assemble(ctx, enc, h, rec, cands, &q)
	})
	if err != nil {
		return nil, err
	}
	if q.Trace {
		rec.Trace.Lists = maps.Clone(f.lists)
	}
	if q.MMR > 0 {
		if err := s.mmr(ctx, h, cands, &q); err != nil {
			return nil, err
		}
		rec.Trace.Candidates = settle(cands, q.Trace)
		if err := s.assemble(ctx, enc, h, rec, cands, &q); err != nil {
			return nil, err
		}
	}
	rec.Trace.Took = time.Since(began)
	return rec, nil
}

// recallWindow fills rec's window, summary and window tokens for a query
// with a session, and returns the ids of the window's messages.
func (s *Store) recallWindow(ctx context.Context, q *Query, rec *Recollection) (map[string]bool, error) {
	inWindow := map[string]bool{}
	if q.Scope.Session != "" {
		sess := s.Session(q.Scope)
		// At least one token: zero would mean no token bound at all.
		share := max(1, int(float64(q.MaxTokens)*windowShare))
		win, err := sess.Window(ctx, WindowOptions{MaxMessages: q.MaxMessages, MaxTokens: share})
		if err != nil {
			return nil, err
		}
		rec.Window = win
		for _, m := range win {
			inWindow[m.ID] = true
			rec.Trace.WindowTokens += m.Tokens
		}
		if rec.Summary, err = s.sessionSummary(ctx, sess, win); err != nil {
			return nil, err
		}
	}
	return inWindow, nil
}

// searchLists runs the query's vector and BM25 searches over every
// searched source and adds their merged lists to f.
func (s *Store) searchLists(ctx context.Context, q *Query, user Scope, f *fusion, tr *Trace) error {
	var qvec []float32
	// Hybrid recall leaves vector search out when its weight is zero (the
	// default with the lexical hashing embedder).
	useVector := q.Retrieval == RetrievalVector || (q.Retrieval == RetrievalHybrid && s.vectorWeight > 0)
	needVector := useVector && strings.TrimSpace(q.Text) != "" &&
		slices.ContainsFunc(q.Sources, func(s Source) bool { return s.spec().searched() })
	if needVector {
		t := time.Now()
		vecs, err := s.embedQuery(ctx, q.Text)
		if err != nil {
			return err
		}
		qvec = vecs
		tr.Embed = time.Since(t)
	}
	// Each list returns twice the items the context can hold (at least
	// 20): fusion can then promote an item that is second-tier in two
	// lists over one that is first-tier in one.
	depth := max(2*q.TopK, 20)
	// Memories, shared memories and episodes are searched apart, but
	// their hits are merged by score into one vector and one BM25 list:
	// the scores share a scale (one embedder, one analyzer), and ranks
	// taken list by list would give the best of a handful of memories the
	// weight of the best of thousands of episodes. Measured on LoCoMo with
	// memories formed from the conversation: R@1 fell from 0.323 to 0.173
	// with a list per source, and stayed at 0.323 merged.
	var byVector, byText []sourcedHit
	// A list's hits, about 150 bytes each, grew by doubling: room for one
	// source's.
	if q.Retrieval != RetrievalVector {
		byText = make([]sourcedHit, 0, depth)
	}
	if useVector {
		byVector = make([]sourcedHit, 0, depth)
	}
	for i := range recallSources {
		src := recallSources[i].source
		if !recallSources[i].searched() || !slices.Contains(q.Sources, src) || strings.TrimSpace(q.Text) == "" {
			continue
		}
		space, owner := spaceOf(src), ownerOf(src, user)
		// Ids only: fusion ranks first, and only the records that can reach
		// the context are read (see hydrate).
		opts := &engine.SearchOptions{Space: space, IDsOnly: true}
		if useVector {
			hits, err := s.db.Search(ctx, owner, qvec, depth, opts)
			if err != nil {
				return err
			}
			for _, h := range hits {
				byVector = append(byVector, sourcedHit{src, h})
			}
		}
		if q.Retrieval != RetrievalVector {
			hits, err := s.db.SearchText(ctx, owner, q.Text, depth, withSynonyms(opts, s.opts.Synonyms))
			if err != nil {
				return err
			}
			for _, h := range hits {
				byText = append(byText, sourcedHit{src, h})
			}
		}
	}
	if useVector {
		f.addMerged("vector", byVector)
		if q.Retrieval == RetrievalHybrid {
			f.weights["vector"] = s.vectorWeight
		}
	}
	f.addMerged("bm25", byText)
	return nil
}

// settle moves the candidates, in their final order, into the slice that
// Trace.Candidates returns, with their Ranks and Scores, and points cands
// at its elements: what assemble then settles (Kept, Reason, Tokens) is
// settled in the trace, with no copy of every candidate at the end.
// Untraced, it returns nil and cands stay in the fusion's slab, which
// outlives the assembly.
func settle(cands []*Candidate, traced bool) []Candidate {
	if !traced {
		return nil
	}
	out := make([]Candidate, len(cands))
	for i, c := range cands {
		out[i] = *c
		out[i].Ranks = make(map[string]int, c.nlists)
		out[i].Scores = make(map[string]float64, c.nlists)
		for _, lr := range c.lists[:c.nlists] {
			out[i].Ranks[lr.list], out[i].Scores[lr.list] = lr.rank, lr.score
		}
		cands[i] = &out[i]
	}
	return out
}

// embedQuery embeds a query with the embedder itself, bypassing the cache:
// queries are not kept in the store.
func (s *Store) embedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := s.embedQueryBatch(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vecs[0]) == 0 {
		return nil, fmt.Errorf("%w: no vector for the query", ErrEmbedding)
	}
	return vecs[0], nil
}

// graphCandidates links the query to entities of ns, the user's graph's
// names (first-person words to the user's own entity, see
// nameSet.linkAs) and walks the graph from them in tx,
// then ranks the facts reached by their relevance to the query (see
// rankFacts).
func (s *Store) graphCandidates(tx *engine.Tx, ns *nameSet, user Scope, q *Query, f *fusion, tr *Trace) error {
	root, err := graphRoot(user)
	if err != nil {
		return err
	}
	// The user's own entity is the one named by the user id (or with it as
	// an alias), in the user's own graph only.
	self := ns.names[graph.Fold(user.User)]
	var mentions []span
	tr.Entities, mentions = ns.linkAs(q.Text, self)
	if len(tr.Entities) == 0 {
		return nil
	}
	terms := contentTerms(q.Text, mentions)
	depth := max(2*q.TopK, 20)
	limit, fanout := depth, 0 // the graph store's fan-out bound
	if len(terms) > 0 {
		// Relevance reorders the walk, so read a deeper pool than the
		// list keeps: a matching fact at hop 2 may follow many at hop 1,
		// and the one asked about may sort after the fan-out bound's
		// first 16 of a busy entity (facts are read in predicate order).
		limit = graphPool * depth
		fanout = limit
	}
	walk, err := s.graph.Tx(tx.KV(), root).Traverse(graph.TraverseQuery{From: tr.Entities, MaxHops: q.Hops, AsOf: q.Now, Limit: limit, MaxFanout: fanout})
	if err != nil {
		return err
	}
	fr := rankingPool.Get().(*factRanking)
	defer fr.release()
	matched, other := fr.rank(walk.Steps, terms, ns)
	matched, other = matched[:min(len(matched), depth)], other[:min(len(other), depth)]
	// The facts the candidates point to, in one allocation, and their
	// texts in one string.
	facts := make([]Fact, 0, len(matched)+len(other))
	n := 0
	for _, steps := range [2][]rankedStep{matched, other} {
		for i := range steps {
			n += factTextLen(&steps[i].Fact)
		}
	}
	var texts strings.Builder
	texts.Grow(n)
	for _, steps := range [2][]rankedStep{matched, other} {
		for i := range steps {
			writeFactText(&texts, &steps[i].Fact)
		}
	}
	all, off := texts.String(), 0
	add := func(list string, steps []rankedStep) {
		for i := range steps {
			st := &steps[i]
			facts = append(facts, st.Fact)
			fact := &facts[len(facts)-1]
			c := f.candidate(fact.ID, SourceGraph)
			n := factTextLen(fact)
			c.Text, off = all[off:off+n], off+n // factText(fact)
			c.Time = fact.ValidFrom
			c.item = Item{ID: fact.ID, Source: SourceGraph, Text: c.Text, Time: fact.ValidFrom, Fact: fact}
			c.hydrated = true
			f.rankIn(c, list, i+1, st.score)
		}
	}
	add("graph", matched)
	if len(other) > 0 {
		add("graph.other", other)
		f.weights["graph.other"] = otherFactsWeight
	}
	return nil
}

// graphPool is how many times the graph list's depth a traversal reads
// when the query has terms to rank the facts by.
const graphPool = 5

// otherFactsWeight weighs the list of facts that share no term with a
// query that has terms beyond the entities it names ("graph.other"): such
// a fact is about the right entity but not about what was asked. At 0.1
// the first of them scores 0.1/61, as a full-weight list's 550th place
// does, so they fill a context only when nothing relevant is left; they
// are not dropped outright because an answer may be worded otherwise than
// its fact ("live" and "moved_to"). Measured on the LoCoMo sample with a
// stand-in graph (one (speaker, mentioned, name) fact per capitalised name
// of a turn, Source the turn; no extractor existed yet), default mode
// R@1/R@10: no graph 0.323/0.734; these facts at full weight 0.023/0.651;
// at 0.1 0.317/0.734; dropped (weight 0) 0.317/0.734.
const otherFactsWeight = 0.1

// rankedStep is a fact reached by the graph walk with its relevance.
type rankedStep struct {
	*graph.Step         // of the walk's steps
	matches     int     // the query's content terms the fact's text has
	score       float64 // what the trace shows: matches + 1/(1+hops)
}

// rankFacts orders the facts a walk reached by relevance to a query whose
// content terms are terms (see contentTerms): by how many of terms the
// fact's text (subject, predicate split at '_', object, analyzed as BM25
// does) has; then by hops, nearest first; then by ValidFrom, newest first.
// With terms, facts with no match are returned apart, in other. Without
// terms (a query that only names entities: "Tell me about Dana") every
// fact is in matched, in hop order.
//
// The named entities themselves are no evidence: every fact reached
// touches one. Counting a fact that links two named entities as a match
// was tried and hurt: on the LoCoMo sample, with a stand-in graph of one
// (speaker, mentioned, name) fact per capitalised name of a turn, the two
// speakers name each other so often that such facts took the first places
// (default mode R@1 0.133 and R@10 0.727, against 0.317 and 0.734
// without it).
//
// ns, when not nil, is the graph's name set, which caches the analysis of
// the facts' names and predicates across queries.
func rankFacts(steps []graph.Step, terms map[string]bool, ns *nameSet) (matched, other []rankedStep) {
	return new(factRanking).rank(steps, terms, ns)
}

// factRanking is the working memory of rankFacts, kept across Recalls in
// rankingPool: its keys, its result and its term matcher's sets were
// about a tenth of the bytes a Recall allocated.
type factRanking struct {
	keys, split []factKey
	out         []rankedStep
	tm          termMatcher
}

var rankingPool = sync.Pool{New: func() any { return new(factRanking) }}

// release drops what fr points to and puts it back in rankingPool; the
// slices rank returned are not to be used afterwards.
func (fr *factRanking) release() {
	clear(fr.out)
	fr.tm.reset(nil, nil)
	rankingPool.Put(fr)
}

// rank is rankFacts; the slices it returns are fr's, valid until the next
// rank or release.
func (fr *factRanking) rank(steps []graph.Step, terms map[string]bool, ns *nameSet) (matched, other []rankedStep) {
	// The steps are large (a Fact and a path), so they are ranked by small
	// keys without pointers and copied once into place: sorting the steps
	// themselves took a quarter of a Recall in engram bench recall.
	keys := slices.Grow(fr.keys[:0], len(steps))[:len(steps)]
	fr.keys = keys
	var tm *termMatcher
	if len(terms) > 0 {
		tm = &fr.tm
		tm.reset(terms, ns)
	}
	nMatched := 0
	for i := range steps {
		st := &steps[i]
		k := factKey{i: int32(i), hops: int32(st.Hops), sec: st.ValidFrom.Unix(), nsec: int32(st.ValidFrom.Nanosecond())}
		if tm != nil {
			k.matches = int32(tm.matches(st.Subject, st.Predicate, st.Object))
		}
		if tm == nil || k.matches > 0 {
			nMatched++
		}
		keys[i] = k
	}
	// Matched keys first, the others after, each in walk order.
	split := slices.Grow(fr.split[:0], len(keys))
	defer func() { fr.split = split }()
	for _, k := range keys {
		if tm == nil || k.matches > 0 {
			split = append(split, k)
		}
	}
	for _, k := range keys {
		if tm != nil && k.matches == 0 {
			split = append(split, k)
		}
	}
	slices.SortFunc(split[:nMatched], compareFactKeys)
	slices.SortFunc(split[nMatched:], compareFactKeys)
	out := slices.Grow(fr.out[:0], len(split))[:len(split)]
	fr.out = out
	for j, k := range split {
		out[j] = rankedStep{Step: &steps[k.i], matches: int(k.matches), score: float64(k.matches) + 1/float64(1+k.hops)}
	}
	matched, other = out[:nMatched:nMatched], out[nMatched:]
	if len(other) == 0 {
		other = nil
	}
	if len(matched) == 0 {
		matched = nil
	}
	return matched, other
}

// factKey is what rankFacts orders a step by, and the step's index.
type factKey struct {
	matches, hops int32
	sec           int64 // ValidFrom as Unix seconds and nanoseconds
	nsec, i       int32
}

// compareFactKeys orders by matches, most first; then by hops, nearest
// first; then by ValidFrom, newest first; then in walk order (the index),
// which makes an unstable sort stable.
func compareFactKeys(a, b factKey) int {
	if a.matches != b.matches {
		return int(b.matches - a.matches)
	}
	if a.hops != b.hops {
		return int(a.hops - b.hops)
	}
	if a.sec != b.sec {
		return cmp.Compare(b.sec, a.sec)
	}
	if a.nsec != b.nsec {
		return int(b.nsec - a.nsec)
	}
	return int(a.i - b.i)
}

// termMatcher counts the distinct query terms that a fact's subject,
// predicate and object have together. Each distinct string is analyzed
// once per query (names and predicates recur across the facts of a walk),
// and its terms kept as a bit set over the query's terms.
type termMatcher struct {
	ns    *nameSet       // analyzes, with a cache across queries
	index map[string]int // query term → bit
	words int            // uint64s per bit set
	memo  map[string]int // string → offset of its bit set in sets
	sets  []uint64
	or    []uint64
}

// reset makes tm a matcher of terms, reusing its memory; reset(nil, nil)
// drops what it points to.
func (tm *termMatcher) reset(terms map[string]bool, ns *nameSet) {
	tm.ns = ns
	if tm.index == nil {
		tm.index, tm.memo = map[string]int{}, map[string]int{}
	}
	clear(tm.index)
	clear(tm.memo)
	tm.sets = tm.sets[:0]
	for t := range terms {
		tm.index[t] = len(tm.index)
	}
	tm.words = (len(tm.index) + 63) / 64
	tm.or = slices.Grow(tm.or[:0], tm.words)[:tm.words]
}

// set returns the bit set of the query terms that text has, analyzed as
// BM25 does.
func (tm *termMatcher) set(text string) []uint64 {
	off, ok := tm.memo[text]
	if !ok {
		off = len(tm.sets)
		tm.sets = append(tm.sets, make([]uint64, tm.words)...)
		for _, t := range tm.ns.terms(text) {
			if b, ok := tm.index[t]; ok {
				tm.sets[off+b/64] |= 1 << (b % 64)
			}
		}
		tm.memo[text] = off
	}
	return tm.sets[off : off+tm.words]
}

// matches returns how many distinct query terms the fact's text (subject,
// predicate split at '_', object) has. Analyzing the three apart gives
// the terms of the three joined by spaces: no token spans a space.
func (tm *termMatcher) matches(subject, predicate, object string) int {
	clear(tm.or)
	pred := predicate
	if strings.Contains(pred, "_") {
		pred = strings.ReplaceAll(pred, "_", " ")
	}
	for _, text := range [3]string{subject, pred, object} {
		for i, w := range tm.set(text) {
			tm.or[i] |= w
		}
	}
	n := 0
	for _, w := range tm.or {
		n += bits.OnesCount64(w)
	}
	return n
}

// contentTerms returns the BM25 terms (stemmed, stop words out) of text
// outside the spans that named entities, request words ("tell", "know",
// see requestWords) left out.
func contentTerms(text string, mentions []span) map[string]bool {
	var b strings.Builder
	last := 0
	for _, m := range mentions {
		b.WriteString(text[last:m.start])
		b.WriteByte(' ')
		last = m.end
	}
	b.WriteString(text[last:])
	terms := map[string]bool{}
	for _, t := range index.Analyze(b.String()) {
		if !requestTerms[t] {
			terms[t] = true
		}
	}
	return terms
}

// factText renders a fact for the preamble: "Alice —renewal owner→ Eve".
func factText(f *Fact) string {
	return f.Subject + " —" + strings.ReplaceAll(f.Predicate, "_", " ") + "→ " + f.Object
}

// factTextLen returns len(factText(f)).
func factTextLen(f *Fact) int {
	return len(f.Subject) + len(" —") + len(f.Predicate) + len("→ ") + len(f.Object)
}

// writeFactText writes factText(f) to b.
func writeFactText(b *strings.Builder, f *Fact) {
	b.WriteString(f.Subject)
	b.WriteString(" —")
	for p := f.Predicate; p != ""; {
		i := strings.IndexByte(p, '_')
		if i < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		b.WriteByte(' ')
		p = p[i+1:]
	}
	b.WriteString("→ ")
	b.WriteString(f.Object)
}

// fill sets a memory's or an episode's item from its record.
func (c *Candidate) fill(r engine.Record) {
	var meta [len(memoryFieldKeys)]string
	keys := episodeFieldKeys[:]
	if c.Source.isMemory() {
		keys = memoryFieldKeys[:]
	}
	for i, k := range keys {
		meta[i] = r.Metadata[k]
	}
	c.fillFields(r, meta[:len(keys)])
}

// The metadata a memory's or an episode's candidate is filled from, in the
// order fillFields takes their values.
var (
	memoryFieldKeys  = [...]string{memoryMetaKey, memoryTokensKey}
	episodeFieldKeys = [...]string{"session", memoryTokensKey}
)

// fillFields is fill from a record's ID, Text, Time and Vector and the
// values of its metadata keys memoryFieldKeys (for a memory) or
// episodeFieldKeys (for an episode), in vals.
func (c *Candidate) fillFields(r engine.Record, vals []string) {
	c.item = Item{ID: c.ID, Source: c.Source, Text: r.Text, Time: r.Time, Score: c.item.Score}
	if c.Source.isMemory() {
		if m, err := decodeMemoryMeta(r.ID, vals[0]); err == nil {
			c.item.Memory = &m
			c.item.Time = m.CreatedAt
		}
		c.tokenMeta = vals[1]
	} else {
		c.item.Session = vals[0]
		c.tokenMeta = vals[1]
	}
	c.Text, c.Time = c.item.Text, c.item.Time
	if r.Vector != nil {
		c.vector = r.Vector
	}
	c.hydrated = true
}

// hydrator reads the records of candidates that the lists named by id.
type hydrator struct {
	s    *Store
	user Scope
	q    *Query
	// vectors asks for the records' vectors too (for MMR).
	vectors bool
	// tx, when set, is the transaction to read in; otherwise each hydrate
	// reads in one of its own.
	tx *engine.Tx
}

// hydrate reads the records of the candidates that lack them, in one
// transaction, and drops those that are gone ("deleted or expired") or
// that the query's filters exclude.
func (h *hydrator) hydrate(ctx context.Context, cands []*Candidate) error {
	need := false
	for _, c := range cands {
		if !c.hydrated || (h.vectors && c.vector == nil && c.Source != SourceGraph) {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	return h.view(ctx, func(tx *engine.Tx) error { return h.read(tx, cands) })
}

// view runs fn in the hydrator's transaction when it has one, else in a
// read transaction of its own.
func (h *hydrator) view(ctx context.Context, fn func(*engine.Tx) error) error {
	if h.tx != nil {
		return fn(h.tx)
	}
	return h.s.db.View(ctx, fn)
}

// read is hydrate's work in tx.
func (h *hydrator) read(tx *engine.Tx, cands []*Candidate) error {
	if tx.KV().Prefetches() {
		// One request for every record rather than one each (PostgreSQL).
		var refs []engine.RecordRef
		for _, c := range cands {
			if !h.skip(c) {
				refs = append(refs, engine.RecordRef{Scope: ownerOf(c.Source, h.user), Space: spaceOf(c.Source), ID: c.ID})
			}
		}
		if err := tx.PrefetchRecords(refs); err != nil {
			return err
		}
	}
	for _, c := range cands {
		if h.skip(c) {
			continue
		}
		var r engine.Record
		var err error
		var meta [len(memoryFieldKeys)]string
		keys := episodeFieldKeys[:]
		if c.Source.isMemory() {
			keys = memoryFieldKeys[:]
		}
		if h.vectors {
			r, err = tx.GetRecord(ownerOf(c.Source, h.user), spaceOf(c.Source), c.ID, nil)
			for i, k := range keys {
				meta[i] = r.Metadata[k]
			}
		} else {
			// Only what fill reads, decoded in the store's buffer.
			r, err = tx.GetRecordFields(ownerOf(c.Source, h.user), spaceOf(c.Source), c.ID, keys, meta[:])
		}
		switch {
		case errors.Is(err, engine.ErrNotFound):
			c.hydrated = true
			if c.Reason == "" {
				c.Reason = "deleted or expired"
			}
			continue
		case err != nil:
			return err
		}
		c.fillFields(r, meta[:len(keys)])
		if c.Reason == "" {
			c.Reason = screen(c, h.q)
		}
	}
	return nil
}

// factTokens finds the token count of c, a fact, before it is assembled:
// its line's when the process's count cache holds it (a second turn finds
// its facts' lines there), else its text's, counted in pieces through the
// cache (factTextTokens: an entity's name and a predicate come back in many
// facts). That costs less than reading a count stored beside the fact,
// which older versions did (see graph.Options.Annotation): a Badger point
// read, about 5 µs a fact in engram bench recall at 300 users, or a round
// trip on PostgreSQL.
func (h *hydrator) factTokens(enc *bpe.Encoder, c *Candidate) {
	if c.Source != SourceGraph || c.tokensRead {
		return
	}
	c.tokensRead = true
	c.line = itemLine(&c.item)
	k, n, ok := textTokens.lookup(enc, c.line)
	if ok {
		c.lineCount = n
		return
	}
	c.lineKey = k
	c.factTokens = factTextTokens(enc, c.item.Fact)
}

// skip reports whether read has nothing to read for c.
func (h *hydrator) skip(c *Candidate) bool {
	return c.Source == SourceGraph || (c.hydrated && (!h.vectors || c.vector != nil))
}

// screen returns why the query's filters drop a hydrated candidate, or "".
func screen(c *Candidate, q *Query) string {
	switch {
	case c.item.Memory != nil && !c.item.Memory.ExpiresAt.IsZero() && !c.item.Memory.ExpiresAt.After(q.Now):
		return "expired"
	case !q.Since.IsZero() && c.Time.Before(q.Since), !q.Until.IsZero() && !c.Time.Before(q.Until):
		return "outside time range"
	}
	return ""
}

// embedQueryBatch embeds texts outside the cache (they are not stored).
func (s *Store) embedQueryBatch(ctx context.Context, texts []string) ([][]float32, error) {
	e := s.embedder
	if s.cache != nil {
		e = s.opts.Embedder
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbedding, len(vecs), len(texts))
	}
	return vecs, nil
}
