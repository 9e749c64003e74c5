package main

import (
	"io"
	"log/slog"
	"os"
)

// newLogger returns the process's logger: HOOKRELAY_LOG_FORMAT's handler
// at HOOKRELAY_LOG_LEVEL, durations written as people read them.
func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationString}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationString writes a duration as its String ("30s", "1.5ms"): the
// JSON handler would write nanoseconds (30000000000), which nobody reads
// at a glance; the text handler already does this, and now both agree.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
