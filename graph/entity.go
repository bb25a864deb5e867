package graph

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// Limits on entities.
const (
	// MaxObservationLength bounds one observation, in bytes.
	MaxObservationLength = 2048
	// MaxObservations bounds the observations of one entity.
	MaxObservations = 256
	// MaxAliases bounds the aliases of one entity.
	MaxAliases = 64
)

// Entity is a node of the graph, in the shape of the MCP memory server's
// entity (name, entityType, observations) plus aliases. Name is the first
// spelling the entity was given, trimmed; any spelling that folds to it
// (see [Fold]), or to one of its aliases, names the same entity.
type Entity struct {
	Name         string    `json:"name"`
	Type         string    `json:"entityType"`
	Observations []string  `json:"observations"`
	Aliases      []string  `json:"aliases,omitempty"`
	CreatedAt    time.Time `json:"createdAt,omitzero"`
}

// Relation is a fact seen as the MCP memory server's relation: From
// —RelationType→ To, with no validity.
type Relation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// Relation returns the fact as a [Relation].
func (f *Fact) Relation() Relation {
	return Relation{From: f.Subject, To: f.Object, RelationType: f.Predicate}
}

// ObservationSet names observations of one entity, for AddObservations and
// DeleteObservations.
type ObservationSet struct {
	EntityName   string   `json:"entityName"`
	Observations []string `json:"observations"`
}

// Graph is a set of entities and the relations among them.
type Graph struct {
	Entities  []Entity   `json:"entities"`
	Relations []Relation `json:"relations"`
}

// Entity records: a version byte, then the entity as JSON. They are read
// by listings and searches, never by traversal.
const entityVersion = 1

func encodeEntity(e *Entity) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return append([]byte{entityVersion}, b...), nil
}

func decodeEntity(b []byte) (Entity, error) {
	var e Entity
	if len(b) == 0 || b[0] != entityVersion {
		return e, fmt.Errorf("%w: entity record", ErrCorrupt)
	}
	if err := json.Unmarshal(b[1:], &e); err != nil {
		return e, fmt.Errorf("%w: entity record: %v", ErrCorrupt, err)
	}
	return e, nil
}

func (tx *Tx) putEntity(folded string, e *Entity) error {
	b, err := encodeEntity(e)
	if err != nil {
		return err
	}
	if err := tx.entityChanged(folded, e); err != nil {
		return err
	}
	return tx.set(tx.k.name(tagEntity, folded), b)
}

// deleteEntity removes the entity record of folded.
func (tx *Tx) deleteEntity(folded string) error {
	if err := tx.entityChanged(folded, nil); err != nil {
		return err
	}
	return tx.del(tx.k.name(tagEntity, folded))
}

// entity reads the entity whose folded display name is folded.
func (tx *Tx) entity(folded string) (Entity, error) {
	b, err := tx.get(tx.k.name(tagEntity, folded))
	if errors.Is(err, kv.ErrNotFound) {
		return Entity{}, fmt.Errorf("%w: %q", ErrEntityNotFound, folded)
	} else if err != nil {
		return Entity{}, err
	}
	return decodeEntity(b)
}

// lookupEntity resolves a caller's name or alias to its entity.
func (tx *Tx) lookupEntity(name string) (string, Entity, error) {
	folded, ok, err := tx.canonical(name)
	if err != nil {
		return "", Entity{}, err
	}
	if !ok {
		return "", Entity{}, fmt.Errorf("%w: %q", ErrEntityNotFound, name)
	}
	e, err := tx.entity(folded)
	return folded, e, err
}

// Entity returns the entity that name (or an alias) names, or
// [ErrEntityNotFound].
func (tx *Tx) Entity(name string) (Entity, error) {
	_, e, err := tx.lookupEntity(name)
	return e, err
}

func checkObservation(o string) error {
	if o == "" || len(o) > MaxObservationLength || !utf8.ValidString(o) {
		return fmt.Errorf("%w: an observation must be 1-%d bytes of UTF-8", ErrInvalidEntity, MaxObservationLength)
	}
	return nil
}

