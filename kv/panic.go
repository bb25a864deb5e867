package kv

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// recovered turns a panic caught while reading the store's files (Badger's
// readers trust lengths and offsets they read) into sentinel, naming
// where. A Go runtime error's own text ("runtime error: invalid memory
// address or nil pointer dereference") tells a user nothing about the
// file and reads like a bug in the program, so it is replaced by what it
// means here: the data does not hold together. Badger's own panics
// (assertions) keep the first line of their message.
func recovered(sentinel error, where string, p any) error {
	var re runtime.Error
	if e, ok := p.(error); ok && errors.As(e, &re) {
		return fmt.Errorf("%w: %s: its data is damaged (%s)", sentinel, where, runtimeKind(re))
	}
	// Badger's table readers re-panic with a multi-line dump of their
	// state: its first line is enough in an error.
	msg, _, _ := strings.Cut(strings.TrimSpace(fmt.Sprint(p)), "\n")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Errorf("%w: %s: its data is damaged (%s)", sentinel, where, msg)
}

// runtimeKind says in a few words what a runtime error met in damaged
// data means.
func runtimeKind(re runtime.Error) string {
	msg := re.Error()
	switch {
	case strings.Contains(msg, "out of range"):
		return "a length or offset in it points outside the data"
	case strings.Contains(msg, "nil pointer"), strings.Contains(msg, "nil map"):
		return "a structure the reader needs is missing from it"
	default:
		return "the reader could not make sense of it"
	}
}
