package testenv

import (
	"log/slog"
	"testing"
)

// Logger returns a logger that writes text lines at level and above into
// the test's output, shown when the test fails or runs with -v.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}
