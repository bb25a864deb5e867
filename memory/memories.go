package memory

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// Kind classifies a [Memory].
type Kind string

// The kinds of memory. They do not change how a memory is stored or
// recalled; they let callers filter and the context label what it shows.
const (
	// KindFact is something true about the user or the world: "Alice's
	// account number is 3942". The default.
	KindFact Kind = "fact"
	// KindPreference is what the user likes or wants: "prefers email".
	KindPreference Kind = "preference"
	// KindEpisode is something that happened: "booked a flight to Lisbon
	// on 3 May".
	KindEpisode Kind = "episode"
	// KindSummary condenses other memories or a conversation.
	KindSummary Kind = "summary"
	// KindObservation is what an agent noticed: "asks for short answers".
	KindObservation Kind = "observation"
)

// Valid reports whether k is one of the five kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindFact, KindPreference, KindEpisode, KindSummary, KindObservation:
		return true
	}
	return false
}

// Limits of a memory.
const (
	// MaxMemoryBytes bounds a memory's text.
	MaxMemoryBytes = 16 << 10
	// MaxTags bounds a memory's tags, and MaxTagLength one tag, in bytes.
	MaxTags      = 64
	MaxTagLength = 128
	// DefaultDedupThreshold is Options.DedupThreshold when zero: the cosine
	// similarity at or above which a new memory is a near-duplicate of an
	// existing one of the same kind.
	DefaultDedupThreshold = 0.95
)

// Record spaces of a user's (or tenant's) partition; see
// engine.Tx.PutRecord.
const (
	spaceMemories = "mem"
	spaceMessages = "msg"
)

