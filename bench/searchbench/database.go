package searchbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db"
)

// DatabaseURL is serverURL with its database replaced by name.
func DatabaseURL(serverURL, name string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CreateDatabase creates database name on serverURL's server, migrated to
// the product's schema; an existing one is dropped first.
func CreateDatabase(ctx context.Context, serverURL, name string, log io.Writer) (string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop database: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	dbURL, err := DatabaseURL(serverURL, name)
	if err != nil {
		return "", err
	}
	store, err := db.Open(ctx, db.Config{URL: dbURL, MaxConns: 2})
	if err != nil {
		return "", err
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, slog.New(slog.NewTextHandler(log, nil))); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	return dbURL, nil
}
