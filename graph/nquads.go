package graph

// N-Quads interchange: the mapping between a graph and quads is documented
// on [Tx.Export]; this comment says how the two directions are built. The
// writer is in nquads_write.go, the parser in nquads_read.go, and the
// vocabulary both share is below.
//
// Export streams: it walks the entity records ('e' keys) and then the SPO
// index ('s' keys) of one kv transaction, decodes one record at a time and
// appends its lines to one reused buffer, so memory does not grow with the
// graph. It formats the quads itself rather than through quad.Value and
// nquads.Writer: quad.Time prints whole seconds (a round trip would lose
// nanoseconds), quad.String leaves control characters other than \t \n \r
// raw, and a value per term would cost allocations on every line. What it
// writes is a subset of what nquads.Parse reads; the tests check it against
// quad's own formatting.
//
// Import reads lines itself and hands each to nquads.Parse, because
// nquads.Reader neither reports line numbers nor refuses a quad with a
// missing term (it skips it). nquads.Parse panics on some escapes (a
// \U escape above U+7FFFFFFF overflows strconv.ParseInt in unEscape); the
// panic is recovered and reported as ErrInvalidNQuads. nquads turns typed
// literals it knows (xsd:dateTime, xsd:double, xsd:integer, xsd:boolean)
// into quad.Time, quad.Float, quad.Int and quad.Bool while parsing, unless
// its global AutoConvertTypedString is off (this file does not touch it),
// so every value is accepted both ways.
//
// Parsing collects drafts keyed by entity name and by fact id, so quads may
// come in any order; a draft becomes part of the Dump once the whole input
// is read and every fact id has its main quad.

// The engram vocabulary.
const (
	iriEngram      = "urn:engram:"
	iriEntity      = "urn:engram:entity:"
	iriPredicate   = "urn:engram:predicate:"
	iriFact        = "urn:engram:fact:"
	iriValidFrom   = "urn:engram:validFrom"
	iriValidTo     = "urn:engram:validTo"
	iriCreatedAt   = "urn:engram:createdAt"
	iriExpiredAt   = "urn:engram:expiredAt"
	iriSource      = "urn:engram:source"
	iriConfidence  = "urn:engram:confidence"
	iriEntityType  = "urn:engram:entityType"
	iriAlias       = "urn:engram:alias"
	iriObservation = "urn:engram:observation"
	iriLabel       = "http://www.w3.org/2000/01/rdf-schema#label"
	xsdDateTime    = "http://www.w3.org/2001/XMLSchema#dateTime"
	xsdDouble      = "http://www.w3.org/2001/XMLSchema#double"
)