// Memory is a unit of long-term recall: a fact, preference, episode, summary
// or observation about a user (or, in a scope without User, shared by a
// tenant). Memories are add-only: [Store.Remember] deduplicates, and
// [Store.UpdateMemory] writes a new version that supersedes the old one.
type Memory struct {
	// ID is assigned by Remember (a ULID). Ignored on Remember.
	ID string `json:"id,omitempty"`
	// Kind classifies the memory; empty means KindFact.
	Kind Kind `json:"kind"`
	// Text is the memory itself: required, valid UTF-8, at most
	// MaxMemoryBytes.
	Text string `json:"text"`
	// Tags label the memory for filtering (at most MaxTags, each 1 to
	// MaxTagLength bytes without control characters).
	Tags []string `json:"tags,omitempty"`
	// Metadata is free-form string data.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Source names what the memory came from, usually message ids.
	Source []string `json:"source,omitempty"`
	// Agent is the agent that wrote it: the scope's Agent on Remember.
	Agent string `json:"agent,omitempty"`
	// CreatedAt is when it was first remembered; set by Remember.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// ExpiresAt, when set, is when the memory is forgotten by itself: it is
	// never recalled after it and is swept from the indexes.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Importance, in [0, 1], is how much the memory matters to its writer:
	// stored and merged (the higher wins); Recall does not weigh it yet.
	Importance float64 `json:"importance,omitempty"`
	// Supersedes is the id of the version this memory replaced (set by
	// UpdateMemory).
	Supersedes string `json:"supersedes,omitempty"`
	// SupersededBy is set on a version that a newer one replaced; such a
	// version is only returned by Memory and MemoryHistory.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// normalize checks m and fills its defaults for storage at time now.
func (m *Memory) normalize(agent string, now time.Time) error {
	if m.Kind == "" {
		m.Kind = KindFact
	}
	m.Text = strings.TrimSpace(m.Text)
	var errs []error
	switch {
	case !m.Kind.Valid():
		errs = append(errs, fmt.Errorf("unknown kind %q", m.Kind))
	case m.Text == "":
		errs = append(errs, errors.New("empty text"))
	case len(m.Text) > MaxMemoryBytes:
		errs = append(errs, fmt.Errorf("text of %d bytes, limit %d", len(m.Text), MaxMemoryBytes))
	case !utf8.ValidString(m.Text):
		errs = append(errs, errors.New("text is not valid UTF-8"))
	}
	if len(m.Tags) > MaxTags {
		errs = append(errs, fmt.Errorf("%d tags, limit %d", len(m.Tags), MaxTags))
	}
	var tags []string
	for _, t := range m.Tags {
		if len(t) > MaxTagLength || engine.ValidateID(t) != nil {
			errs = append(errs, fmt.Errorf("bad tag %q", t))
			continue
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	m.Tags = tags
	for k, v := range m.Metadata {
		if engine.ValidateID(k) != nil || !utf8.ValidString(v) {
			errs = append(errs, fmt.Errorf("bad metadata key %q or value", k))
		}
	}
	for _, s := range m.Source {
		if !utf8.ValidString(s) || s == "" {
			errs = append(errs, fmt.Errorf("bad source %q", s))
		}
	}
	if m.Importance < 0 || m.Importance > 1 || m.Importance != m.Importance {
		errs = append(errs, fmt.Errorf("importance %v outside [0, 1]", m.Importance))
	}
	if err := engine.ValidateTime(m.ExpiresAt); err != nil {
		errs = append(errs, fmt.Errorf("ExpiresAt %w", err))
	} else if !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(now.Add(time.Second)) {
		errs = append(errs, fmt.Errorf("expires at %v, not in the future", m.ExpiresAt))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidMemory, errors.Join(errs...))
	}
	m.ID, m.Supersedes, m.SupersededBy = "", "", ""
	m.Agent = agent
	m.CreatedAt = now.UTC()
	return nil
}

// memoryHash is the exact-duplicate key of a memory: its kind and its text
// folded as entity names are (case, Unicode form and white space).
func memoryHash(k Kind, text string) []byte {
	h := sha256.New()
	h.Write([]byte(k))
	h.Write([]byte{0})
	h.Write([]byte(graph.Fold(text)))
	return h.Sum(nil)
}

// memoryMetaKey is the record metadata key that holds a memory's fields.
const memoryMetaKey = "memory"

// memoryTokensKey is the record metadata key that holds the token count of
// a memory's text as its preamble line shows it (see memoryTextTokens), so
// that Recall does not count it again per query: "<encoding>:<tokens>:<text
// bytes>", e.g. "o200k_base:17:82". Records written before it existed, or
// counted in another encoding, are counted when recalled (and cached; see
// textTokens). The text's length guards against a count of other text.
const memoryTokensKey = "tokens"

func memoryRecord(m *Memory, vec []float32) engine.Record {
	b, _ := json.Marshal(m) // strings, times and numbers always marshal
	return engine.Record{
		ID:        m.ID,
		Text:      m.Text,
		Vector:    vec,
		Metadata:  map[string]string{memoryMetaKey: string(b)},
		Time:      m.CreatedAt,
		ExpiresAt: m.ExpiresAt,
	}
}

func decodeMemory(r engine.Record) (Memory, error) {
	return decodeMemoryMeta(r.ID, r.Metadata[memoryMetaKey])
}

// decodeMemoryMeta decodes the memory with id whose record holds meta
// under memoryMetaKey.
func decodeMemoryMeta(id, meta string) (Memory, error) {
	if m, ok := decodeMemoryJSON(meta); ok {
		m.ID = id
		return m, nil
	}
	var m Memory
	if err := json.Unmarshal([]byte(meta), &m); err != nil {
		return Memory{}, fmt.Errorf("%w: memory %s: %v", ErrCorrupt, id, err)
	}
	m.ID = id
	return m, nil
}

// memoryScope is the partition scope of a memory call: Session never
// selects anything for memories, which belong to the user.
func memoryScope(scope Scope) (Scope, []byte, error) {
	scope.Session = ""
	p, err := scope.PartitionPrefix()
	return scope, p, err
}

// Remember stores m for the scope's user (or, with no User, for the
// tenant) and returns its id. Memories are add-only with deduplication: a
// memory of the same kind whose text is the same up to case and white space
// is not stored again, nor is one whose embedding is at least
// Options.DedupThreshold similar to an existing memory of the same kind;
// then the existing id is returned and the new memory's tags, metadata
// (new values win), sources, importance (the higher) and expiry (the later;
// none wins) are merged into it. The scope's Agent is recorded as the
// writer; its Session is ignored.
//
// Errors: [ErrInvalidScope], [ErrInvalidMemory]; nothing is written then.
// The exact check is transactional; two concurrent near-duplicates can both
// be stored.
func (s *Store) Remember(ctx context.Context, scope Scope, m Memory) (string, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	given := scope
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return "", err
	}
	now := time.Now()
	if err := m.normalize(scope.Agent, now); err != nil {
		return "", err
	}
	if err := s.redactMemory(ctx, given, &m); err != nil {
		return "", err
	}
	p, err := s.prepareMemory(ctx, scope, m)
	if err != nil {
		return "", err
	}
	var r remembered
	err = s.db.Update(ctx, func(tx *engine.Tx) (err error) {
		r, err = s.rememberTx(tx, scope, prefix, p, now)
		return err
	})
	if err != nil || r.dropped {
		// The text was embedded (and cached) but is not stored.
		s.dropEmbedded(ctx, m.Text)
	}
	if err != nil {
		return "", err
	}
	return r.id, nil
}

// preparedMemory is a normalized memory with its embedding and the id of
// its nearest stored near-duplicate, if any: the work of Remember done
// outside the transaction.
type preparedMemory struct {
	m    Memory
	vec  []float32
	near string
}

// prepareMemory embeds a normalized memory for the partition of scope (a
// memory scope) and looks for a near-duplicate of it.
func (s *Store) prepareMemory(ctx context.Context, scope Scope, m Memory) (*preparedMemory, error) {
	vecs, err := s.embed(ctx, []string{m.Text})
	if err != nil {
		return nil, err
	}
	p := &preparedMemory{m: m, vec: vecs[0]}
	if s.dedupThreshold > 0 {
		hits, err := s.db.Search(ctx, scope, p.vec, 1, &engine.SearchOptions{Space: spaceMemories})
		if err != nil {
			s.dropEmbedded(ctx, m.Text)
			return nil, err
		}
		if len(hits) == 1 && float64(hits[0].Score) >= s.dedupThreshold {
			if old, err := decodeMemory(hits[0].Record); err == nil && old.Kind == m.Kind {
				p.near = hits[0].ID
			}
		}
	}
	return p, nil
}

// remembered says what rememberTx did.
type remembered struct {
	id string
	// created says the memory is new; else it was merged into the stored
	// memory id.
	created bool
	// dropped says its text was merged into another and is not stored.
	dropped bool
}

// rememberTx stores a prepared memory in tx, or merges it into the stored
// memory it duplicates (the same text, or the near-duplicate found by
// prepareMemory).
func (s *Store) rememberTx(tx *engine.Tx, scope Scope, prefix []byte, p *preparedMemory, now time.Time) (remembered, error) {
	m := p.m
	hashKey := partitionPrefix(prefix).memoryHash(m.Kind, m.Text)
	existing := p.near
	switch b, err := tx.Get(hashKey); {
	case err == nil:
		existing = string(b)
	case !errors.Is(err, engine.ErrNotFound):
		return remembered{}, err
	}
	if existing != "" {
		rec, err := tx.GetRecord(scope, spaceMemories, existing, nil)
		switch {
		case err == nil:
			old, err := decodeMemory(rec)
			if err != nil {
				return remembered{}, err
			}
			merged := mergeMemory(old, m)
			r := remembered{id: existing, dropped: old.Text != m.Text}
			return r, s.putMemory(tx, scope, prefix, &old, &merged, rec.Vector)
		case !errors.Is(err, engine.ErrNotFound):
			return remembered{}, err
		}
		// A hash key outliving its memory: store anew.
	}
	m.ID = s.db.NewID(now).String()
	return remembered{id: m.ID, created: true}, s.putMemory(tx, scope, prefix, nil, &m, p.vec)
}

// mergeMemory folds a duplicate's fields into the stored memory.
func mergeMemory(old, dup Memory) Memory {
	out := old
	out.Tags = slices.Clone(old.Tags)
	for _, t := range dup.Tags {
		if !slices.Contains(out.Tags, t) && len(out.Tags) < MaxTags {
			out.Tags = append(out.Tags, t)
		}
	}
	if len(dup.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(old.Metadata)+len(dup.Metadata))
		for k, v := range old.Metadata {
			out.Metadata[k] = v
		}
		for k, v := range dup.Metadata {
			out.Metadata[k] = v
		}
	}
	out.Source = slices.Clone(old.Source)
	for _, src := range dup.Source {
		if !slices.Contains(out.Source, src) {
			out.Source = append(out.Source, src)
		}
	}
	out.Importance = max(old.Importance, dup.Importance)
	if old.ExpiresAt.IsZero() || dup.ExpiresAt.IsZero() {
		out.ExpiresAt = time.Time{}
	} else if dup.ExpiresAt.After(old.ExpiresAt) {
		out.ExpiresAt = dup.ExpiresAt
	}
	return out
}