func checkEntity(e *Entity) (folded string, err error) {
	if e.Name, folded, err = checkName("entity name", e.Name); err != nil {
		return "", err
	}
	if len(e.Type) > MaxNameLength || !utf8.ValidString(e.Type) {
		return "", fmt.Errorf("%w: type of %q is not UTF-8 or longer than %d bytes", ErrInvalidEntity, e.Name, MaxNameLength)
	}
	if len(e.Observations) > MaxObservations || len(e.Aliases) > MaxAliases {
		return "", fmt.Errorf("%w: %q has more than %d observations or %d aliases", ErrInvalidEntity, e.Name, MaxObservations, MaxAliases)
	}
	for _, o := range e.Observations {
		if err := checkObservation(o); err != nil {
			return "", err
		}
	}
	for i, a := range e.Aliases {
		if e.Aliases[i], _, err = checkName("alias", a); err != nil {
			return "", err
		}
	}
	return folded, nil
}

// addUnique appends the items of add that dst lacks and returns the result
// and the items added.
func addUnique(dst, add []string) ([]string, []string) {
	var added []string
	for _, a := range add {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
			added = append(added, a)
		}
	}
	return dst, added
}

// CreateEntities creates the entities whose names (and aliases) name no
// entity yet and returns them as stored. For a name that already names an
// entity nothing is created and the entity is not returned, but an empty
// Type is filled in and new observations and aliases are added: entities
// that facts created implicitly get their details this way.
//
// An alias that names another entity is [ErrAliasConflict]; a bad name,
// type, observation or alias is [ErrInvalidName] or [ErrInvalidEntity].
func (tx *Tx) CreateEntities(entities []Entity) ([]Entity, error) {
	now := tx.s.now()
	var created []Entity
	for _, e := range entities {
		folded, err := checkEntity(&e)
		if err != nil {
			return nil, err
		}
		display, exists, err := tx.resolve(folded)
		if err != nil {
			return nil, err
		}
		if exists {
			if err := tx.extend(Fold(display), e); err != nil {
				return nil, err
			}
			continue
		}
		obs, aliases := e.Observations, e.Aliases
		e.Observations, _ = addUnique([]string{}, obs)
		e.Aliases = nil
		if e.CreatedAt.IsZero() || !tx.keepRecordTimes {
			e.CreatedAt = now
		}
		if err := tx.putEntity(folded, &e); err != nil {
			return nil, err
		}
		if err := tx.setName(folded, e.Name); err != nil {
			return nil, err
		}
		if err := tx.extend(folded, Entity{Aliases: aliases}); err != nil {
			return nil, err
		}
		if e, err = tx.entity(folded); err != nil {
			return nil, err
		}
		created = append(created, e)
	}
	return created, nil
}

// extend adds what more carries (a type where the entity has none,
// observations, aliases) to the entity folded.
func (tx *Tx) extend(folded string, more Entity) error {
	e, err := tx.entity(folded)
	if err != nil {
		return err
	}
	if e.Type == "" {
		e.Type = more.Type
	}
	e.Observations, _ = addUnique(e.Observations, more.Observations)
	for _, a := range more.Aliases {
		display, fa, err := checkName("alias", a)
		if err != nil {
			return err
		}
		owner, ok, err := tx.resolve(fa)
		if err != nil {
			return err
		}
		switch {
		case ok && Fold(owner) != folded:
			return fmt.Errorf("%w: %q is %q", ErrAliasConflict, display, owner)
		case ok:
			continue // already this entity's name or alias
		}
		if err := tx.setName(fa, e.Name); err != nil {
			return err
		}
		e.Aliases = append(e.Aliases, display)
	}
	if len(e.Observations) > MaxObservations || len(e.Aliases) > MaxAliases {
		return fmt.Errorf("%w: %q would have more than %d observations or %d aliases", ErrInvalidEntity, e.Name, MaxObservations, MaxAliases)
	}
	return tx.putEntity(folded, &e)
}

