package kv

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// badgerLogger routes Badger's printf-style logger to a *slog.Logger (nil
// discards), with Badger's levels mapped onto slog's and the message
// formatted only when the level is enabled.
//
// It also keeps Badger's last value-read failure: Badger logs a value it
// cannot read from the value log (a checksum mismatch, a pointer past the
// end of a truncated file) and returns no value and no error
// (Item.yieldItemValue, badger v4.9.6). The reader sees the empty value
// and reports ErrCorrupt with this message, which names the file.
type badgerLogger struct {
	l        *slog.Logger
	lastRead atomic.Pointer[string]
}

func (a *badgerLogger) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if a.l == nil || !a.l.Enabled(ctx, level) {
		return
	}
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	a.l.Log(ctx, level, msg, slog.String("component", "badger"))
}

// Errorf implements badger.Logger.
func (a *badgerLogger) Errorf(format string, args ...any) {
	if strings.HasPrefix(format, "Unable to read") {
		msg := fmt.Sprintf(format, args...)
		a.lastRead.Store(&msg)
	}
	a.log(slog.LevelError, format, args)
}

// Warningf implements badger.Logger.
func (a *badgerLogger) Warningf(format string, args ...any) { a.log(slog.LevelWarn, format, args) }

// Infof implements badger.Logger.
func (a *badgerLogger) Infof(format string, args ...any) { a.log(slog.LevelInfo, format, args) }

// Debugf implements badger.Logger.
func (a *badgerLogger) Debugf(format string, args ...any) { a.log(slog.LevelDebug, format, args) }

// lastReadError returns Badger's last logged value-read failure, or "".
func (a *badgerLogger) lastReadError() string {
	if a == nil {
		return ""
	}
	if p := a.lastRead.Load(); p != nil {
		return *p
	}
	return ""
}
