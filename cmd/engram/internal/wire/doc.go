// Package wire holds the JSON shapes that more than one of the engram
// command's interfaces writes, so that the HTTP API, the MCP server and the
// CLI cannot drift apart. Today that is the result of a Recall: [Recall],
// with its [Item] and [Trace] of [Candidate], built by [NewRecall] from a
// [memory.Recollection].
//
// # Basics
//
// Each interface embeds [Recall] in its own response, next to the fields
// only it has, and encoding/json flattens it:
//
//	POST /v1/recall        {messages ([]memory.Message), summary, preamble, items, trace}
//	MCP tool recall        {messages (the chat shape), items, trace}
//	engram recall --json   {messages ([]memory.Message), items, trace}
//
// The types carry two tags: json, which names the fields, and jsonschema,
// which the MCP SDK (github.com/google/jsonschema-go) reads to describe
// them in the recall tool's output schema. Field names are snake_case.
// The HTTP document, cmd/engram/internal/httpapi/openapi.json, describes
// the same fields as RecallItem, RecallTrace and RecallCandidate; a test in
// httpapi checks it against these types.
//
// # Caveats
//
// A field without omitempty or omitzero is always written, never as null:
// [NewRecall] turns nil slices and maps into empty ones, because the MCP SDK
// validates every result against the schema it inferred, which has no null
// for a map. Adding or renaming a field changes three interfaces at once:
// update openapi.json with it.
//
// Durations are milliseconds as floating-point numbers (took_ms,
// embed_ms), not Go's nanosecond integers, so that a client in any
// language reads them without a conversion table.
package wire
