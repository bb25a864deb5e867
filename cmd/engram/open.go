package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/memory"
)

// The embedders --embedder names.
const (
	embedderHashing = "hashing"
	embedderStatic  = "static"
	embedderOllama  = "ollama"
	embedderOpenAI  = "openai"
)

// apiKeyEnv is where --embedder openai finds its API key: an environment
// variable, never a flag (flags show in the process list).
const apiKeyEnv = "OPENAI_API_KEY"

// openFlags configure how a store is opened beyond its directory: the
// encryption key and the embedder. Every command that opens a store takes
// them, so a store created encrypted, or with a provider, can be reached by
// all of them.
type openFlags struct {
	keyFile    string
	embedder   string
	embedURL   string
	embedModel string
	embedDims  int
	modelDir   string
	model      string
	synonyms   string
	// partitionCache is --partition-cache, of the commands that serve.
	partitionCache byteSize
	// blockCache is --block-cache, of the commands that serve.
	blockCache byteSize
	// fs is the flag set registerEmbedder added the flags to, to tell an
	// explicit --embedder hashing from the default.
	fs *pflag.FlagSet
}

// register adds --encryption-key-file, and the embedder flags when
// withEmbedder (the commands that embed text).
func (f *openFlags) register(fs *pflag.FlagSet, withEmbedder bool) {
	fs.StringVar(&f.keyFile, "encryption-key-file", "",
		"file holding the store's encryption key: 16, 24 or 32 bytes, raw or hex (mode 0600); needed on every open of an encrypted store")
	if withEmbedder {
		f.registerEmbedder(fs)
		fs.Var(&f.partitionCache, "partition-cache",
			"memory for the users' loaded indexes (vectors, BM25), such as 256MiB or 1GiB; past it the least recently used users' are evicted and loaded again when next used. 0: a quarter of the memory, at most 1GiB")
		fs.Var(&f.blockCache, "block-cache",
			"memory for the store's cache of decompressed file blocks, which Recall reads records and facts through, such as 256MiB; larger makes Recall of users not in it faster. 0: 8MiB")
	}
}

// registerEmbedder adds --embedder, --model, --model-dir, --embed-url,
// --embed-model and --embed-dimensions.
func (f *openFlags) registerEmbedder(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.embedder, "embedder", embedderHashing,
		"the store's embedder: hashing (offline, lexical), static (offline, by meaning: a Model2Vec model, --model or --model-dir), ollama or openai (any OpenAI-compatible server; the key from $"+apiKeyEnv+"); a store must always be opened with the same one")
	fs.StringVar(&f.synonyms, "synonyms", "off", "expand Recall's BM25 queries with WordNet synonyms, built in (on or off; docs/benchmarks.md says what it gains)")
	fs.StringVar(&f.model, "model", "", "with --embedder static: a Model2Vec model pulled by name with engram model pull NAME (potion-base-8M, org/name); never downloads")
	fs.StringVar(&f.modelDir, "model-dir", "", "with --embedder static: the folder of a Model2Vec model (model.safetensors, tokenizer.json, config.json), such as minishlab/potion-base-8M downloaded by you")
	fs.StringVar(&f.embedURL, "embed-url", "", "the embedding server's base URL (default: the provider's)")
	fs.StringVar(&f.embedModel, "embed-model", "", "the embedding model (required with ollama and openai)")
	fs.IntVar(&f.embedDims, "embed-dimensions", 0, "the vectors' length, checked on every answer (0: learned from the first)")
}

// key returns the encryption key --encryption-key-file names, nil without
// the flag.
func (f *openFlags) key() ([]byte, error) {
	if f.keyFile == "" {
		return nil, nil
	}
	return readKeyFile(f.keyFile)
}

// apply sets the options the flags name.
func (f *openFlags) apply(o *memory.Options) error {
	key, err := f.key()
	if err != nil {
		return err
	}
	o.EncryptionKey = key
	o.PartitionCacheBytes = int64(f.partitionCache)
	o.BlockCacheBytes = int64(f.blockCache)
	if o.Synonyms, err = f.synonymsOn(); err != nil {
		return err
	}
	e, err := f.newEmbedder()
	if err != nil {
		return err
	}
	if e != nil {
		o.Embedder = e
	}
	return nil
}

// synonymsOn reports whether --synonyms is on.
func (f *openFlags) synonymsOn() (bool, error) {
	switch f.synonyms {
	case "on":
		return true, nil
	case "", "off":
		return false, nil
	}
	return false, fmt.Errorf("--synonyms %q is neither on nor off", f.synonyms)
}

