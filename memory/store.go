package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// Scope says whose memory a call reads or writes: Tenant (a hard partition),
// User, Agent and Session. See [engine.Scope] for the rules of its ids.
type Scope = engine.Scope

// Durability says when a write is acknowledged.
type Durability = engine.Durability

const (
	// Sync acknowledges a write once it is on disk: it survives kill -9 and
	// power loss. The default.
	Sync = engine.Sync
	// Async acknowledges a write once the operating system has it: it
	// survives the process being killed, not a machine crash. Appends are
	// about two orders of magnitude faster (see docs/benchmarks.md).
	Async = engine.Async
)

// Limits and defaults.
const (
	// DefaultMaxMessageBytes is the default Options.MaxMessageBytes.
	DefaultMaxMessageBytes = 256 << 10
	// MaxMessageBytesLimit is the largest Options.MaxMessageBytes: one
	// message must fit in one storage transaction.
	MaxMessageBytesLimit = 1 << 20
	// DefaultWindowMessages is the message budget of a window when
	// WindowOptions.MaxMessages is zero.
	DefaultWindowMessages = 50
	// DefaultPageSize is the page size of a listing whose Limit is zero.
	DefaultPageSize = 100
)

// Options configures a [Store]. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// Durability of writes. Zero is [Sync].
	Durability Durability

	// EncryptionKey encrypts every file at rest with AES when set (16, 24 or
	// 32 bytes); the same key must be given on every later Open.
	EncryptionKey []byte

	// Logger receives the storage layer's log lines and the store's
	// warnings (a failed sweep or summary refresh). Nil is silent.
	Logger *slog.Logger

	// Postgres, when set, keeps the store in a PostgreSQL database
	// instead of a Badger directory (Open's dir must be ""). Several
	// processes may open one such store: each (tenant, user) partition is
	// written by one of them at a time, the holder of its lease (see
	// [PostgresOptions] and docs/cluster.md).
	// The background work (extraction, sweeps, retention) of a process
	// touches only the partitions it holds. Durability does not apply.
	Postgres *PostgresOptions

	// ReadOnly opens an existing store on disk for reading only: no file
	// of it is written (see [engine.Options.ReadOnly]), no sweep or
	// extraction runs, and every write fails. A store that was not closed
	// cleanly fails with kv.ErrNeedsRecovery: open it read-write once.
	// Ignored with Postgres.
	ReadOnly bool

	// Encoding is the tiktoken encoding that counts tokens: "o200k_base"
	// (the default, GPT-4o and later), "cl100k_base" (GPT-4, GPT-3.5),
	// "p50k_base" or "r50k_base". All load offline from the binary.
	Encoding string

	// MaxMessageBytes bounds one stored message (its content, tool calls and
	// metadata, encoded). Zero means [DefaultMaxMessageBytes]; at most
	// [MaxMessageBytesLimit].
	MaxMessageBytes int

	// SessionTTL, when positive, makes conversation data expire: each
	// message is erased SessionTTL after it was appended, and a session
	// leaves the listing SessionTTL after its last append. Zero keeps
	// messages until they are forgotten. Resolution is one second.
	SessionTTL time.Duration

	// SingleValued lists the graph predicates that hold one object per
	// subject at a time, such as "renewal_owner": a new fact closes the
	// validity of the subject's earlier fact instead of deleting it, so
	// questions about the past still have answers. See [Store.Relate].
	SingleValued []string

	// Embedder turns memories, messages and queries into vectors. Nil means
	// the offline hashing embedder (embed.NewHashing), which is lexical,
	// not semantic; set a local static model (embed.NewStatic) or a
	// provider (embed.NewOllama, embed.NewOpenAI) for recall by meaning. A
	// provider is wrapped in a cache kept in the store.
	//
	// All vectors of a store come from one embedder: the store records its
	// provider, model and dimension with its first vector, and Open refuses
	// another with [ErrEmbedderMismatch]. Opened with a nil Embedder, a
	// store of another embedder can still be read, exported and
	// administered, but every call that needs a vector fails with
	// ErrEmbedderMismatch. To change models, export the store and import it
	// into a new one opened with the new embedder.
	Embedder embed.Embedder

	// Model, when set, names a static model pulled with `engram model
	// pull NAME` (embed.Pull) to use as the Embedder, as
	// embed.OpenModel(Model, nil) opens it: "potion-base-8M", or
	// "org/name[@revision]". Open never downloads: a model not pulled is
	// embed.ErrModelNotPulled. Setting both Model and Embedder is
	// ErrInvalidOptions.
	Model string

	// VectorWeight is the weight of vector search in Recall's hybrid
	// fusion, against 1 for BM25 and the graph; negative leaves vector
	// search out of hybrid recall. Zero means 1 with an embedder by
	// meaning (embed.Static, or a provider) and none with the hashing
	// embedder (the default), whose vectors are lexical: they repeat
	// BM25's evidence with more noise, and fusing them lowers recall
	// (measured on LoCoMo: see docs/benchmarks.md).
	VectorWeight float64

	// DedupThreshold is the cosine similarity at or above which
	// [Store.Remember] treats a new memory as a near-duplicate of an
	// existing one of the same kind. Zero means [DefaultDedupThreshold];
	// negative turns near-duplicate detection off (exact duplicates are
	// always caught).
	DedupThreshold float64

	// SweepInterval is how often the store removes expired memories and
	// messages from its indexes (they are never recalled once expired,
	// swept or not), and how long after an erasure ([Store.Forget], a
	// sweep) its background compaction takes the bytes out of the files.
	// Zero means one minute; negative turns both off ([Store.Sweep] and
	// [Store.Compact] still work).
	SweepInterval time.Duration

	// Summarizer condenses the messages that leave a session's window into
	// its rolling summary, which Recall shows the model. Nil means
	// [Extractive], offline.
	Summarizer Summarizer

	// SummaryTokens bounds a session's rolling summary. Zero means
	// [DefaultSummaryTokens].
	SummaryTokens int

	// Redactor, when set, replaces personal data in message and memory
	// text with placeholders ("[EMAIL_1]") before anything is written,
	// embedded or extracted. Nil (the default) stores text as given;
	// [NewRedactor] is the offline default. See "Privacy" in the package
	// doc.
	Redactor Redactor

	// Retention erases messages, episodes and memories older than their
	// kind's age, at the background sweep; zero ages (the default) keep
	// everything until it is forgotten. See [Retention].
	Retention Retention

	// Extraction says when appended messages become memories, entities
	// and facts: [ExtractAsync] (the default) in the background,
	// [ExtractSync] before Append returns, or [ExtractOff]. See "Memory
	// formation" in the package doc.
	Extraction ExtractionMode

	// Extractor forms memories from messages. Nil means [RuleExtractor],
	// offline and rule-based; [NewOpenAIExtractor] asks a model.
	Extractor Extractor

	// ExtractToolResults queues tool results for extraction too; by
	// default only user and assistant messages are.
	ExtractToolResults bool

	// Synonyms expands Recall's BM25 query with WordNet synonyms of its
	// words at half weight (index.ExpandQuery; WordNet 3.0 ships in the
	// binary), so "What automobile does she own?" finds "Alice drives a
	// red car" with the default hashing embedder. Off by default: on the
	// LoCoMo sample it gained one question of 150 at recall@10, too little
	// to tell from noise (see docs/benchmarks.md).
	Synonyms bool

	// BackgroundShare bounds the time each kind of background work
	// (extraction, sweeps, vector snapshots, token count write-back) spends working while requests
	// are being served: after a unit of work it stands aside until its
	// working time is at most this share of the elapsed time, so it takes
	// at most this share of a core from requests. With no requests in
	// flight it runs at full speed and catches up. Zero means
	// [DefaultBackgroundShare]; 1 never pauses; outside (0, 1] is refused.
	// [Store.BackgroundStats] reports what it did.
	BackgroundShare float64

	// PartitionCacheBytes bounds the memory of the users' loaded indexes
	// (vectors, BM25, id maps; see [engine.Options.PartitionCacheBytes]):
	// past it the least recently used users' are evicted and loaded again
	// on their next use, so memory follows the users in use, not every
	// user ever touched. Zero means [engine.DefaultPartitionCacheBytes], a
	// quarter of the memory at most 1 GiB; negative is refused.
	PartitionCacheBytes int64

	// BlockCacheBytes is the size of the store's cache of decompressed
	// blocks of its files ([engine.Options.BlockCacheBytes]). Zero means
	// 8 MiB; negative is refused. Recall reads records and facts through
	// it: a larger cache, up to the size of the store, makes a Recall of
	// a user whose data is not cached faster (measured at 300 users: 256
	// MiB cut Recall's p50 by a third), at up to that much more memory.
	BlockCacheBytes int64
}