// putMemory writes m (replacing old, when set, which has the same id): its
// record, its content-hash key and its expiry key.
func (s *Store) putMemory(tx *engine.Tx, scope Scope, prefix []byte, old, m *Memory, vec []float32) error {
	if old != nil && !old.ExpiresAt.IsZero() {
		if err := tx.Delete(expiryKey(prefix, old.ExpiresAt, old.ID)); err != nil {
			return err
		}
	}
	rec := memoryRecord(m, vec)
	if enc, err := s.encoder(); err == nil { // Open loaded it; without it Recall counts
		rec.Metadata[memoryTokensKey] = formatTextTokens(s.opts.Encoding, memoryTextTokens(enc, m.Text), m.Text)
	}
	if _, err := tx.PutRecord(scope, spaceMemories, rec); err != nil {
		return memoryError(err)
	}
	var ttl time.Duration
	if !m.ExpiresAt.IsZero() {
		ttl = time.Until(m.ExpiresAt)
		if err := tx.Set(expiryKey(prefix, m.ExpiresAt, m.ID), expiryValue(spaceMemories, m.Text)); err != nil {
			return err
		}
		if err := s.markExpiring(tx, scope, prefix); err != nil {
			return err
		}
	}
	// The hash key finds the memory by its text; another current memory
	// with the same text (an update can make one) keeps it.
	hashKey := partitionPrefix(prefix).memoryHash(m.Kind, m.Text)
	switch b, err := tx.Get(hashKey); {
	case err == nil && string(b) != m.ID:
		switch _, err := tx.GetRecord(scope, spaceMemories, string(b), &engine.GetRecordOptions{SkipVector: true}); {
		case err == nil:
			return nil
		case !errors.Is(err, engine.ErrNotFound):
			return err
		}
	case err != nil && !errors.Is(err, engine.ErrNotFound):
		return err
	}
	return tx.SetTTL(hashKey, []byte(m.ID), ttl)
}