// AddAliases makes each alias another name of the entity that name names,
// and returns the entity as stored.
func (tx *Tx) AddAliases(name string, aliases ...string) (Entity, error) {
	folded, _, err := tx.lookupEntity(name)
	if err != nil {
		return Entity{}, err
	}
	if err := tx.extend(folded, Entity{Aliases: aliases}); err != nil {
		return Entity{}, err
	}
	return tx.entity(folded)
}

// DeleteAliases removes aliases from the entity that name names; an alias
// the entity does not have, or that is its name, is left alone. It returns
// the entity as stored.
func (tx *Tx) DeleteAliases(name string, aliases ...string) (Entity, error) {
	folded, e, err := tx.lookupEntity(name)
	if err != nil {
		return Entity{}, err
	}
	for _, a := range aliases {
		fa := Fold(a)
		i := slices.IndexFunc(e.Aliases, func(x string) bool { return Fold(x) == fa })
		if i < 0 || fa == folded {
			continue
		}
		e.Aliases = slices.Delete(e.Aliases, i, i+1)
		if err := tx.deleteName(fa); err != nil {
			return Entity{}, err
		}
	}
	return e, tx.putEntity(folded, &e)
}

// CreateRelations relates each pair (see [Tx.Relate]) and returns the
// relations that were new; one that already holds is skipped.
func (tx *Tx) CreateRelations(relations []Relation) ([]Relation, error) {
	var created []Relation
	for _, r := range relations {
		f, isNew, err := tx.relate(Fact{Subject: r.From, Predicate: r.RelationType, Object: r.To})
		if err != nil {
			return nil, err
		}
		if isNew {
			created = append(created, f.Relation())
		}
	}
	return created, nil
}

// AddObservations adds observations to entities and returns, per entity,
// the ones that were new. An unknown entity is [ErrEntityNotFound].
func (tx *Tx) AddObservations(sets []ObservationSet) ([]ObservationSet, error) {
	out := make([]ObservationSet, 0, len(sets))
	for _, set := range sets {
		folded, e, err := tx.lookupEntity(set.EntityName)
		if err != nil {
			return nil, err
		}
		for _, o := range set.Observations {
			if err := checkObservation(o); err != nil {
				return nil, err
			}
		}
		var added []string
		e.Observations, added = addUnique(e.Observations, set.Observations)
		if len(e.Observations) > MaxObservations {
			return nil, fmt.Errorf("%w: %q would have more than %d observations", ErrInvalidEntity, e.Name, MaxObservations)
		}
		if err := tx.putEntity(folded, &e); err != nil {
			return nil, err
		}
		out = append(out, ObservationSet{EntityName: set.EntityName, Observations: added})
	}
	return out, nil
}