// maxTTL bounds a time to live: expiry times are stored as int64 Unix
// nanoseconds, which end in 2262 (see [ErrInvalidTime]); a century keeps
// clear of that.
const maxTTL = 100 * 365 * 24 * time.Hour

func (o *Options) validate() error {
	var errs []error
	switch o.Durability {
	case Sync, Async:
	default:
		errs = append(errs, fmt.Errorf("Durability %d is neither Sync nor Async", int(o.Durability)))
	}
	if !knownEncoding(o.Encoding) {
		errs = append(errs, fmt.Errorf("Encoding %q is not one of %v", o.Encoding, encodings))
	}
	if o.MaxMessageBytes < 0 || o.MaxMessageBytes > MaxMessageBytesLimit {
		errs = append(errs, fmt.Errorf("MaxMessageBytes %d is outside [0, %d]", o.MaxMessageBytes, MaxMessageBytesLimit))
	}
	if o.SessionTTL < 0 || o.SessionTTL > maxTTL {
		errs = append(errs, fmt.Errorf("SessionTTL %v is outside [0, %v]", o.SessionTTL, maxTTL))
	}
	if o.DedupThreshold > 1 || o.DedupThreshold != o.DedupThreshold {
		errs = append(errs, fmt.Errorf("DedupThreshold %v is above 1", o.DedupThreshold))
	}
	if o.VectorWeight != o.VectorWeight || o.VectorWeight > 100 {
		errs = append(errs, fmt.Errorf("VectorWeight %v is above 100", o.VectorWeight))
	}
	if o.PartitionCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("PartitionCacheBytes %d is negative", o.PartitionCacheBytes))
	}
	if o.BlockCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("BlockCacheBytes %d is negative", o.BlockCacheBytes))
	}
	if o.SummaryTokens < 0 {
		errs = append(errs, fmt.Errorf("SummaryTokens %d is negative", o.SummaryTokens))
	}
	if !(o.BackgroundShare >= 0 && o.BackgroundShare <= 1) {
		errs = append(errs, fmt.Errorf("BackgroundShare %v is outside [0, 1]", o.BackgroundShare))
	}
	if o.Extraction < ExtractAsync || o.Extraction > ExtractOff {
		errs = append(errs, fmt.Errorf("unknown Extraction %d", int(o.Extraction)))
	}
	errs = append(errs, o.Retention.validate()...)
	if _, err := graph.New(&graph.Options{SingleValued: o.SingleValued}); err != nil {
		errs = append(errs, fmt.Errorf("SingleValued: %w", err))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

// Store is an agent's memory: conversations with their windows and rolling
// summaries, memories, the knowledge graph, and the hybrid [Store.Recall]
// over all of them. It is safe for concurrent use by multiple goroutines.
type Store struct {
	db    *engine.DB
	opts  Options
	graph *graph.Store

	embedder       embed.Embedder
	cache          *embed.Cache // the embedder's cache, when it has one
	dedupThreshold float64
	vectorWeight   float64
	summarizer     Summarizer
	nameCache      nameCache

	// sweep tracks the partitions that hold expiring data, for the
	// background sweeper.
	sweep sweeper

	// extractor forms memories from messages; worker runs it (nil with
	// ExtractOff).
	extractor Extractor
	worker    *worker

	// pace keeps background work from competing with requests.
	pace *pacer

	// writeBack writes the token counts Recall had to compute (see
	// writeback.go); a read-only store's queues nothing.
	writeBack writeBack

	// sessionLocks serialize appends to one session inside this process, so
	// that ids stay in append order and tool-call checks see every earlier
	// call; the store's directory lock keeps other processes out.
	sessionLocks [64]sync.Mutex
}

// openModel sets Embedder to the pulled model Model names, if any.
func (o *Options) openModel() error {
	if o.Model == "" {
		return nil
	}
	if o.Embedder != nil {
		return fmt.Errorf("%w: Model %q and an Embedder: set one", ErrInvalidOptions, o.Model)
	}
	st, err := embed.OpenModel(o.Model, nil)
	if err != nil {
		return err
	}
	o.Embedder = st
	return nil
}

// Open opens the store in dir, creating it if needed; dir "" keeps
// everything in memory (nothing survives Close). A nil opts means defaults.
//
// Open returns [ErrLocked] when another process has dir open,
// [ErrEncryptionKey] for a wrong or missing key and [ErrInvalidOptions] for
// bad options (the error names every bad field).
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Encoding == "" {
		o.Encoding = DefaultEncoding
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.ReadOnly && o.Postgres == nil {
		o.SweepInterval, o.Extraction = -1, ExtractOff // both write
	}
	g, err := graph.New(&graph.Options{SingleValued: o.SingleValued})
	if err != nil {
		return nil, err // checked by validate
	}
	if err := o.openModel(); err != nil {
		return nil, err
	}
	embedder := o.Embedder
	if embedder == nil {
		if embedder, err = embed.NewHashing(nil); err != nil {
			return nil, err
		}
	}
	source := vectorSource(embedder)
	pace := &pacer{share: cmp.Or(o.BackgroundShare, DefaultBackgroundShare)}
	db, err := engine.Open(dir, &engine.Options{
		// The snapshotter stands aside for requests as the store's own
		// background work does.
		Pace: func(ctx context.Context, d time.Duration) {
			pace.pace(ctx, WorkSnapshot, d, nil)
		},
		Durability:    o.Durability,
		EncryptionKey: o.EncryptionKey,
		Logger:        o.Logger,
		// Erasures are compacted on the sweep's schedule.
		CompactDelay:        o.SweepInterval,
		VectorSource:        source,
		Postgres:            o.Postgres,
		PartitionCacheBytes: o.PartitionCacheBytes,
		BlockCacheBytes:     o.BlockCacheBytes,
		ReadOnly:            o.ReadOnly && o.Postgres == nil,
	})
	if err != nil {
		return nil, err
	}
	if rec, ok := db.VectorSource(); ok && !rec.Compatible(source) {
		if o.Embedder != nil {
			_ = db.Close()
			return nil, fmt.Errorf("%w: the store's vectors come from %s, the Embedder's from %s (to change models, export the store and import it into a new one with the new embedder)",
				ErrEmbedderMismatch, rec, source)
		}
		// Opened with the default: the store can be read, exported and
		// administered, but nothing that needs a vector can be done.
		embedder = refusingEmbedder{stored: rec}
	}
	s := &Store{db: db, opts: o, graph: g, embedder: embedder, summarizer: o.Summarizer, pace: pace}
	// A partition taken over from another process may have other names.
	db.OnPartitionChange(func(part []byte) {
		s.nameCache.invalidatePrefix(part)
		g.DropSearchIndexes(part) // the lease's holder writes it now
	})
	if err := s.cacheEmbedder(embedder); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.setDefaults(o, embedder)
	if err := s.sweep.start(s, o.SweepInterval); err != nil {
		_ = db.Close()
		return nil, err
	}
	if o.Extraction != ExtractOff {
		s.startWorker() // resumes what an earlier run left queued
	}
	if !o.ReadOnly {
		s.startWriteBack()
	}
	return s, nil
}

// cacheEmbedder puts the store's embedding cache in front of e when e is a
// network model; the local ones embed a sentence in microseconds, less
// than a cache lookup costs.
func (s *Store) cacheEmbedder(e embed.Embedder) error {
	_, refusing := e.(refusingEmbedder)
	_, static := e.(*embed.Static)
	if refusing || static || isHashing(e) {
		return nil
	}
	c, err := embed.NewCache(e, s.db.EmbeddingCache(), nil)
	if err != nil {
		return fmt.Errorf("%w: Embedder: %w", ErrInvalidOptions, err)
	}
	s.embedder, s.cache = c, c
	return nil
}

// setDefaults fills the fields of s that o leaves zero; e is the embedder
// before any cache in front of it.
func (s *Store) setDefaults(o Options, e embed.Embedder) {
	_, refusing := e.(refusingEmbedder)
	switch s.vectorWeight = o.VectorWeight; {
	case s.vectorWeight < 0:
		s.vectorWeight = 0
	case s.vectorWeight == 0 && !refusing && !isHashing(e):
		// Vectors by meaning (a static model or a provider) carry
		// evidence BM25 misses.
		s.vectorWeight = 1
	}
	s.dedupThreshold = o.DedupThreshold
	if s.dedupThreshold == 0 {
		s.dedupThreshold = DefaultDedupThreshold
	}
	if s.summarizer == nil {
		s.summarizer = Extractive{Encoding: o.Encoding}
	}
	if s.opts.SummaryTokens == 0 {
		s.opts.SummaryTokens = DefaultSummaryTokens
	}
	if s.extractor = o.Extractor; s.extractor == nil {
		s.extractor = defaultExtractor()
	}
}

func isHashing(e embed.Embedder) bool {
	_, ok := e.(*embed.Hashing)
	return ok
}

// vectorSource describes what e makes, for the store's record of its
// embedder (see [engine.Options.VectorSource]): a network provider by its
// model's name, not its server's address, also behind a cache; an
// embedder that reports no [embed.Identity] by nothing, which checks
// nothing.
func vectorSource(e embed.Embedder) engine.VectorSource {
	// A cache the caller put in front makes the same vectors as what it
	// caches.
	for {
		c, ok := e.(*embed.Cache)
		if !ok {
			break
		}
		if _, ok := c.Inner().(embed.Identifier); !ok {
			break // the cache's identity is all there is
		}
		e = c.Inner()
	}
	idr, ok := e.(embed.Identifier)
	if !ok {
		return engine.VectorSource{}
	}
	id := idr.Identity()
	src := engine.VectorSource{Provider: id.Provider, Model: id.Model, Dimensions: e.Dimensions()}
	if p, ok := e.(*embed.Provider); ok {
		src.Model = p.Model()
	}
	return src
}

// refusingEmbedder stands in for the embedder of a store opened without
// one (the default) when the store's vectors come from another: every
// Embed fails with [ErrEmbedderMismatch], so the store can still be read,
// exported and administered, and nothing mixes vectors of two models.
type refusingEmbedder struct{ stored engine.VectorSource }

// Embed fails with ErrEmbedderMismatch.
func (r refusingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, fmt.Errorf("%w: the store's vectors come from %s; open it with that embedder to write or search by meaning", ErrEmbedderMismatch, r.stored)
}

// Dimensions returns the stored vectors' dimension, 0 when not recorded.
func (r refusingEmbedder) Dimensions() int { return r.stored.Dimensions }

// Close closes the store, waiting for running calls. Calling it again
// returns nil.
func (s *Store) Close() error {
	if s.worker != nil {
		s.worker.stop() // what is still queued stays queued, on disk
	}
	s.sweep.stop()
	s.writeBack.close()
	return s.db.Close()
}

// Backup writes a full copy of the store to w, every tenant's data, sealed
// with a key drawn from the store's when it is encrypted: the stream of
// [engine.DB.Backup], which [engine.DB.Restore] loads into a new store.
func (s *Store) Backup(ctx context.Context, w io.Writer) error { return s.db.Backup(ctx, w) }

// Stats returns a snapshot of the database's state.
func (s *Store) Stats() engine.Stats { return s.db.Stats() }

// StoredEmbedder returns the embedder the store's vectors come from, as
// recorded with its first vector (see [Options.Embedder]); false when none
// is recorded yet.
func (s *Store) StoredEmbedder() (engine.VectorSource, bool) { return s.db.VectorSource() }

// CountTokens returns the tokens the messages take in the store's encoding,
// chat-format framing included: the figure windows are budgeted in.
func (s *Store) CountTokens(msgs ...Message) (int, error) {
	enc, err := tokenizer(s.opts.Encoding)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range msgs {
		n += countTokens(enc, &msgs[i])
	}
	return n, nil
}

func (s *Store) encoder() (*bpe.Encoder, error) { return tokenizer(s.opts.Encoding) }

func (s *Store) sessionLock(prefix []byte) *sync.Mutex {
	return &s.sessionLocks[sessionLockIndex(prefix, len(s.sessionLocks))]
}

// sessionLockIndex returns which of n session locks serializes the session
// with this prefix.
func sessionLockIndex(prefix []byte, n int) int {
	h := fnv.New32a()
	h.Write(prefix)
	return int(h.Sum32() % uint32(n))
}

// pageSize applies the listings' Limit rule: negative is an error, zero
// means [DefaultPageSize].
func pageSize(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: Limit %d is negative", ErrInvalidOptions, limit)
	case limit == 0:
		return DefaultPageSize, nil
	}
	return limit, nil
}

// Compact takes the bytes of erased and expired data out of the store's
// files now, instead of at the background compaction that follows every
// erasure (within the sweep interval). It flushes the memtables, compacts
// the LSM tree to one level and garbage-collects the value log; it is
// slow on a large store.
func (s *Store) Compact(ctx context.Context) error { return s.db.Compact(ctx) }

// embed returns the vectors of texts from the store's embedder, checked:
// one per text, non-empty, finite.
func (s *Store) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbedding, len(vecs), len(texts))
	}
	for _, v := range vecs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: empty vector", ErrEmbedding)
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("%w: vector has a NaN or infinite component", ErrEmbedding)
			}
		}
	}
	return vecs, nil
}