// deleteHash deletes the hash key of m's text if it names m.
func deleteHash(tx *engine.Tx, prefix []byte, m *Memory) error {
	hashKey := partitionPrefix(prefix).memoryHash(m.Kind, m.Text)
	switch b, err := tx.Get(hashKey); {
	case errors.Is(err, engine.ErrNotFound):
		return nil
	case err != nil:
		return err
	case string(b) != m.ID:
		return nil // another memory's
	}
	return tx.Delete(hashKey)
}

// memoryError maps a record the engine refused to ErrInvalidMemory.
func memoryError(err error) error {
	if errors.Is(err, engine.ErrInvalidRecord) {
		return fmt.Errorf("%w: %w", ErrInvalidMemory, err)
	}
	return err
}

// UpdateMemory replaces the memory id with a new version and returns the
// new version's id. The new version takes m's fields (an empty Kind keeps
// the old one) and records the old id in Supersedes; the old version leaves
// recall and listings but stays readable through [Store.Memory] and
// [Store.MemoryHistory] until the memory is deleted.
//
// Errors: [ErrNotFound] for an unknown id, [ErrInvalidMemory] for a bad m.
func (s *Store) UpdateMemory(ctx context.Context, scope Scope, id string, m Memory) (string, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	given := scope
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return "", err
	}
	oldID, err := ulid.ParseStrict(id)
	if err != nil {
		return "", fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	now := time.Now()
	// Check and embed before the transaction, which must not wait on a
	// provider (the kind is checked again once the old one is known).
	check := m
	if check.Kind == "" {
		check.Kind = KindFact
	}
	if err := check.normalize(scope.Agent, now); err != nil {
		return "", err
	}
	if err := s.redactMemory(ctx, given, &check); err != nil {
		return "", err
	}
	m.Text, m.Metadata = check.Text, check.Metadata
	vecs, err := s.embed(ctx, []string{check.Text})
	if err != nil {
		return "", err
	}
	vec := vecs[0]
	var newID string
	err = s.db.Update(ctx, func(tx *engine.Tx) (err error) {
		newID, err = s.updateMemoryTx(tx, scope, prefix, oldID, m, vec, now)
		return err
	})
	if err != nil {
		s.dropEmbedded(ctx, check.Text)
		return "", err
	}
	return newID, nil
}

