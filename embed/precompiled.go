package embed

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiled is the Precompiled normalizer of sentencepiece-based
// tokenizers (XLM-R's, T5's and the multilingual models distilled from
// them): a compiled character map, a double-array trie (Darts) of the
// UTF-8 strings that change, each leading to its replacement in a blob of
// NUL-terminated strings. It applies the map as tokenizers does: to each
// grapheme cluster shorter than 6 bytes whole if any prefix of it is a key
// (replaced by the shortest key's replacement), else character by
// character.
type precompiled struct {
	trie       []uint32
	normalized string
}

// parsePrecompiled reads a Precompiled normalizer: "precompiled_charsmap"
// is the map, base64: a little-endian uint32 byte length of the trie, the
// trie's uint32 units, then the replacement strings. An empty map changes
// nothing.
func parsePrecompiled(raw json.RawMessage) (normalizer, error) {
	var p struct {
		Charsmap *string `json:"precompiled_charsmap"`
	}
	if err := unmarshalPart(raw, &p); err != nil {
		return nil, err
	}
	if p.Charsmap == nil || *p.Charsmap == "" {
		return func(s string) string { return s }, nil
	}
	b, err := base64.StdEncoding.DecodeString(*p.Charsmap)
	if err != nil {
		return nil, fmt.Errorf("Precompiled precompiled_charsmap is not base64: %w", ErrInvalidModel)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("Precompiled precompiled_charsmap of %d bytes: %w", len(b), ErrInvalidModel)
	}
	size := binary.LittleEndian.Uint32(b)
	if size%4 != 0 || uint64(size) > uint64(len(b)-4) {
		return nil, fmt.Errorf("Precompiled trie of %d bytes in a %d-byte map: %w", size, len(b), ErrInvalidModel)
	}
	pc := &precompiled{trie: make([]uint32, size/4), normalized: string(b[4+size:])}
	for i := range pc.trie {
		pc.trie[i] = binary.LittleEndian.Uint32(b[4+4*i:])
	}
	if !utf8.ValidString(pc.normalized) {
		return nil, fmt.Errorf("Precompiled replacements are not UTF-8: %w", ErrInvalidModel)
	}
	return pc.apply, nil
}

// transform returns the replacement of the shortest key that prefixes
// chunk, as sentencepiece's Darts common-prefix search finds it, or false
// for none. A malformed trie finds nothing rather than failing.
func (p *precompiled) transform(chunk string) (string, bool) {
	if len(p.trie) == 0 {
		return "", false
	}
	unit := p.trie[0]
	pos := dartsOffset(unit)
	for i := 0; i < len(chunk) && chunk[i] != 0; i++ {
		c := uint32(chunk[i])
		pos ^= c
		if pos >= uint32(len(p.trie)) {
			return "", false
		}
		unit = p.trie[pos]
		if unit&(1<<31|0xff) != c {
			return "", false
		}
		pos ^= dartsOffset(unit)
		if unit>>8&1 == 1 && pos < uint32(len(p.trie)) {
			at := int(p.trie[pos] & (1<<31 - 1))
			if at >= len(p.normalized) {
				return "", false
			}
			end := strings.IndexByte(p.normalized[at:], 0)
			if end < 0 {
				end = len(p.normalized) - at
			}
			return p.normalized[at : at+end], true
		}
	}
	return "", false
}

// dartsOffset is the offset field of a Darts unit.
func dartsOffset(unit uint32) uint32 {
	return (unit >> 10) << ((unit & (1 << 9)) >> 6)
}

// apply runs the map on s, grapheme cluster by grapheme cluster.
func (p *precompiled) apply(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	state := -1
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if n, ok := p.transform(g); ok {
				sb.WriteString(n)
				continue
			}
		}
		for i := 0; i < len(g); {
			_, size := utf8.DecodeRuneInString(g[i:])
			if n, ok := p.transform(g[i : i+size]); ok {
				sb.WriteString(n)
			} else {
				sb.WriteString(g[i : i+size])
			}
			i += size
		}
	}
	return sb.String()
}