// DeleteObservations removes observations from entities; unknown entities
// and observations are ignored.
func (tx *Tx) DeleteObservations(sets []ObservationSet) error {
	for _, set := range sets {
		folded, e, err := tx.lookupEntity(set.EntityName)
		if errors.Is(err, ErrEntityNotFound) {
			continue
		} else if err != nil {
			return err
		}
		e.Observations = slices.DeleteFunc(e.Observations, func(o string) bool { return slices.Contains(set.Observations, o) })
		if err := tx.putEntity(folded, &e); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEntities removes entities, their aliases, and every fact (of any
// time) they are the subject or object of. Unknown names are ignored.
func (tx *Tx) DeleteEntities(names []string) error {
	for _, name := range names {
		folded, e, err := tx.lookupEntity(name)
		if errors.Is(err, ErrEntityNotFound) {
			continue
		} else if err != nil {
			return err
		}
		refs, err := tx.incident(folded)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if err := tx.deleteFact(r.s, r.p, r.o, r.id); err != nil {
				return err
			}
		}
		for _, a := range append([]string{e.Name}, e.Aliases...) {
			if err := tx.deleteName(Fold(a)); err != nil {
				return err
			}
		}
		if err := tx.deleteEntity(folded); err != nil {
			return err
		}
	}
	return nil
}

// factRef locates one stored fact.
type factRef struct {
	s, p, o string
	id      ulid.ULID
	fact    Fact
}

// incident returns every fact the entity is subject or object of, once.
func (tx *Tx) incident(folded string) ([]factRef, error) {
	var refs []factRef
	seen := map[ulid.ULID]bool{}
	for _, tag := range []byte{tagSPO, tagOSP} {
		prefix := bytes.Clone(tx.k.triple(tag, folded, "", "", nil))
		err := tx.scan(prefix, true, func(key, val []byte) (bool, error) {
			a, b, c, id, ok := splitTriple(key[len(tx.k.root)+1:])
			if !ok {
				return false, fmt.Errorf("%w: index key", ErrCorrupt)
			}
			u := ulid.ULID(id)
			if seen[u] {
				return true, nil
			}
			seen[u] = true
			f, err := decodeFact(val, id)
			if err != nil {
				return false, err
			}
			r := factRef{s: string(a), p: string(b), o: string(c), id: u, fact: f}
			if tag == tagOSP {
				r.s, r.p, r.o = string(b), string(c), string(a)
			}
			refs = append(refs, r)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// DeleteRelations removes every fact (of any time) with the relation's
// subject, predicate and object. Unknown entities are ignored.
func (tx *Tx) DeleteRelations(relations []Relation) error {
	for _, r := range relations {
		s, okS, err := tx.canonical(r.From)
		if err != nil {
			return err
		}
		o, okO, err := tx.canonical(r.To)
		if err != nil {
			return err
		}
		_, p, err := checkName("relation type", r.RelationType)
		if err != nil {
			return err
		}
		if !okS || !okO {
			continue
		}
		var ids []ulid.ULID
		prefix := bytes.Clone(tx.k.triple(tagSPO, s, p, o, nil))
		err = tx.scan(prefix, false, func(key, _ []byte) (bool, error) {
			ids = append(ids, ulid.ULID(key[len(key)-16:]))
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.deleteFact(s, p, o, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// MergeEntities folds the entity from into the entity into: from's name and
// aliases become aliases of into, its observations are added, its type
// fills an empty one, and every fact naming from now names into (ids and
// validity unchanged). It returns the merged entity.
func (tx *Tx) MergeEntities(into, from string) (Entity, error) {
	fi, target, err := tx.lookupEntity(into)
	if err != nil {
		return Entity{}, err
	}
	ff, gone, err := tx.lookupEntity(from)
	if err != nil {
		return Entity{}, err
	}
	if fi == ff {
		return target, nil
	}
	refs, err := tx.incident(ff)
	if err != nil {
		return Entity{}, err
	}
	for _, r := range refs {
		if err := tx.deleteFact(r.s, r.p, r.o, r.id); err != nil {
			return Entity{}, err
		}
		c := checkedFact{Fact: r.fact, s: r.s, p: r.p, o: r.o}
		if c.s == ff {
			c.s, c.Subject = fi, target.Name
		}
		if c.o == ff {
			c.o, c.Object = fi, target.Name
		}
		if err := tx.putFact(&c, r.id); err != nil {
			return Entity{}, err
		}
	}
	names := append([]string{gone.Name}, gone.Aliases...)
	for _, n := range names {
		if err := tx.deleteName(Fold(n)); err != nil {
			return Entity{}, err
		}
	}
	if err := tx.deleteEntity(ff); err != nil {
		return Entity{}, err
	}
	if err := tx.extend(fi, Entity{Type: gone.Type, Observations: gone.Observations, Aliases: names}); err != nil {
		return Entity{}, err
	}
	return tx.entity(fi)
}

// ReadOptions pages through a graph.
type ReadOptions struct {
	// Cursor continues from where the previous page ended ("" starts).
	Cursor string
	// Limit caps the entities plus relations of a page; zero means
	// [DefaultPageSize], at most [MaxPageSize].
	Limit int
}

// GraphPage is one page of [Tx.ReadGraph].
type GraphPage struct {
	Graph
	// Next is the cursor of the next page; "" when this page is the last.
	Next string `json:"next,omitempty"`
}

// ReadGraph returns a page of the graph: entities in order of their folded
// names, each followed by the relations it is the subject of that hold now.
// The pages of a listing, together, hold every entity and every relation
// once (if the graph does not change meanwhile).
func (tx *Tx) ReadGraph(opts ReadOptions) (GraphPage, error) {
	limit, err := pageLimit(opts.Limit)
	if err != nil {
		return GraphPage{}, err
	}
	// A cursor is 'e' name (resume at that entity) or 'r' name 0 suffix
	// (resume at that entity's relation whose SPO key ends in suffix).
	var start, resume []byte
	if opts.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
		if err != nil || len(raw) < 2 {
			return GraphPage{}, ErrInvalidCursor
		}
		switch start = raw[1:]; raw[0] {
		case 'e':
		case 'r':
			i := bytes.IndexByte(start, 0)
			if i <= 0 || i == len(start)-1 {
				return GraphPage{}, ErrInvalidCursor
			}
			start, resume = start[:i], start[i+1:]
		default:
			return GraphPage{}, ErrInvalidCursor
		}
	}
	page := GraphPage{Graph: Graph{Entities: []Entity{}, Relations: []Relation{}}}
	now := tx.s.now().UnixNano()
	entities := tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagEntity)})
	defer entities.Close()
	entities.Seek(append(tx.k.start(tagEntity), start...))
	count := 0
	var val []byte
	for ; entities.Valid(); entities.Next() {
		folded := entities.Key()[len(tx.k.root)+1:]
		skipEntity := resume != nil && bytes.Equal(folded, start)
		if !skipEntity {
			if count == limit {
				page.Next = base64.RawURLEncoding.EncodeToString(append([]byte{'e'}, folded...))
				return page, nil
			}
			if val, err = entities.Value(val[:0]); err != nil {
				return GraphPage{}, err
			}
			e, err := decodeEntity(val)
			if err != nil {
				return GraphPage{}, err
			}
			page.Entities = append(page.Entities, e)
			count++
		}
		next, err := tx.readRelations(&page, string(folded), resume, now, limit, &count)
		if err != nil || next != "" {
			page.Next = next
			return page, err
		}
		resume = nil
	}
	return page, nil
}

// readRelations appends the relations of one entity that hold at now,
// from the key suffix resume on, until the page is full; it then returns
// the cursor of the relation it stopped at.
func (tx *Tx) readRelations(page *GraphPage, folded string, resume []byte, now int64, limit int, count *int) (string, error) {
	prefix := bytes.Clone(tx.k.triple(tagSPO, folded, "", "", nil))
	it := tx.t.NewIterator(kv.IterOptions{Prefix: prefix, KeysOnly: true})
	defer it.Close()
	it.Seek(append(bytes.Clone(prefix), resume...))
	var val []byte
	var err error
	for ; it.Valid(); it.Next() {
		if val, err = it.Value(val[:0]); err != nil {
			return "", err
		}
		v, err := readValidity(val)
		if err != nil {
			return "", err
		}
		if !v.at(now) {
			continue
		}
		key := it.Key()
		if *count == limit {
			c := append(append([]byte{'r'}, folded...), 0)
			return base64.RawURLEncoding.EncodeToString(append(c, key[len(prefix):]...)), nil
		}
		f, err := decodeFact(val, key[len(key)-16:])
		if err != nil {
			return "", err
		}
		page.Relations = append(page.Relations, f.Relation())
		*count++
	}
	return "", nil
}