// Memory returns the memory with id, a current or a superseded version, or
// [ErrNotFound].
func (s *Store) Memory(ctx context.Context, scope Scope, id string) (Memory, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		m, err = getMemory(tx, scope, prefix, id)
		return err
	})
	return m, err
}

func getMemory(tx *engine.Tx, scope Scope, prefix []byte, id string) (Memory, error) {
	rec, err := tx.GetRecord(scope, spaceMemories, id, &engine.GetRecordOptions{SkipVector: true})
	if err == nil {
		return decodeMemory(rec)
	}
	if !errors.Is(err, engine.ErrNotFound) {
		return Memory{}, err
	}
	u, perr := ulid.ParseStrict(id)
	if perr != nil {
		return Memory{}, err
	}
	b, err := tx.Get(partitionPrefix(prefix).archive(u))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	if err := json.Unmarshal(b, &m); err != nil {
		return Memory{}, fmt.Errorf("%w: archived memory %s: %v", ErrCorrupt, id, err)
	}
	m.ID = id
	return m, nil
}

// MemoryHistory returns the versions of a memory, newest first: id's
// version, the one it superseded, and so on.
func (s *Store) MemoryHistory(ctx context.Context, scope Scope, id string) ([]Memory, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return nil, err
	}
	var out []Memory
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		for next := id; next != "" && len(out) < 10000; {
			m, err := getMemory(tx, scope, prefix, next)
			if errors.Is(err, engine.ErrNotFound) && len(out) > 0 {
				return nil // an older version expired
			}
			if err != nil {
				return err
			}
			out = append(out, m)
			next = m.Supersedes
		}
		return nil
	})
	return out, err
}

// MemoriesOptions selects and pages through current memories.
type MemoriesOptions struct {
	// Kind, when set, keeps memories of that kind.
	Kind Kind
	// Tag, when set, keeps memories with that tag.
	Tag string
	// After lists memories whose id sorts after this one (exclusive).
	After string
	// Limit caps the page; zero means [DefaultPageSize].
	Limit int
}

// Memories lists the scope's current memories in id (creation) order, a
// page at a time. Superseded versions and expired memories are left out.
func (s *Store) Memories(ctx context.Context, scope Scope, opts MemoriesOptions) ([]Memory, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	scope, _, err := memoryScope(scope)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(opts.Limit)
	if err != nil {
		return nil, err
	}
	var after ulid.ULID
	if opts.After != "" {
		if after, err = ulid.ParseStrict(opts.After); err != nil {
			return nil, fmt.Errorf("%w: After %q is not a memory id", ErrInvalidOptions, opts.After)
		}
	}
	var out []Memory
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		return tx.ScanRecords(scope, spaceMemories, after, func(r engine.Record) (bool, error) {
			m, err := decodeMemory(r)
			if err != nil {
				return false, err
			}
			if (opts.Kind == "" || m.Kind == opts.Kind) && (opts.Tag == "" || slices.Contains(m.Tags, opts.Tag)) {
				out = append(out, m)
			}
			return len(out) < limit, nil
		})
	})
	return out, err
}