// newEmbedder returns the embedder the flags name: nil for the default
// (hashing, not named), which opens a store of another embedder for
// reading only.
func (f *openFlags) newEmbedder() (embed.Embedder, error) {
	if f.modelDir != "" && f.embedder != embedderStatic {
		return nil, errors.New("--model-dir needs --embedder static")
	}
	if f.model != "" && f.embedder != embedderStatic {
		return nil, errors.New("--model needs --embedder static (--embed-model names a provider's model)")
	}
	switch f.embedder {
	case "", embedderHashing, embedderStatic:
		if f.embedURL != "" || f.embedModel != "" || f.embedDims != 0 {
			return nil, errors.New("--embed-url, --embed-model and --embed-dimensions need --embedder ollama or openai")
		}
		if f.embedder != embedderStatic {
			if f.fs != nil && f.fs.Changed("embedder") {
				// Named: a store of another embedder is refused at
				// open. The default (nil) opens it for reading.
				return embed.NewHashing(nil)
			}
			return nil, nil
		}
		return f.staticEmbedder()
	case embedderOllama, embedderOpenAI:
		return f.providerEmbedder()
	}
	return nil, fmt.Errorf("--embedder %q is not hashing, static, ollama or openai", f.embedder)
}

// providerEmbedder returns the ollama or openai embedder the flags name.
// The flags the provider needs are checked here, by their names: the
// library's own message names its option fields (Model, APIKey).
func (f *openFlags) providerEmbedder() (embed.Embedder, error) {
	if f.embedModel == "" {
		example := "nomic-embed-text, pulled first with ollama pull nomic-embed-text"
		if f.embedder == embedderOpenAI {
			example = "text-embedding-3-small"
		}
		return nil, fmt.Errorf("--embedder %s needs --embed-model, the embedding model's name on the server (e.g. %s)", f.embedder, example)
	}
	switch f.embedder {
	case embedderOllama:
		p, err := embed.NewOllama(&embed.OllamaOptions{BaseURL: f.embedURL, Model: f.embedModel, Dimensions: f.embedDims})
		if err != nil {
			return nil, fmt.Errorf("--embedder ollama: %w", err)
		}
		return p, nil
	}
	key := os.Getenv(apiKeyEnv)
	if key == "" && f.embedURL == "" {
		return nil, errors.New("--embedder openai needs $" + apiKeyEnv + " for " + embed.DefaultOpenAIBaseURL + " (or --embed-url, an OpenAI-compatible server that needs no key)")
	}
	p, err := embed.NewOpenAI(&embed.OpenAIOptions{BaseURL: f.embedURL, APIKey: key, Model: f.embedModel, Dimensions: f.embedDims})
	if err != nil {
		return nil, fmt.Errorf("--embedder openai: %w", err)
	}
	return p, nil
}

// explain adds to err, when the embedding server does not know the model,
// the flag that names it.
func (f *openFlags) explain(err error) error {
	if f.embedder == embedderOllama && errors.Is(err, embed.ErrUnknownModel) {
		return fmt.Errorf("%w (check --embed-model %s: the model must be pulled on the server)", err, f.embedModel)
	}
	return err
}

// staticEmbedder loads the model --model names (pulled before; nothing is
// downloaded here) or the folder --model-dir names: exactly one of them.
func (f *openFlags) staticEmbedder() (embed.Embedder, error) {
	switch {
	case f.model != "" && f.modelDir != "":
		return nil, errors.New("--embedder static takes --model or --model-dir, not both")
	case f.model != "":
		s, err := embed.OpenModel(f.model, nil)
		if err != nil {
			return nil, fmt.Errorf("--embedder static --model %s: %w", f.model, err)
		}
		return s, nil
	case f.modelDir != "":
		s, err := embed.NewStatic(f.modelDir, nil)
		if err != nil {
			return nil, fmt.Errorf("--embedder static: %w", err)
		}
		return s, nil
	}
	return nil, errors.New("--embedder static needs --model NAME (a model pulled with engram model pull NAME) or --model-dir, the folder of a Model2Vec model")
}

// readKeyFile reads an encryption key: 16, 24 or 32 raw bytes, or their hex
// encoding (white space around it ignored). Like the tokens file, the file
// must not be readable or writable by its group or others.
func readKeyFile(path string) ([]byte, error) {
	b, err := fileio.ReadPrivate(path, 1<<10)
	if err != nil {
		return nil, fmt.Errorf("--encryption-key-file: %w", err)
	}
	validLen := func(n int) bool { return n == 16 || n == 24 || n == 32 }
	if t := strings.TrimSpace(string(b)); len(t)%2 == 0 && validLen(len(t)/2) {
		if key, err := hex.DecodeString(t); err == nil {
			return key, nil
		}
	}
	if validLen(len(b)) {
		return b, nil // raw bytes, any of them (a newline too)
	}
	return nil, fmt.Errorf("--encryption-key-file %s: want 16, 24 or 32 bytes, raw or as hex (openssl rand -hex 32 > %s)", path, path)
}

// openError adds a hint to the errors a user can fix with a flag.
func openError(dir string, err error) error {
	switch {
	case errors.Is(err, memory.ErrLocked):
		return fmt.Errorf("%w: %s (is engram serve or engram mcp running on it?)", err, dir)
	case errors.Is(err, memory.ErrEncryptionKey):
		return fmt.Errorf("open %s: %w (an encrypted store needs --encryption-key-file with the key it was created with; a plain one, none)", dir, err)
	case errors.Is(err, memory.ErrEmbedderMismatch):
		return fmt.Errorf("open %s: %w (open it with the --embedder flags it was written with)", dir, err)
	}
	return fmt.Errorf("open %s: %w", dir, err)
}
