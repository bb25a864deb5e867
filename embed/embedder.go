package embed

import "context"

// MaxDimensions is the largest vector length this package accepts: in
// options, from a server, and in an encoded cache value. Today's embedding
// models use 256 to 4096.
const MaxDimensions = 1 << 16

// Embedder turns texts into vectors. Implementations must be safe for
// concurrent use.
//
// Embed returns one vector per text, in the order of texts. An empty texts
// slice returns (nil, nil) without any work or network call. The caller owns
// the returned vectors and may modify them.
//
// Dimensions returns the length of the vectors Embed returns, or 0 if it is
// not yet known: a network provider without a configured dimension learns it
// from its first response.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
}

// Identity names the provider and model that produced a vector. It keys the
// [Cache]: vectors from different identities never mix. Two embedders with
// equal identities must produce interchangeable vectors. It is a comparable
// value, safe to copy and share between goroutines.
type Identity struct {
	// Provider names the embedding service or algorithm, such as "hashing",
	// "ollama" or "openai". It must not contain a NUL byte.
	Provider string
	// Model names the model and anything else that changes the vectors, such
	// as "v1-384" for [Hashing] or "nomic-embed-text@localhost:11434/api" for
	// an Ollama server.
	Model string
}

// String returns "provider/model".
func (id Identity) String() string {
	return id.Provider + "/" + id.Model
}

// Identifier is an optional interface an [Embedder] implements to report its
// [Identity]. [NewCache] uses it when its options name no identity.
// Implementations must be safe for concurrent use and return the same
// Identity on every call.
type Identifier interface {
	Identity() Identity
}

// Every embedder of this package reports its identity.
var (
	_ Embedder   = (*Cache)(nil)
	_ Identifier = (*Cache)(nil)
	_ Embedder   = (*Provider)(nil)
	_ Identifier = (*Provider)(nil)
	_ Embedder   = (*Hashing)(nil)
	_ Identifier = (*Hashing)(nil)
	_ Embedder   = (*Static)(nil)
	_ Identifier = (*Static)(nil)
)
