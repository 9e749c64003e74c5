package main

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"
)

// config is the process configuration, read from the environment (SPEC §2).
type config struct {
	DatabaseURL         string        // DATABASE_URL; created if missing
	Addr                string        // HOOKRELAY_ADDR: API and dashboard
	AdminToken          string        // HOOKRELAY_ADMIN_TOKEN; generated and printed once when unset
	DataDir             string        // HOOKRELAY_DATA_DIR: local state (embedded S3 under s3/)
	S3Endpoint          string        // HOOKRELAY_S3_ENDPOINT; unset = embedded store
	S3Bucket            string        // HOOKRELAY_S3_BUCKET
	S3Region            string        // HOOKRELAY_S3_REGION
	S3EmbedAddr         string        // HOOKRELAY_S3_EMBED_ADDR: embedded store address
	OffloadBytes        int           // HOOKRELAY_OFFLOAD_BYTES: payloads larger go to S3
	MaxBodyBytes        int           // HOOKRELAY_MAX_BODY_BYTES: larger callbacks get 413
	AllowPrivateTargets bool          // HOOKRELAY_ALLOW_PRIVATE_TARGETS
	RequireHTTPS        bool          // HOOKRELAY_REQUIRE_HTTPS
	Retention           time.Duration // HOOKRELAY_RETENTION: history kept
	Lease               time.Duration // HOOKRELAY_LEASE: delivery and queue lease
	Queues              int           // HOOKRELAY_QUEUES: logical queues (fixed once data exists)
	LogFormat           string        // HOOKRELAY_LOG_FORMAT: json | text | auto
	LogLevel            string        // HOOKRELAY_LOG_LEVEL: debug | info | warn | error
	DBMaxConns          int           // HOOKRELAY_DB_MAX_CONNS: pool size per process
	StatementTimeout    time.Duration // HOOKRELAY_STATEMENT_TIMEOUT
	IdleInTxTimeout     time.Duration // HOOKRELAY_IDLE_IN_TX_TIMEOUT
	LockTimeout         time.Duration // HOOKRELAY_LOCK_TIMEOUT
	Notify              bool          // HOOKRELAY_NOTIFY: API announces stored callbacks, dispatch LISTENs

	env *envParser // for role-specific settings read by the role files
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/hookrelay?sslmode=disable"

// loadConfig reads and validates the configuration; the error lists every bad
// variable.
func loadConfig(getenv func(string) string) (config, error) {
	p := &envParser{getenv: getenv}
	c := config{
		DatabaseURL:         p.str("DATABASE_URL", defaultDatabaseURL),
		Addr:                p.str("HOOKRELAY_ADDR", "127.0.0.1:8080"),
		AdminToken:          p.str("HOOKRELAY_ADMIN_TOKEN", ""),
		DataDir:             p.str("HOOKRELAY_DATA_DIR", "./data"),
		S3Endpoint:          p.str("HOOKRELAY_S3_ENDPOINT", ""),
		S3Bucket:            p.str("HOOKRELAY_S3_BUCKET", "hookrelay-payloads"),
		S3Region:            p.str("HOOKRELAY_S3_REGION", "us-east-1"),
		S3EmbedAddr:         p.str("HOOKRELAY_S3_EMBED_ADDR", "127.0.0.1:9000"),
		OffloadBytes:        p.int("HOOKRELAY_OFFLOAD_BYTES", 8192, 0, 64<<20),
		MaxBodyBytes:        p.int("HOOKRELAY_MAX_BODY_BYTES", 10<<20, 1, 1<<30),
		AllowPrivateTargets: p.bool("HOOKRELAY_ALLOW_PRIVATE_TARGETS", false),
		RequireHTTPS:        p.bool("HOOKRELAY_REQUIRE_HTTPS", false),
		Retention:           p.duration("HOOKRELAY_RETENTION", 168*time.Hour, 24*time.Hour, 10*365*24*time.Hour),
		Lease:               p.duration("HOOKRELAY_LEASE", 30*time.Second, time.Second, time.Hour),
		Queues:              p.int("HOOKRELAY_QUEUES", 32, 1, 1024),
		LogFormat:           p.oneOf("HOOKRELAY_LOG_FORMAT", "auto", "auto", "json", "text"),
		LogLevel:            p.oneOf("HOOKRELAY_LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		DBMaxConns:          p.int("HOOKRELAY_DB_MAX_CONNS", 20, 2, math.MaxInt16),
		StatementTimeout:    p.duration("HOOKRELAY_STATEMENT_TIMEOUT", 30*time.Second, 100*time.Millisecond, 24*time.Hour),
		IdleInTxTimeout:     p.duration("HOOKRELAY_IDLE_IN_TX_TIMEOUT", 60*time.Second, 100*time.Millisecond, 24*time.Hour),
		LockTimeout:         p.duration("HOOKRELAY_LOCK_TIMEOUT", 10*time.Second, 10*time.Millisecond, time.Hour),
		Notify:              p.bool("HOOKRELAY_NOTIFY", true),
		env:                 p,
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || strings.Trim(u.Path, "/") == "" {
		p.fail("DATABASE_URL", redactURL(c.DatabaseURL), "want postgres://user@host:port/dbname")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.fail("HOOKRELAY_ADDR", c.Addr, "want host:port, such as 127.0.0.1:8080")
	}
	if c.S3Endpoint == "" {
		if _, _, err := net.SplitHostPort(c.S3EmbedAddr); err != nil {
			p.fail("HOOKRELAY_S3_EMBED_ADDR", c.S3EmbedAddr, "want host:port")
		}
	} else if u, err := url.Parse(c.S3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail("HOOKRELAY_S3_ENDPOINT", c.S3Endpoint, "want an http(s) URL")
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_ADMIN_TOKEN: too short (want at least 16 characters)"))
	}
	if c.OffloadBytes > c.MaxBodyBytes {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_OFFLOAD_BYTES (%d) is larger than HOOKRELAY_MAX_BODY_BYTES (%d)", c.OffloadBytes, c.MaxBodyBytes))
	}
	if err := p.err(); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// redactURL hides the password of a URL so it can be shown in errors.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
