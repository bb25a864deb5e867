package embed

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// unigram is a Hugging Face tokenizers Unigram model (sentencepiece's):
// each word is segmented into the vocabulary pieces whose scores (log
// probabilities) sum highest, found by Viterbi over the word's bytes. A
// character no piece covers is the unknown token, scored 10 below the
// lowest piece; adjacent unknown characters fuse into one unknown token,
// which with byte_fallback becomes the "<0xXX>" pieces of its bytes when
// the vocabulary has them all.
type unigram struct {
	scores       []float64 // scores[id]
	unkScore     float64
	trie         pieceTrie
	byteFallback bool
	byteIDs      [256]int32 // the id of "<0xXX>", -1 for none
}

// unigramUnkPenalty is how far below the lowest piece score tokenizers
// scores an unknown character (K_UNK_PENALTY).
const unigramUnkPenalty = 10.0

// parseUnigram reads a Unigram model: "vocab" a list of [piece, score]
// pairs in id order, "unk_id" an id or null, "byte_fallback" a boolean.
func parseUnigram(tp *tokenizer, raw json.RawMessage) error {
	var m struct {
		UnkID        *int64  `json:"unk_id"`
		Vocab        [][]any `json:"vocab"`
		ByteFallback bool    `json:"byte_fallback"`
	}
	if err := unmarshalPart(raw, &m); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	n := len(m.Vocab)
	if n == 0 || n > maxVocab {
		return fmt.Errorf("model vocab has %d pieces, want 1 to %d: %w", n, maxVocab, ErrInvalidModel)
	}
	u := &unigram{scores: make([]float64, n), byteFallback: m.ByteFallback}
	tp.tokens = make([]string, n)
	tp.vocab = make(map[string]int32, n)
	minScore := math.Inf(1)
	for id, pair := range m.Vocab {
		piece, ok := pairPiece(pair)
		if !ok {
			return fmt.Errorf("model vocab[%d] is not a [piece, score] pair: %w", id, ErrInvalidModel)
		}
		score := pair[1].(float64)
		if _, dup := tp.vocab[piece]; dup {
			return fmt.Errorf("model vocab: piece %q appears twice: %w", piece, ErrInvalidModel)
		}
		tp.tokens[id], tp.vocab[piece], u.scores[id] = piece, int32(id), score
		tp.maxBytes = max(tp.maxBytes, len(piece))
		minScore = min(minScore, score)
	}
	u.unkScore = minScore - unigramUnkPenalty
	if m.UnkID != nil {
		if *m.UnkID < 0 || *m.UnkID >= int64(n) {
			return fmt.Errorf("model unk_id %d is not in the vocabulary of %d pieces: %w", *m.UnkID, n, ErrInvalidModel)
		}
		tp.unk = int32(*m.UnkID)
	}
	for b := range u.byteIDs {
		u.byteIDs[b] = -1
		if id, ok := tp.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			u.byteIDs[b] = id
		}
	}
	u.trie = buildTrie(tp.tokens)
	tp.uni = u
	// The scores shape the segmentation, so they are part of the identity.
	tp.describe = fmt.Appendf(tp.describe, "unigram unk=%d byte_fallback=%t\x00", tp.unk, u.byteFallback)
	for _, sc := range u.scores {
		tp.describe = fmt.Appendf(tp.describe, "%x\x00", math.Float64bits(sc))
	}
	return nil
}

// pairPiece checks that pair is [string, finite number] and returns the
// string.
func pairPiece(pair []any) (string, bool) {
	if len(pair) != 2 {
		return "", false
	}
	piece, ok := pair[0].(string)
	score, isNum := pair[1].(float64)
	return piece, ok && isNum && !math.IsInf(score, 0) && !math.IsNaN(score)
}

// pieceTrie is a byte trie of the vocabulary: each node's children are a
// run of edges sorted by label, searched by bisection.
type pieceTrie struct {
	nodes  []trieNode // nodes[0] is the root
	labels []byte     // the label of each edge
	next   []int32    // the node each edge leads to
}

// trieNode is one node of a pieceTrie: its edges are [first, first+n),
// and id is the piece that ends here, or -1.
type trieNode struct {
	first, n, id int32
}

// buildTrie builds the trie of tokens (the empty piece is left out: it
// never matches, as in tokenizers).
func buildTrie(tokens []string) pieceTrie {
	ids := make([]int32, 0, len(tokens))
	for id, t := range tokens {
		if t != "" {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(tokens[a], tokens[b]) })
	t := pieceTrie{nodes: []trieNode{{id: -1}}}
	t.build(0, ids, 0, tokens)
	return t
}

