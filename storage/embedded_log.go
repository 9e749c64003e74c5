package storage

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// fakeS3Logger passes gofakes3's messages to slog. gofakes3 logs every
// request at its info level, so that becomes debug; its errors and warnings
// keep their level.
type fakeS3Logger struct {
	logger *slog.Logger
}

// Print implements gofakes3.Logger.
func (l fakeS3Logger) Print(level gofakes3.LogLevel, v ...any) {
	lvl := slog.LevelDebug
	switch level {
	case gofakes3.LogErr:
		lvl = slog.LevelError
	case gofakes3.LogWarn:
		lvl = slog.LevelWarn
	}
	ctx := context.Background()
	if !l.logger.Enabled(ctx, lvl) {
		return // spare formatting a message per request
	}
	l.logger.Log(ctx, lvl, strings.TrimSuffix(fmt.Sprintln(v...), "\n"), "component", "embedded-s3")
}
