// Package bpe counts, encodes and decodes text with OpenAI's tiktoken
// encodings (o200k_base, cl100k_base, p50k_base, r50k_base) without a
// regular-expression engine.
//
// The rank files come from github.com/pkoukk/tiktoken-go-loader, embedded in
// the binary. Each encoding's pre-tokenizer, a regular expression with
// look-ahead that tiktoken-go runs through regexp2, is written here as a
// scanner that gives the same pieces; the byte-pair merge is tiktoken's.
// Tokens are identical to tiktoken-go's (the package's tests compare the two
// on a corpus and under fuzzing); the scanner is what makes counting several
// times faster, since regexp2 took about 70% of tiktoken-go's time.
//
// Text that is not valid UTF-8 is read as tiktoken-go reads it: every
// invalid byte stands for U+FFFD.
package bpe
