package transfer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Format is the format of a file.
type Format int

// The formats.
const (
	// FormatJSONL is messages and memories, one JSON object per line.
	FormatJSONL Format = iota + 1
	// FormatNQuads is one knowledge graph as N-Quads.
	FormatNQuads
)

// String returns the format's name, as ParseFormat reads it.
func (f Format) String() string {
	switch f {
	case FormatJSONL:
		return "jsonl"
	case FormatNQuads:
		return "nquads"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat reads a format's name: "jsonl" (or "ndjson") or "nquads"
// (or "nq").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "jsonl", "ndjson":
		return FormatJSONL, nil
	case "nquads", "nq":
		return FormatNQuads, nil
	}
	return 0, fmt.Errorf("unknown format %q (want jsonl or nquads)", s)
}

// FormatOf returns the format a file name's extension says: .jsonl and
// .ndjson are JSONL, .nq and .nquads N-Quads.
func FormatOf(path string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return FormatJSONL, true
	case ".nq", ".nquads":
		return FormatNQuads, true
	}
	return 0, false
}