// DeleteMemory erases a memory and every earlier version of it. A missing
// id returns [ErrNotFound].
func (s *Store) DeleteMemory(ctx context.Context, scope Scope, id string) error {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return err
	}
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	var texts []string
	err = s.db.Update(ctx, func(tx *engine.Tx) (err error) {
		texts, err = deleteMemoryTx(tx, scope, prefix, id)
		return err
	})
	if err != nil {
		return err
	}
	return s.forgetTexts(ctx, texts)
}

// updateMemoryTx replaces the stored memory oldID by a new version made of
// m (normalized, embedded as vec) in tx and returns the new version's id.
func (s *Store) updateMemoryTx(tx *engine.Tx, scope Scope, prefix []byte, oldID ulid.ULID, m Memory, vec []float32, now time.Time) (string, error) {
	id := oldID.String()
	rec, err := tx.GetRecord(scope, spaceMemories, id, &engine.GetRecordOptions{SkipVector: true})
	if err != nil {
		return "", err
	}
	old, err := decodeMemory(rec)
	if err != nil {
		return "", err
	}
	nm := m
	if nm.Kind == "" {
		nm.Kind = old.Kind
	}
	if err := nm.normalize(scope.Agent, now); err != nil {
		return "", err
	}
	nm.ID = s.db.NewID(now).String()
	nm.Supersedes = id
	// Archive the old version, then retire it.
	old.SupersededBy = nm.ID
	b, _ := json.Marshal(old)
	var ttl time.Duration
	if !old.ExpiresAt.IsZero() {
		ttl = max(time.Until(old.ExpiresAt), time.Second)
		if err := tx.Delete(expiryKey(prefix, old.ExpiresAt, id)); err != nil {
			return "", err
		}
	}
	if err := tx.SetTTL(partitionPrefix(prefix).archive(oldID), b, ttl); err != nil {
		return "", err
	}
	if err := tx.DeleteRecord(scope, spaceMemories, id); err != nil {
		return "", err
	}
	if err := deleteHash(tx, prefix, &old); err != nil {
		return "", err
	}
	return nm.ID, s.putMemory(tx, scope, prefix, nil, &nm, vec)
}

// deleteMemoryTx deletes the memory id with all its versions in tx and
// returns their texts, whose cached embeddings the caller erases.
func deleteMemoryTx(tx *engine.Tx, scope Scope, prefix []byte, id string) (texts []string, err error) {
	m, err := getMemory(tx, scope, prefix, id)
	if err != nil {
		return texts, err
	}
	for first := true; ; first = false {
		u, _ := ulid.ParseStrict(m.ID)
		texts = append(texts, m.Text)
		if first && m.SupersededBy == "" {
			if err := tx.DeleteRecord(scope, spaceMemories, m.ID); err != nil {
				return texts, err
			}
			if err := deleteHash(tx, prefix, &m); err != nil {
				return texts, err
			}
		}
		if err := tx.Delete(partitionPrefix(prefix).archive(u)); err != nil {
			return texts, err
		}
		if !m.ExpiresAt.IsZero() {
			if err := tx.Delete(expiryKey(prefix, m.ExpiresAt, m.ID)); err != nil {
				return texts, err
			}
		}
		if m.Supersedes == "" {
			return texts, nil
		}
		if m, err = getMemory(tx, scope, prefix, m.Supersedes); errors.Is(err, engine.ErrNotFound) {
			return texts, nil
		} else if err != nil {
			return texts, err
		}
	}
}
