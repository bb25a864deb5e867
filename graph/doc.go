// Package graph is Engram's knowledge graph: a temporal triple store on
// [kv], with entities, aliases, observations, multi-hop traversal and
// N-Quads interchange.
//
// # Basics
//
// A [Fact] is a triple Subject —Predicate→ Object with bi-temporal
// validity: it holds over event time [ValidFrom, ValidTo), and the store
// recorded it at CreatedAt (and, once it stopped holding, at ExpiredAt).
// Subjects and objects are [Entity] names: an entity has a display name (the
// first spelling it was given), a type, aliases and observations, in the
// shape of the MCP memory server's entities. Names, aliases and predicates
// compare folded ([Fold]: case and white space do not matter).
//
// The package has few types: [Store] holds the configuration (which
// predicates are single-valued, the default fan-out bound) and [Tx] is one
// graph inside one kv transaction, so facts commit or roll back together
// with whatever else that transaction writes (the messages they came from):
//
//	s, _ := graph.New(&graph.Options{SingleValued: []string{"renewal_owner"}})
//	err := db.Update(ctx, func(t *kv.Txn) error {
//		g := s.Tx(t, root)
//		_, err := g.Relate(graph.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"})
//		return err
//	})
//
// A graph lives under a root key prefix chosen by the caller (package memory
// gives each user its own), with three indexes of every fact:
//
//	SPO  subject → predicate → object   facts of a subject; its outgoing edges
//	OSP  object → subject → predicate   incoming edges
//	POS  predicate → object → subject   who has this value for that predicate
//
// Queries ([Tx.Facts], [Tx.Neighbors], [Tx.Traverse], [Tx.ShortestPath])
// answer for now by default and for any event time with AsOf;
// [Tx.History] lists every version of a (subject, predicate) pair. A
// traversal is breadth-first, returns each fact once with its hop count and
// path, and takes at most MaxFanout facts per entity and direction, so a
// hub entity cannot blow up a query.
//
// Single-valued predicates ([Options.SingleValued]) keep one value per
// subject at a time: a new fact closes the validity of the subject's
// earlier facts for that predicate at its ValidFrom, instead of deleting
// them, so "who owned the renewal in March?" still has an answer. Nothing
// else ever invalidates a fact: not a fact of another predicate, and not a
// fact of another subject.
//
// The methods named like the MCP memory server's tools (CreateEntities,
// CreateRelations, AddObservations, DeleteEntities, DeleteObservations,
// DeleteRelations, ReadGraph, SearchNodes, OpenNodes) have its semantics,
// with listings paged: ReadGraph never returns an unbounded dump.
//
// A caller that keeps a value derived from each fact (package memory kept
// its token count, up to the version that counted facts at recall) gives
// [Options.Annotation]: the value is stored beside
// the fact whenever the fact is stored, rewritten with it, and deleted
// with it by every path that deletes a fact, in the same transaction, so
// nothing derived from a deleted fact's text is left behind.
//
// # Search
//
// [Tx.SearchNodes] keeps the MCP memory server's case-insensitive
// substring match, and its order and limit, exactly. The Store keeps per
// graph an in-memory index of what it matches (every entity's folded name,
// type, aliases and observations, back to back in name order, and a suffix
// array over them, index/suffixarray), so a search costs about the length
// of the query times log n plus its matches, not a decode of every entity.
// Entities changed since the array was built are scanned apart until they
// are an eighth of the graph, when the next search builds it again from
// memory, without blocking writers or other searches. The first search of
// a graph builds its index from the store.
//
// Each transaction that writes an entity also writes one generation key of
// the graph (without reading it, so no new conflict), under a writer id of
// its Store. An index remembers the generation keys of the state it
// reflects and answers only a snapshot that holds the same ones: a write
// by another Store, another process or PostgreSQL peer, a restore or an
// import makes the next search build the index again (or scan, when builds
// keep going to waste). Writes through the Store update the index when
// they commit. Nothing else is cached, so no search answers from a stale
// index. [Store.SearchIndexBytes] estimates an index's memory (about 650
// bytes per entity of two short sentences) and [Store.DropSearchIndexes]
// frees it.
//
// # N-Quads
//
// [Tx.Export] writes a graph (every entity and every fact of every time) as
// N-Quads, and [Store.Import] reads them back, through the cayley project's
// quad and quad/nquads packages, so a graph moves between Engram, cayley
// and RDF tools. A fact is its triple in a named graph of its own, the fact
// IRI, which also carries its validity, record times, source and
// confidence; the mapping is documented on [Tx.Export]. Quads from other
// tools import as facts. Import parses and checks the whole input before it
// writes: malformed input is [ErrInvalidNQuads] and writes nothing.
//
// # Caveats
//
//   - Use one [Tx] per kv transaction and root. Relate finds duplicates and
//     applies the single-valued rule through an overlay of the Tx's own
//     writes; a second Tx on the same root in the same transaction is not
//     seen by the first.
//   - A traversal reads a hub's facts in index order, so which MaxFanout
//     facts it takes from a hub is the first in that order (by predicate,
//     then object), not the most recent.
//   - Facts that no longer hold stay in the indexes (that is the history),
//     and "now" queries skip them; a pair with a very long history costs
//     its length to skip.
//   - DeleteEntities and DeleteRelations remove facts of every time; use
//     Invalidate to record that a fact stopped holding.
//   - Store.Load writes large dumps in several transactions: see its
//     documentation for what a failure midway leaves.
//   - Every Store that writes a graph adds a generation key to it (16
//     bytes and a 16-byte token; one more for each further write of the
//     Store in flight at the same time), read by each indexed search; a
//     graph written by many short-lived processes gathers many. A graph with no
//     generation key (written before the index) scans until its next
//     entity write. A search inside a transaction that wrote entities
//     scans.
//   - A search that builds an index holds the graph's texts and the suffix
//     array (about five bytes per byte of text) until the index is dropped;
//     a search that finds the index stale right after another writer's
//     commit scans.
package graph