// build adds the subtree of node, whose pieces (sorted, sharing their
// first depth bytes) are ids.
func (t *pieceTrie) build(node int32, ids []int32, depth int, tokens []string) {
	if len(ids) > 0 && len(tokens[ids[0]]) == depth {
		t.nodes[node].id = ids[0]
		ids = ids[1:]
	}
	first := int32(len(t.labels))
	for i := 0; i < len(ids); {
		b := tokens[ids[i]][depth]
		for i < len(ids) && tokens[ids[i]][depth] == b {
			i++
		}
		t.labels = append(t.labels, b)
		t.next = append(t.next, int32(len(t.nodes)))
		t.nodes = append(t.nodes, trieNode{id: -1})
	}
	t.nodes[node].first, t.nodes[node].n = first, int32(len(t.labels))-first
	for e, i := first, 0; i < len(ids); e++ {
		j := i
		for j < len(ids) && tokens[ids[j]][depth] == t.labels[e] {
			j++
		}
		t.build(t.next[e], ids[i:j], depth+1, tokens)
		i = j
	}
}

// child returns the node reached from node by byte b, or -1.
func (t *pieceTrie) child(node int32, b byte) int32 {
	nd := t.nodes[node]
	labels := t.labels[nd.first : nd.first+nd.n]
	if i, ok := slices.BinarySearch(labels, b); ok {
		return t.next[nd.first+int32(i)]
	}
	return -1
}

// latticeNode is the best segmentation found of a word's first bytes: its
// last token spans [start, here) with id, and score is the total.
type latticeNode struct {
	score float64
	start int32 // -1: not reached yet
	id    int32
}

// unigramWord appends the ids of w's best segmentation to s.ids, as
// tokenizers' Unigram::encode_optimized then Unigram::tokenize compute
// them: ties go to the path found first (shorter pieces, earlier
// starts).
func (tp *tokenizer) unigramWord(s *tokenScratch, w string) {
	u := tp.uni
	n := len(w)
	lat := slices.Grow(s.lattice[:0], n+1)[:n+1]
	s.lattice = lat
	for i := range lat {
		lat[i] = latticeNode{start: -1}
	}
	lat[0].start = 0
	for start := 0; start < n; {
		_, mb := utf8.DecodeRuneInString(w[start:])
		base := lat[start].score
		single := false
		node := int32(0)
		for k := start; k < n; k++ {
			if node = u.trie.child(node, w[k]); node < 0 {
				break
			}
			id := u.trie.nodes[node].id
			if id < 0 {
				continue
			}
			end := k + 1
			if sc := base + u.scores[id]; lat[end].start < 0 || sc > lat[end].score {
				lat[end] = latticeNode{sc, int32(start), id}
			}
			single = single || end-start == mb
		}
		if end := start + mb; !single {
			if sc := base + u.unkScore; lat[end].start < 0 || sc > lat[end].score {
				lat[end] = latticeNode{sc, int32(start), tp.unk}
			}
		}
		start += mb
	}
	tp.unigramPath(s, w)
}

// unigramPath walks the lattice back from the end of w and appends the
// tokens' ids in order, fusing adjacent unknown tokens.
func (tp *tokenizer) unigramPath(s *tokenScratch, w string) {
	path := s.path[:0]
	for end := int32(len(w)); end > 0; end = s.lattice[end].start {
		path = append(path, end)
	}
	s.path = path
	slices.Reverse(path)
	start := int32(0)
	for i := 0; i < len(path); i++ {
		end := path[i]
		id := s.lattice[end].id
		if id == tp.unk && id >= 0 {
			for i+1 < len(path) && s.lattice[path[i+1]].id == tp.unk {
				i++
			}
			end = path[i]
			tp.unknownPiece(s, w[start:end])
		} else if id >= 0 {
			s.ids = append(s.ids, id)
		}
		start = end
	}
}

// unknownPiece appends the ids of a run of unknown characters: the piece
// whose text it is, if any, else its "<0xXX>" byte pieces with
// byte_fallback when all exist, else the unknown token.
func (tp *tokenizer) unknownPiece(s *tokenScratch, piece string) {
	if id, ok := tp.vocab[piece]; ok {
		s.ids = append(s.ids, id)
		return
	}
	u := tp.uni
	if u.byteFallback {
		all := true
		for i := 0; i < len(piece); i++ {
			all = all && u.byteIDs[piece[i]] >= 0
		}
		if all {
			for i := 0; i < len(piece); i++ {
				s.ids = append(s.ids, u.byteIDs[piece[i]])
			}
			return
		}
	}
	s.ids = append(s.ids, tp.unk)
}
