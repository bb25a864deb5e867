package kv

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// slogAdapter routes Badger's printf-style logger to a *slog.Logger, with
// Badger's levels mapped onto slog's and the message formatted only when the
// level is enabled.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	a.l.Log(ctx, level, msg, slog.String("component", "badger"))
}

func (a slogAdapter) Errorf(format string, args ...any)   { a.log(slog.LevelError, format, args) }
func (a slogAdapter) Warningf(format string, args ...any) { a.log(slog.LevelWarn, format, args) }
func (a slogAdapter) Infof(format string, args ...any)    { a.log(slog.LevelInfo, format, args) }
func (a slogAdapter) Debugf(format string, args ...any)   { a.log(slog.LevelDebug, format, args) }
