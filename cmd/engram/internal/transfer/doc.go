// Package transfer moves an Engram store's data in and out as files: JSONL
// for messages and memories, N-Quads for knowledge graphs. The engram
// import and export commands are built on it, and so can a server be.
//
// The exported names are few: the [Format] of a file; [ExportJSONL],
// [ExportNQuads] and [ExportDir] to write, which return [Counts]; [Plan],
// which turns names into [Input] files, and [Import] to read them back,
// with its [ImportOptions], [Progress] and [Stats]. Everything here takes
// a *memory.Store and the tenant to work in; it is safe for concurrent use
// as far as the store is.
//
// # JSONL
//
// One JSON object per line, UTF-8, each a message or a memory of the
// tenant the command names (the tenant is not in the file, so a file moves
// between tenants). A message line holds "type": "message", the user and
// session it belongs to, and the fields of memory.Message; a memory line
// holds "type": "memory", its user (left out for the tenant's shared
// memories) and the fields of memory.Memory:
//
//	{"type":"message","user":"alice","session":"renewal","id":"01KAB…","role":"user","content":"My renewal owner is Dana.","time":"2026-03-01T09:00:00Z"}
//	{"type":"memory","user":"alice","id":"01KAC…","kind":"preference","text":"Alice wants invoices sent to billing@alice.example","created_at":"2026-03-01T09:01:00Z"}
//
// Assistant messages carry "tool_calls" ([{"id","name","arguments"}]) and
// tool results "tool_call_id", as in the chat-completions API. A memory
// that a newer version replaced carries "superseded_by" and comes before
// it. A line without "type" is a message when it has "role", else a
// memory. Unknown fields are errors, so a misspelt field is never silently
// dropped; blank lines are skipped. Token counts ("tokens") are left out on
// export and ignored on import: the store counts them in its own encoding.
//
// # N-Quads
//
// A file holds one graph: of one user, or the tenant's shared graph. The
// quads are those of graph.Tx.Export (entities in the default graph, each
// fact in a graph named by its id, with its validity and record times);
// the first line is a comment that says whose graph it is, which other RDF
// tools skip:
//
//	# engram:user "alice"
//	<urn:engram:entity:Alice> <urn:engram:predicate:renewal_owner> <urn:engram:entity:Dana> <urn:engram:fact:01KAD…> .
//
// or "# engram:shared" for the tenant's shared graph. A file without that
// line (from another tool) needs the user given with ImportOptions.User.
//
// # Directories
//
// [ExportDir] writes a whole tenant (or one user) as a directory:
// engram.jsonl with every message and memory, shared.nq with the shared
// graph, and users/NAME.nq per user with a graph (NAME is the user id with
// unsafe bytes percent-encoded; the file's first line is what counts).
// [Plan] expands a directory into the files it holds.
//
// # Import: all or nothing per batch, resumable
//
// [Import] first reads every file to check that each line is well formed
// (JSON with known fields and valid ids, N-Quads that parse) and names a
// user it may write: a malformed line anywhere means nothing is imported,
// and the error names the file and line. It then writes in batches of
// consecutive lines of one session (messages) or one user (memories), at
// most ImportOptions.BatchSize records, each batch in one transaction: a
// record the store refuses (a tool result without its call, a memory with
// an unknown kind) fails its batch, which writes nothing, and stops the
// import; batches before it stay. A graph file is checked whole and then
// written in chunks, as memory.Store.ImportGraph does.
//
// Every record keeps its id, and records whose id is already stored are
// skipped, so running the same import again, after fixing the line an
// error named or after a crash, completes it without duplicates. Lines
// without an id (hand-written files) get new ids and are imported again
// on a second run.
//
// # Caveats
//
//   - An export reads each session, user and graph in its own
//     transaction, not the whole tenant in one snapshot: writes made while
//     it runs may be partly in it.
//   - Rolling summaries, cached embeddings and vector indexes are not
//     exported: they are derived, and rebuilt by the importing store.
//   - Memories are exported with their earlier versions, but expired
//     memories and messages are not.
package transfer
