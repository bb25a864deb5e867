package graph

import "github.com/oklog/ulid/v2"

// Key layout
//
// A graph lives under a root prefix chosen by the caller (package engine
// gives each user, and each tenant's shared scope, its own). Under it, one
// tag byte says what a key holds; folded names (see [Fold]) never contain
// 0x00, so 0x00 separates them and a prefix ending in 0x00 matches one name
// exactly:
//
//	root 'n' name                      → display name of the entity that
//	                                     name or alias resolves to
//	root 'e' name                      → entity record (display name, type,
//	                                     aliases, observations)
//	root 'f' id                        → folded subject, predicate, object
//	root 's' subj 0 pred 0 obj 0 id    → fact value (see appendFact)
//	root 'o' obj 0 subj 0 pred 0 id    → fact value
//	root 'p' pred 0 obj 0 subj 0 id    → empty
//	root 'a' id                        → the fact's annotation (see
//	                                     Options.Annotation), if any
//	root 'g' writer                    → token: the graph's generation
//	                                     vector (see searchstate.go)
//
// id is the fact's 16-byte ULID. A fact is stored whole twice, under SPO and
// OSP, so that traversal in either direction reads no second key.
const (
	tagName   byte = 'n'
	tagEntity byte = 'e'
	tagFact   byte = 'f'
	tagSPO    byte = 's'
	tagOSP    byte = 'o'
	tagPOS    byte = 'p'
	tagNote   byte = 'a'
)

// AppendAnnotationKey appends to dst the key of the annotation of the fact
// id in the graph under root (see [Options.Annotation]), so that a caller
// reads annotations in its own kv transaction, into its own buffer, or
// many in one request ([kv.Txn.Prefetch]).
func AppendAnnotationKey(dst, root []byte, id ulid.ULID) []byte {
	dst = append(dst, root...)
	dst = append(dst, tagNote)
	return append(dst, id[:]...)
}

// IsEntityKey reports whether rel, a key with its graph's root removed,
// is an entity's record: a graph has one such key per entity, so a caller
// counting a scan of raw keys (package memory's Usage) need not know the
// layout.
func IsEntityKey(rel []byte) bool { return len(rel) > 1 && rel[0] == tagEntity }

// IsFactKey reports whether rel, a key with its graph's root removed, is a
// fact's id entry: a graph has one such key per stored fact, current or
// closed.
func IsFactKey(rel []byte) bool { return len(rel) == 1+len(ulid.ULID{}) && rel[0] == tagFact }

// keys builds keys under one root; its buffer is reused, so a returned key
// is valid until the next call unless copied (kv copies keys it stores).
type keys struct {
	root []byte
	buf  []byte
}

func (k *keys) start(tag byte) []byte {
	k.buf = append(append(k.buf[:0], k.root...), tag)
	return k.buf
}

// name returns root tag name (for 'n' and 'e').
func (k *keys) name(tag byte, name string) []byte {
	k.buf = append(k.start(tag), name...)
	return k.buf
}

func (k *keys) fact(id ulid.ULID) []byte {
	k.buf = append(k.start(tagFact), id[:]...)
	return k.buf
}

// note returns the key of a fact's annotation.
func (k *keys) note(id ulid.ULID) []byte {
	k.buf = append(k.start(tagNote), id[:]...)
	return k.buf
}

// triple returns root tag a 0 b 0 c 0 id, or a shorter prefix when trailing
// parts are empty: root tag a 0 (all facts of a), root tag a 0 b 0, and so on.
func (k *keys) triple(tag byte, a, b, c string, id *ulid.ULID) []byte {
	k.buf = k.start(tag)
	for _, s := range [...]string{a, b, c} {
		if s == "" {
			return k.buf
		}
		k.buf = append(append(k.buf, s...), 0)
	}
	if id != nil {
		k.buf = append(k.buf, id[:]...)
	}
	return k.buf
}

// spo, osp and pos return the three index keys of a fact.
func (k *keys) spo(s, p, o string, id ulid.ULID) []byte { return k.triple(tagSPO, s, p, o, &id) }
func (k *keys) osp(s, p, o string, id ulid.ULID) []byte { return k.triple(tagOSP, o, s, p, &id) }
func (k *keys) pos(s, p, o string, id ulid.ULID) []byte { return k.triple(tagPOS, p, o, s, &id) }

// splitTriple parses the suffix of an index key after root and tag: three
// names and the 16-byte id. It returns false for a malformed key.
func splitTriple(suffix []byte) (a, b, c []byte, id []byte, ok bool) {
	var parts [3][]byte
	for i := range parts {
		j := 0
		for j < len(suffix) && suffix[j] != 0 {
			j++
		}
		if j == len(suffix) {
			return nil, nil, nil, nil, false
		}
		parts[i] = suffix[:j]
		suffix = suffix[j+1:]
	}
	if len(suffix) != 16 {
		return nil, nil, nil, nil, false
	}
	return parts[0], parts[1], parts[2], suffix, true
}

// factRef is the value under root 'f' id: where the fact's index keys are.
func appendFactRef(b []byte, s, p, o string) []byte {
	b = append(b, s...)
	b = append(b, 0)
	b = append(b, p...)
	b = append(b, 0)
	b = append(b, o...)
	return b
}

func parseFactRef(b []byte) (s, p, o string, ok bool) {
	var parts [3]string
	for i := range parts {
		j := 0
		for j < len(b) && b[j] != 0 {
			j++
		}
		if (i < 2 && j == len(b)) || j == 0 {
			return "", "", "", false
		}
		parts[i] = string(b[:j])
		if i < 2 {
			b = b[j+1:]
		} else if j != len(b) {
			return "", "", "", false
		}
	}
	return parts[0], parts[1], parts[2], true
}
