package graph

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/engramdb/engram/kv"
)

// SearchOptions bounds [Tx.SearchNodes].
type SearchOptions struct {
	// Limit caps the entities returned; zero means [DefaultPageSize], at
	// most [MaxPageSize].
	Limit int
}

// SearchNodes returns the entities whose name, type, aliases or
// observations contain query (compared folded, so case and runs of white
// space do not matter), in order of their folded names, and the relations
// that hold now among them. An empty query matches every entity. It answers
// from the Store's in-memory index of the graph when the index reflects
// the transaction's snapshot, and scans otherwise (see the package doc's
// Search section); the answer is the same.
func (tx *Tx) SearchNodes(query string, opts SearchOptions) (Graph, error) {
	limit, err := pageLimit(opts.Limit)
	if err != nil {
		return Graph{}, err
	}
	q := Fold(query)
	folded, ok, err := tx.searchIndexed(q, limit)
	tx.s.search.counted(ok)
	if err != nil {
		return Graph{}, err
	} else if ok {
		return tx.openFolded(folded)
	}
	return tx.searchScan(q, limit)
}

// openFolded returns the entities of the folded names, which exist, and
// the relations that hold now among them.
func (tx *Tx) openFolded(folded []string) (Graph, error) {
	g := Graph{Entities: make([]Entity, 0, len(folded)), Relations: []Relation{}}
	// One iterator seeking forward through the names, in order: cheaper
	// than a point read each when the names are many and close.
	prefix := bytes.Clone(tx.k.start(tagEntity))
	it := tx.t.NewIterator(kv.IterOptions{Prefix: prefix, KeysOnly: true})
	defer it.Close()
	var val []byte
	for _, f := range folded {
		key := append(prefix, f...)
		if !it.Valid() || !bytes.Equal(it.Key(), key) {
			it.Seek(key)
		}
		if !it.Valid() || !bytes.Equal(it.Key(), key) {
			return Graph{}, fmt.Errorf("%w: %q", ErrEntityNotFound, f)
		}
		var err error
		if val, err = it.Value(val[:0]); err != nil {
			return Graph{}, err
		}
		e, err := decodeEntity(val)
		if err != nil {
			return Graph{}, err
		}
		g.Entities = append(g.Entities, e)
		it.Next()
	}
	var err error
	g.Relations, err = tx.relationsAmong(folded)
	return g, err
}

// searchScan is SearchNodes without the index: it decodes every entity
// in order until limit of them match.
func (tx *Tx) searchScan(q string, limit int) (Graph, error) {
	matches := func(e *Entity) bool {
		if strings.Contains(Fold(e.Name), q) || strings.Contains(Fold(e.Type), q) {
			return true
		}
		for _, list := range [][]string{e.Aliases, e.Observations} {
			for _, s := range list {
				if strings.Contains(Fold(s), q) {
					return true
				}
			}
		}
		return false
	}
	g := Graph{Entities: []Entity{}, Relations: []Relation{}}
	var folded []string
	err := tx.scan(bytes.Clone(tx.k.start(tagEntity)), true, func(key, val []byte) (bool, error) {
		e, err := decodeEntity(val)
		if err != nil {
			return false, err
		}
		if matches(&e) {
			g.Entities = append(g.Entities, e)
			folded = append(folded, string(key[len(tx.k.root)+1:]))
		}
		return len(g.Entities) < limit, nil
	})
	if err != nil {
		return Graph{}, err
	}
	g.Relations, err = tx.relationsAmong(folded)
	return g, err
}

// OpenNodes returns the entities that the names (or aliases) name, in the
// order given, skipping unknown names and repeats, and the relations that
// hold now among them.
func (tx *Tx) OpenNodes(names []string) (Graph, error) {
	if len(names) > MaxPageSize {
		return Graph{}, ErrInvalidQuery
	}
	g := Graph{Entities: []Entity{}, Relations: []Relation{}}
	var folded []string
	seen := map[string]bool{}
	for _, n := range names {
		f, ok, err := tx.canonical(n)
		if err != nil {
			return Graph{}, err
		}
		if !ok || seen[f] {
			continue
		}
		seen[f] = true
		e, err := tx.entity(f)
		if err != nil {
			return Graph{}, err
		}
		g.Entities = append(g.Entities, e)
		folded = append(folded, f)
	}
	var err error
	g.Relations, err = tx.relationsAmong(folded)
	return g, err
}

// relationsAmong returns the relations that hold now whose subject and
// object are both among the folded entity names, at most MaxPageSize.
func (tx *Tx) relationsAmong(folded []string) ([]Relation, error) {
	set := make(map[string]bool, len(folded))
	for _, f := range folded {
		set[f] = true
	}
	now := tx.s.now().UnixNano()
	rels := []Relation{}
	it := tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagSPO), KeysOnly: true})
	defer it.Close()
	var val []byte
	var err error
	for _, s := range folded {
		prefix := bytes.Clone(tx.k.triple(tagSPO, s, "", "", nil))
		for it.Seek(prefix); it.Valid() && bytes.HasPrefix(it.Key(), prefix); it.Next() {
			key := it.Key()
			_, _, o, id, ok := splitTriple(key[len(tx.k.root)+1:])
			if !ok || !set[string(o)] {
				continue
			}
			if val, err = it.Value(val[:0]); err != nil {
				return nil, err
			}
			v, err := readValidity(val)
			if err != nil {
				return nil, err
			}
			if !v.at(now) {
				continue
			}
			f, err := decodeFact(val, id)
			if err != nil {
				return nil, err
			}
			rels = append(rels, f.Relation())
			if len(rels) == MaxPageSize {
				return rels, nil
			}
		}
	}
	return rels, nil
}

// Names calls fn with every name and alias of the graph, folded (see
// [Fold]), and the display name of the entity it resolves to, in folded
// order, until fn returns false. It is how a caller finds entities named in
// free text.
func (tx *Tx) Names(fn func(folded, display string) bool) error {
	start := bytes.Clone(tx.k.start(tagName))
	return tx.scan(start, true, func(key, val []byte) (bool, error) {
		return fn(string(key[len(start):]), string(val)), nil
	})
}
