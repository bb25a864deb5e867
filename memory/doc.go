// Package memory is Engram's agent API: an agent's conversations, kept per
// tenant, user and session, with bounded windows for the next model call;
// long-term memories; a knowledge graph of facts per user; and one hybrid
// [Store.Recall] that fuses them into the context the model sees.
//
// The exported types are 48, three of them aliases: [Scope] and
// [Durability] (package engine's, the store's own vocabulary) and the
// graph's [Fact] (what [Store.Relate] takes). By job:
//
//   - the store: [Store], [Options], [Scope], [Durability], [Retention],
//     [Usage], [UserUsage], [ListOptions], [ImportStats], [ImportError];
//   - conversations: [Session], [SessionInfo], [SessionsOptions],
//     [Message], [Role], [ToolCall], [MessagesOptions], [WindowOptions],
//     [Batch], [BatchResult];
//   - memories: [Memory], [Kind], [MemoriesOptions];
//   - recall: [Query], [Source], [Retrieval], [Recollection], [Item],
//     [Trace], [Candidate];
//   - memory formation: [ExtractionMode], [Extractor], [ExtractInput],
//     [Extraction], [Known], [RuleExtractor], [OpenAIExtractor],
//     [OpenAIExtractorOptions], [QueueInfo], [ParkedJob], [Summarizer],
//     [Extractive], [OpenAISummarizer], [OpenAISummarizerOptions],
//     [StatusError];
//   - personal data: [Redactor], [PII];
//   - the graph: [Fact].
//
// The graph's other types (entities, queries, walks) are package graph's
// own: [Store.ViewGraph] and [Store.UpdateGraph] are the one door to them.
//
// # Basics
//
//	store, err := memory.Open(dir, nil) // dir "" keeps everything in memory
//	if err != nil { ... }
//	defer store.Close()
//
//	sess := store.Session(memory.Scope{Tenant: "acme", User: "alice", Session: "renewal"})
//	err = sess.Append(ctx, memory.Message{Role: memory.RoleUser, Content: "My renewal owner is Dana."})
//	msgs, err := sess.Window(ctx, memory.WindowOptions{MaxMessages: 20, MaxTokens: 2000})
//
// A [Message] has the shape of the OpenAI chat-completions API: a [Role]
// (system, user, assistant, tool), content, an optional name, the tool calls
// of an assistant message and, on a tool result, the id of the call it
// answers. [Session.Append] checks every message of a batch and writes the
// batch in one transaction, or nothing.
//
// [Session.Window] returns the longest recent part of the session that fits a
// message and token budget: system messages are always kept, older messages
// are trimmed first, a tool call and its results stay together, and a window
// never starts with an orphan tool result. Tokens are counted with a real
// tiktoken encoding (o200k_base by default) that loads offline from the
// binary.
//
//	session log:  sys  u1  a1(call x)  tool(x)  u2  a2  u3
//	budget 5:     sys                  ──────── u2  a2  u3   ✗ starts with tool(x)
//	              sys                           u2  a2  u3   ✓
//
// # Facts
//
// Each user has a knowledge graph (and each tenant a shared one, for scopes
// with no User): [Store.Relate] stores a [Fact], Subject —Predicate→
// Object, valid from ValidFrom (default now) until ValidTo (zero: still
// valid). Predicates declared in Options.SingleValued hold one value per
// subject at a time: a new value closes the old one's validity instead of
// deleting it, so the past still answers.
//
//	store, _ := memory.Open(dir, &memory.Options{SingleValued: []string{"renewal_owner"}})
//	store.Relate(ctx, alice, memory.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: march})
//	store.Relate(ctx, alice, memory.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Eve", ValidFrom: june})
//	store.ViewGraph(ctx, alice, func(g *graph.Tx) error {
//		now, _ := g.Facts(graph.FactQuery{Subject: "Alice", Predicate: "renewal_owner"})             // Eve
//		then, _ := g.Facts(graph.FactQuery{Subject: "Alice", Predicate: "renewal_owner", AsOf: april}) // Dana
//		walk, _ := g.Traverse(graph.TraverseQuery{From: []string{"Alice"}, MaxHops: 2})
//		...
//	})
//
// Every graph operation but Relate is a method of [graph.Tx], run in one
// transaction by [Store.ViewGraph] (reads, from one snapshot) or
// [Store.UpdateGraph] (writes, all or nothing). Entities have the MCP
// memory server's shape and methods (graph.Tx's CreateEntities, ReadGraph,
// SearchNodes, ...); [Store.ImportGraph] bulk-loads a [graph.Dump].
// A [Batch] written with [Store.Write] commits messages and the facts drawn
// from them in one transaction, or nothing.
//
// [Store.Forget] erases a session, a user or a tenant with everything derived
// from it; forgetting a user erases the user's graph (a session's facts
// belong to its user and stay when only the session is forgotten).
//
// # Memories
//
// [Store.Remember] stores a [Memory] (a fact, preference, episode, summary
// or observation) for a user. Writes are add-only with deduplication: the
// same text up to case and white space, or an embedding at least
// Options.DedupThreshold similar, returns the existing id and merges tags
// and metadata. [Store.UpdateMemory] writes a new version that supersedes
// the old one; [Store.MemoryHistory] lists the versions. A memory with
// ExpiresAt is never recalled after it and is swept from the indexes.
//
// # Recall
//
// [Store.Recall] returns the context for the next model call:
//
//	window + rolling summary ─┐
//	memories: vector, BM25 ───┤
//	episodes: vector, BM25 ───┼─ reciprocal-rank fusion ─ decay ─ MMR ─ dedup ─ token budget ─▶ Recollection
//	graph: linked entities, ──┘                                                                 ChatMessages(), Trace
//	       facts valid now within Hops
//
// Every message a user or assistant writes is also indexed, with its
// session and date, as an episode of the user's past. A default [Query]
// draws on memories, episodes and the graph, so what the user said in one
// session is recalled in the next (messages in the current session's
// window are not recalled again); set Query.Sources to narrow it or to add
// [SourceShared]. Entities are linked by matching every name and alias of
// the user's graph against the query in one pass, on word boundaries; the
// first-person words "I", "me", "my", "mine" and "myself" link the user's
// own entity (the one named by Scope.User, or with it as an alias), so
// "Who owns my renewal?" reaches the user's renewal_owner fact. The facts
// reached are ranked by how many of the query's other terms they share,
// then by hops and recency; those that share none weigh a tenth as much.
// The result's Trace lists every candidate with its rank in each list, its
// fused score, and whether it was kept or why not.
//
//	rec, err := store.Recall(ctx, memory.Query{Scope: scope, Text: "Who owns my renewal?"})
//	chat := rec.ChatMessages() // a dated system preamble, then the window
//
// # Memory formation
//
// The store forms memories from the conversation by itself. Every user and
// assistant message appended (tool results too with
// Options.ExtractToolResults) is queued for extraction in the transaction
// that stores it, so a crash loses no job; a worker owned by the store
// drains the queue in order within each session and runs an [Extractor]
// over each message, with the few messages before it and read access to
// what the user's memories and graph already hold ([Known]). What it
// returns (memories, entities, facts, corrections) is written in one
// transaction with the job's removal, each item with Source set to the
// message's id, so running a job twice writes nothing new and forgetting
// the message's session takes it out of the user's memories and graph.
//
//	message ─▶ Append: message + queue entry, one transaction
//	                    │
//	           worker: Extractor(message, previous, Known) ─▶ memories, entities, facts + ledger, one transaction
//
// Options.Extraction picks [ExtractAsync] (the default: Append does not
// wait), [ExtractSync] (Append returns after extraction) or [ExtractOff].
// [Store.Flush] waits until what was appended before it has been
// extracted (a [*FlushError] counts what is left when its context ends
// first). In a store in PostgreSQL each partition's jobs run on the
// process that holds its lease; a serving process (one with
// [PostgresOptions.Addr]) takes the lease of a partition nobody holds to
// run the jobs queued there, and Flush waits for the jobs other
// processes run too. An extractor's failure never fails an Append: the job is
// retried with backoff, logged to Options.Logger, and parked after
// [ExtractMaxAttempts] tries (at once for a refusal or a bad key), where
// [Store.ExtractionQueue] shows it and [Store.RetryParked] queues it
// again. [Store.Close] leaves what is still queued on disk; the next Open
// resumes it. Messages brought in by [Store.ImportMessages] are not
// queued: an export carries the memories and graph formed from them.
//
// The default extractor, [RuleExtractor], is offline and rule-based: it
// finds entity mentions, the speaker as an entity, relation patterns
// ("my X is Y", "I work at Y", "I live in Y"), preferences and standing
// instructions, dated events, and corrections, and prefers saying nothing
// to saying something wrong. [NewOpenAIExtractor] asks a model over an
// OpenAI-compatible chat API (OpenAI, Ollama, vLLM) and decides, as mem0
// does, whether each memory is new, an update or a deletion of one the
// user already has.
//
// # Privacy
//
// With Options.Redactor set (nil, the default, stores text as given),
// personal data in message content, names, metadata values and tool-call
// arguments (their JSON strings), in memory text and metadata, and in a
// fact's subject and object, is replaced by a typed placeholder before
// anything is written, embedded, counted or summarized ([Store.Redact]
// does the same for what a caller writes through [Store.UpdateGraph]):
//
//	store, err := memory.Open(dir, &memory.Options{Redactor: memory.NewRedactor()})
//	"I am alice@example.com, card 4111 1111 1111 1111"  →  "I am [EMAIL_1], card [CARD_1]"
//
// [NewRedactor] is offline: e-mail addresses, phone numbers, payment card
// numbers (Luhn and issuer ranges), IBANs (mod 97 and length), IPv4 and
// IPv6 addresses, US Social Security numbers and UK National Insurance
// numbers, each confirmed by its check so that dates, versions, ISBNs,
// order ids and timestamps stay, matched in a normalised copy of the text
// (NFKC, Unicode spaces and dashes). docs/redaction.md gives its precision
// and recall on a labelled corpus. Any [Redactor] (a model-based one, say)
// can take its place: it only finds; the store numbers and replaces.
//
// Placeholders are consistent within a session: the same data, however
// written (Alice@Example.com and alice@example.com; 4111 1111 1111 1111 and
// 4111111111111111), gets the same number in every message of the session,
// and a memory remembered with the session's scope uses the session's
// numbers; another session numbers on its own. Facts and observations
// belong to the user and are numbered for the user. The numbering is kept
// in the session's keys (the user's, for what is numbered for the user) as
// a random salt, HMAC-SHA256 hashes of the data under it and counters,
// never the data, and it is erased with the session (or the user). Nothing
// maps a placeholder back to its data.
//
// # Caveats
//
//   - One process opens a directory at a time ([ErrLocked]).
//   - Token counts follow OpenAI's chat-format accounting (3 tokens of
//     framing per message); other model families tokenize differently, so
//     treat budgets for them as estimates.
//   - Tokens are counted by an internal encoder that reads the same rank
//     files as tiktoken-go (embedded, never downloaded) and gives the same
//     tokens, with the pre-tokenizer's expressions written as scanners.
//   - With SessionTTL, messages expire one by one, oldest first; a window
//     then starts at the oldest surviving message that is not a tool result
//     without its call.
//   - Forgotten bytes leave the files at the background compaction that
//     follows every erasure, within SweepInterval (one minute by
//     default; never with a negative SweepInterval), or at once with
//     [Store.Compact] (engram compact). A read transaction held open
//     across that compaction keeps what it can see until the next one.
//   - [Retention] ages are applied by the background sweep, so data lives
//     up to one SweepInterval past its age (more when a pass finds more
//     than it erases at once), and its bytes leave the files at the
//     compaction after that. The pass reads every key of the store once
//     per sweep. A message's text can outlive it in a memory or a fact
//     extracted from it: those age under Memories, not Messages.
//   - The default embedder is lexical (hashed words and character
//     n-grams), not semantic; configure a provider for recall by meaning.
//   - Near-duplicate detection searches before its transaction: two
//     concurrent near-duplicates can both be stored (exact ones cannot).
//   - Recall writes when a session's window has moved on: it folds the
//     messages that left it into the stored rolling summary.
//   - Redaction finds data by shape, not meaning: names and street
//     addresses stay; a phone number written as bare digits stays (it cannot
//     be told from an id). Numbers in tool-call arguments stay (a
//     placeholder there would not be JSON). The salt sits beside the hashes,
//     so whoever reads the files can test a guessed value against them: set
//     EncryptionKey to keep the files unreadable. A call whose text holds
//     data costs one more small transaction (the numbering).
//   - Token counts are stored with the records written (a message's
//     episode, a memory); Recall counts only what was stored without one
//     (by an older version, or under another Encoding), and a background
//     writer then stores those counts, a batch at a time, so the next
//     Recall finds them (a read-only store keeps counting them). A count
//     goes with its memory or message. A fact's line is counted when
//     recalled, from cached pieces (cheaper than reading a stored count).
//   - Token counts of a run of more than 512 bytes with no white space or
//     punctuation break (long words, repeated characters) are counted in
//     512-byte chunks, in linear time: up to about 0.4% over the exact
//     count on the runs measured, and a few tokens under it at worst (a
//     review found 2 under, at 646 and 1,164 bytes); other text counts
//     exactly.
package memory
