// Package memory is Engram's agent API: an agent's conversations, kept per
// tenant, user and session, with bounded windows for the next model call.
// Memories, facts and hybrid recall build on the same [Store].
//
// The exported types are few: [Store], [Session], [Message] (with [Role] and
// [ToolCall]), [Scope] and the options of each call.
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
// [Store.Forget] erases a session, a user or a tenant with everything derived
// from it.
//
// # Caveats
//
//   - One process opens a directory at a time ([ErrLocked]).
//   - Token counts follow OpenAI's chat-format accounting (3 tokens of
//     framing per message); other model families tokenize differently, so
//     treat budgets for them as estimates.
//   - Setting the tokenizer installs tiktoken-go's offline loader for the
//     whole process (tiktoken-go has only a global loader); encodings stay
//     identical, they just never download.
//   - With SessionTTL, messages expire one by one, oldest first; a window
//     then starts at the oldest surviving message that is not a tool result
//     without its call.
//   - Forgotten bytes leave the files after compaction
//     (engine.DB.Compact).
package memory
