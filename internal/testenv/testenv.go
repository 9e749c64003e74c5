// Package testenv is the test environment the packages' tests share: a
// database of the test's own (db/dbtest), the embedded S3 store on a free
// loopback port, a logger whose lines the test can read, and the helpers
// that wait for something to happen (Eventually, WaitFor) or run a
// component until the test ends (Go). Only tests import it.
//
// A test that needs only a database keeps using dbtest.New; New is for the
// tests that need the database, the payload store and the logs together.
// The context of a test, cancelled when it ends, is t.Context().
package testenv

import (
	"encoding/hex"
	"log/slog"
	"testing"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/storage"
)

// Options vary New; the zero value is a database, an S3 store and JSON logs
// at info level.
type Options struct {
	// AdminToken, when set, is stored as the operator's admin token.
	AdminToken string
	// LogLevel is the level of Logger (default info).
	LogLevel slog.Level
	// LogS3 has the embedded S3 store log to Logger too; by default its
	// lines are dropped.
	LogS3 bool
}

// Env is what New sets up; everything in it is closed when the test ends.
type Env struct {
	DB    *db.DB // on a database of the test's own
	DBURL string // that database's URL
	// S3 is the embedded S3 store serving S3Dir on a free loopback port;
	// Payloads is a client of it whose bucket exists.
	S3       *storage.Embedded
	S3Dir    string
	Payloads *storage.Store
	// Logger writes JSON lines into Logs.
	Logger *slog.Logger
	Logs   *logtest.Buffer
}

// New sets up an Env for the test.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	ctx := t.Context()
	e := &Env{DBURL: dbtest.NewURL(t), Logs: &logtest.Buffer{}, S3Dir: t.TempDir()}
	e.DB = dbtest.Open(t, e.DBURL, db.Config{})
	if o.AdminToken != "" {
		// The database is new: there is no token to replace.
		if _, err := e.DB.SettingPutIfAbsent(ctx, db.AdminTokenSetting, hex.EncodeToString(hookrelay.HashKey(o.AdminToken))); err != nil {
			t.Fatalf("testenv: admin token: %v", err)
		}
	}
	e.Logger = slog.New(slog.NewJSONHandler(e.Logs, &slog.HandlerOptions{Level: o.LogLevel}))
	var s3Logger *slog.Logger
	if o.LogS3 {
		s3Logger = e.Logger
	}
	e.S3 = StartS3(t, s3Logger, "127.0.0.1:0", e.S3Dir)
	e.Payloads = Payloads(t, e.S3)
	return e
}

// StartS3 starts an embedded S3 store on addr serving dir and closes it when
// the test ends (failing the test if that fails). A nil logger drops its
// lines.
func StartS3(t testing.TB, logger *slog.Logger, addr, dir string) *storage.Embedded {
	t.Helper()
	s3, err := storage.StartEmbedded(t.Context(), logger, addr, dir)
	if err != nil {
		t.Fatalf("testenv: start the embedded S3 store: %v", err)
	}
	t.Cleanup(func() {
		if err := s3.Close(); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	return s3
}

// Payloads returns a client of s3, closed when the test ends, whose bucket
// exists.
func Payloads(t testing.TB, s3 *storage.Embedded) *storage.Store {
	t.Helper()
	s, err := storage.New(t.Context(), s3.Config())
	if err != nil {
		t.Fatalf("testenv: S3 client: %v", err)
	}
	t.Cleanup(s.Close)
	if err := s.EnsureBucket(t.Context()); err != nil {
		t.Fatalf("testenv: S3 bucket: %v", err)
	}
	return s
}
