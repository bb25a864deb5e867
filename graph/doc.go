// Package graph will hold Engram's temporal knowledge graph: triples with
// validity intervals in SPO, POS and OSP indexes on package kv, entities with
// aliases and observations, multi-hop traversal and N-Quads interchange.
//
// # Basics
//
// Nothing is exported yet: the graph lands with the knowledge-graph work
// (issue 4). The package exists now so that the module's layout is fixed
// from the start.
//
// # Caveats
//
// The package will import only kv from this module, so that facts can be
// written in the same transaction as the messages they came from.
package graph
