// Package dbtest gives each test its own PostgreSQL database, cloned from a
// migrated template, on the server at HOOKRELAY_TEST_DATABASE_URL, else
// DATABASE_URL, else postgres://postgres@127.0.0.1:5432. A test that needs
// PostgreSQL fails when none is reachable; it never skips.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/migrations"
)

// ServerURL returns the URL of the test server's "postgres" database.
func ServerURL() string {
	for _, k := range []string{"HOOKRELAY_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return withDatabase(v, "postgres")
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func withDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(fmt.Sprintf("dbtest: bad database URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewURL creates a fresh database for the test, dropped when the test ends,
// and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		t.Fatalf("dbtest: PostgreSQL is required (set DATABASE_URL or run `make test`): %v", templateErr)
	}
	name := "hookrelay_test_" + randomHex(6)
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatalf("dbtest: connect: %v", err)
	}
	defer admin.Close(ctx)
	if err := createFromTemplate(ctx, admin, name, templateName); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop %s: %v", name, err)
		}
	})
	return withDatabase(ServerURL(), name)
}

// New returns an open store on a fresh migrated database of the test's own,
// with today's partitions present. It is closed and dropped when the test ends.
func New(t testing.TB) *db.DB {
	t.Helper()
	return Open(t, NewURL(t), db.Config{})
}

// Open opens a store on url with cfg (URL is filled in), ensures today's
// partitions and closes the store when the test ends.
func Open(t testing.TB, url string, cfg db.Config) *db.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.URL = url
	cfg.MaxConns = max(cfg.MaxConns, 8)
	if cfg.Keys == nil {
		cfg.Keys = Keys()
	}
	store, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	t.Cleanup(store.Close)
	side := &sidePool{url: url}
	sides.Store(store, side)
	t.Cleanup(func() {
		sides.Delete(store)
		side.close()
	})
	if _, err := store.EnsurePartitions(ctx, time.Now(), 2); err != nil {
		t.Fatalf("dbtest: partitions: %v", err)
	}
	return store
}

// ensureTemplate makes sure a migrated template database for the current set
// of migrations exists (its name carries their hash) and returns its name.
// Concurrent test binaries serialise on an advisory lock.
func ensureTemplate(ctx context.Context) (string, error) {
	name, err := templateNameFor()
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7368211999)"); err != nil {
		return "", err
	}
	defer func() { _, _ = admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7368211999)") }()
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	store, err := db.Open(ctx, db.Config{URL: withDatabase(ServerURL(), building), MaxConns: 2, MinConns: 1})
	if err != nil {
		return "", err
	}
	_, err = store.Migrate(ctx, nil)
	store.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	// Templates of older migration sets are left alone: another test binary
	// (from an older checkout) may still be cloning one. They are small.
	return name, nil
}

func createFromTemplate(ctx context.Context, admin *pgx.Conn, name, template string) error {
	var err error
	// CREATE DATABASE ... TEMPLATE fails while another session is connected to
	// the template (e.g. a concurrent clone); retry briefly.
	for i := 0; i < 50; i++ {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func templateNameFor() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "hookrelay_tmpl_" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
