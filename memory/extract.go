package memory

import (
	"context"
	"fmt"

	"github.com/engramdb/engram/graph"
)

// ExtractionMode says when the messages a store is given become memories,
// entities and facts (see "Memory formation" in the package doc).
type ExtractionMode int

// The extraction modes.
const (
	// ExtractAsync queues each appended message for extraction in the
	// transaction that appends it, and a background worker owned by the
	// store drains the queue. Append does not wait; [Store.Flush] does.
	// The default.
	ExtractAsync ExtractionMode = iota
	// ExtractSync extracts before Append returns. Append still succeeds
	// when extraction fails: the job stays queued for the worker.
	ExtractSync
	// ExtractOff extracts nothing: memories and facts come only from
	// [Store.Remember], [Store.Relate] and the other explicit writes.
	ExtractOff
)

// String returns "async", "sync" or "off".
func (m ExtractionMode) String() string {
	switch m {
	case ExtractAsync:
		return "async"
	case ExtractSync:
		return "sync"
	case ExtractOff:
		return "off"
	}
	return fmt.Sprintf("ExtractionMode(%d)", int(m))
}

// Extractor turns one message into memories, entities and facts. The
// store calls it from its extraction worker (or from Append, with
// [ExtractSync]), one message at a time and in order within a session,
// and writes what it returns in one transaction with Source set to the
// message's id, so that erasing the message's session erases it too.
//
// An Extractor must be safe for concurrent use. It should return an error
// only for a failure worth retrying (a network error, a timeout): the job
// is retried with backoff and parked after a bounded number of tries. For
// text it has nothing to say about it returns an empty Extraction. Items
// that break the store's rules (an empty name, an unknown kind) are
// dropped one by one and logged; the rest are written.
type Extractor interface {
	Extract(ctx context.Context, in *ExtractInput) (*Extraction, error)
}

// ExtractInput is what an [Extractor] is given about one message.
type ExtractInput struct {
	// Scope is the message's session: Tenant, User and Session.
	Scope Scope
	// Message is the message, with its ID, Time and Name set. Its Content
	// is as stored (after Options.Redactor).
	Message Message
	// Speaker is the entity the message's first person ("I", "my")
	// stands for: the message's Name when set, else for a user message
	// the user (User); empty for an assistant or tool message without a
	// Name, whose first person is the agent's.
	Speaker string
	// User is the name of the user's own entity in the graph: the scope's
	// User id. "My name is Alice" makes "Alice" an alias of it.
	User string
	// Previous holds up to [ExtractContextMessages] messages said before
	// Message in its session, oldest first, for pronouns and answers to
	// questions.
	Previous []Message
	// Known is what the store already holds for the user; never nil.
	Known Known
}

// ExtractContextMessages is how many earlier messages of the session an
// [ExtractInput] carries in Previous.
const ExtractContextMessages = 4

// Known gives an [Extractor] read access to what the store already holds
// for the message's user, so that it can link mentions to existing
// entities and update rather than repeat what is stored. Its methods read
// a consistent state of the store taken when the job started.
type Known interface {
	// Entities returns the display names of the user's graph entities that
	// text names, by name or alias (matched as whole words, case folded),
	// in order of first mention.
	Entities(text string) []string
	// Facts returns up to limit facts valid now whose subject or object is
	// one of the entities named.
	Facts(ctx context.Context, entities []string, limit int) ([]Fact, error)
	// Memories returns up to limit of the user's current memories that
	// best match text, best first.
	Memories(ctx context.Context, text string, limit int) ([]Memory, error)
}

// Extraction is what an [Extractor] found in one message. The store fills
// in what it owns: every memory's and fact's Source is the message's id,
// a memory's CreatedAt and a fact's CreatedAt are the time of the write,
// and a fact's zero ValidFrom is the message's Time.
type Extraction struct {
	// Memories to remember (deduplicated as [Store.Remember] does). Kind,
	// Text, Tags and Importance are used; ID, Source and Agent are set by
	// the store.
	Memories []Memory
	// Entities to create or extend: Name and Type, Aliases and
	// Observations added to an existing entity of that name.
	Entities []graph.Entity
	// Facts to relate.
	Facts []Fact
	// SingleValued lists the predicates of Facts that hold one object per
	// subject at a time, in addition to Options.SingleValued: a new fact
	// for one of them closes the validity of the subject's current fact
	// for it (a correction) instead of standing beside it.
	SingleValued []string
	// Invalidate lists facts that stopped holding when the message was
	// said ("Dana no longer owns it"): by ID, or else every current fact
	// with the Subject and Predicate (and the Object, when set).
	Invalidate []Fact
	// Updates replaces stored memories by new versions (see
	// [Store.UpdateMemory]): ID names the memory, Text (and Kind, Tags,
	// Importance when set) the new version.
	Updates []Memory
	// Deletes lists ids of stored memories the message made wrong.
	Deletes []string
}

// Empty reports whether the extraction holds nothing to write.
func (x *Extraction) Empty() bool {
	return x == nil || len(x.Memories)+len(x.Entities)+len(x.Facts)+len(x.Invalidate)+len(x.Updates)+len(x.Deletes) == 0
}

// defaultExtractor is the extractor of a store whose Options.Extractor is
// nil.
func defaultExtractor() Extractor { return RuleExtractor{} }

type nopExtractor struct{}

func (nopExtractor) Extract(context.Context, *ExtractInput) (*Extraction, error) {
	return &Extraction{}, nil
}
