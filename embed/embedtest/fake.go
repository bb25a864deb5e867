package embedtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/engramdb/engram/embed"
)

// FakeOptions configures [NewFake]. A nil *FakeOptions, and every zero
// field, means the documented default. NewFake copies it: the caller may
// change or share it afterwards.
type FakeOptions struct {
	// Dimensions is the vector length. Zero or negative means 8; more than
	// [embed.MaxDimensions] means embed.MaxDimensions.
	Dimensions int

	// Model is the Model of the Fake's [embed.Identity]; its Provider is
	// always "fake". Empty means "fake".
	Model string
}

// Fake is a deterministic [embed.Embedder] and [embed.Identifier] for tests.
// Each text embeds to a unit vector derived from a 64-bit FNV-1a hash of the
// text: the same text always gives the same vector, in any process. It
// records every call, and fails on demand ([Fake.FailWith]).
//
// A Fake is safe for concurrent use.
type Fake struct {
	dims int
	id   embed.Identity
	mu   struct {
		sync.Mutex
		calls int
		texts []string
		err   error
	}
}

// NewFake returns a [Fake]. A nil opts means defaults.
func NewFake(opts *FakeOptions) *Fake {
	var o FakeOptions
	if opts != nil {
		o = *opts
	}
	if o.Dimensions <= 0 {
		o.Dimensions = 8
	}
	o.Dimensions = min(o.Dimensions, embed.MaxDimensions)
	if o.Model == "" {
		o.Model = "fake"
	}
	return &Fake{dims: o.Dimensions, id: embed.Identity{Provider: "fake", Model: o.Model}}
}

// Dimensions returns the vector length.
func (f *Fake) Dimensions() int { return f.dims }

// Identity returns {Provider: "fake", Model: the configured model}.
func (f *Fake) Identity() embed.Identity { return f.id }

// Embed records the call and returns one vector per text, or the error set
// by [Fake.FailWith], or an error wrapping ctx.Err() when ctx is done. An
// empty texts slice returns (nil, nil) and is not counted as a call.
func (f *Fake) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed fake: %w", err)
	}
	f.mu.Lock()
	f.mu.calls++
	f.mu.texts = append(f.mu.texts, texts...)
	err := f.mu.err
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = f.Vector(t)
	}
	return out, nil
}

// Vector returns the vector Embed returns for text, without recording a
// call: tests use it to compute expected values.
func (f *Fake) Vector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	state := h.Sum64()
	v := make([]float32, f.dims)
	var sum float64
	for i := range v {
		// splitmix64: a full-period generator whose outputs are well mixed
		// even for neighbouring seeds.
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		x := float64(z>>11)/(1<<53)*2 - 1 // uniform in [-1, 1)
		v[i] = float32(x)
		sum += float64(float64(v[i]) * float64(v[i])) // rounded: no FMA, same bits everywhere
	}
	if sum == 0 {
		v[0] = 1
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// FailWith makes every later Embed call return err, until FailWith(nil).
func (f *Fake) FailWith(err error) {
	f.mu.Lock()
	f.mu.err = err
	f.mu.Unlock()
}

// Calls returns the number of Embed calls with at least one text, failed
// ones included.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.calls
}

// Texts returns every text given to Embed, in call order, failed calls
// included. The caller owns the returned slice.
func (f *Fake) Texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.mu.texts)
}

// Reset sets the call count to zero and forgets the recorded texts.
func (f *Fake) Reset() {
	f.mu.Lock()
	f.mu.calls = 0
	f.mu.texts = nil
	f.mu.Unlock()
}

var (
	_ embed.Embedder   = (*Fake)(nil)
	_ embed.Identifier = (*Fake)(nil)
)
