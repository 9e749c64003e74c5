package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/logtest"
)

// deployMetricFiles are the operators' files under deploy/ that name the
// product's metrics: the alert rules and the Grafana dashboard.
var deployMetricFiles = []string{"deploy/prometheus/alerts.yaml", "deploy/grafana/hookrelay.json"}

// metricName finds metric names in PromQL and in the prose around it. Every
// series the files use is hookrelay's own or the Go and process collectors'
// (go_*, process_*), and nothing else in them is written that way:
// variables are upper case (HOOKRELAY_*), labels have no such prefix. The
// deploy module parses every expression with Prometheus's parser and checks
// that this pattern finds each selector's name (deploy/prometheus).
var metricName = regexp.MustCompile(`\b(?:hookrelay|go|process)_[a-z0-9_]*[a-z0-9]`)

// descName reads the metric name out of a descriptor's String form,
// `Desc{fqName: "name", ...}`: the name is not exported otherwise.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// TestDeployFilesNameRealMetrics: every metric that the alert rules and the
// dashboard name is one that a process with every role registers. Vectors
// without children are not in a scrape, so the names come from the
// registry's descriptors, not from /metrics.
func TestDeployFilesNameRealMetrics(t *testing.T) {
	t.Parallel()
	registered := registeredMetrics(t)
	require.Contains(t, registered, "hookrelay_db_vacuums_total", "the maintenance role's vectors are described")

	for _, rel := range deployMetricFiles {
		text, err := os.ReadFile(filepath.Join("..", "..", rel))
		require.NoError(t, err)
		names := metricNames(string(text))
		require.NotEmpty(t, names, rel)
		for _, n := range names {
			require.True(t, knownSeries(registered, n), "%s names %s, which no hookrelay process exports", rel, n)
		}
	}
}

// metricNames returns the metric names in text; a prefix followed by "*"
// (hookrelay_db_* in a comment) names a family, not a metric.
func metricNames(text string) []string {
	var names []string
	for _, loc := range metricName.FindAllStringIndex(text, -1) {
		if loc[1] < len(text) && (text[loc[1]] == '*' || text[loc[1]] == '_') {
			continue
		}
		names = append(names, text[loc[0]:loc[1]])
	}
	return names
}

// knownSeries reports whether name is a registered metric or one of the
// series a histogram or summary exposes.
func knownSeries(registered []string, name string) bool {
	if slices.Contains(registered, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(registered, base) {
			return true
		}
	}
	return false
}

// registeredMetrics starts every role as serve does (without running their
// loops) and lists the metrics of the process's registry.
func registeredMetrics(t *testing.T) []string {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":             dbtest.NewURL(t),
		"HOOKRELAY_S3_EMBED_ADDR":  "127.0.0.1:0",
		"HOOKRELAY_DATA_DIR":       t.TempDir(),
		"HOOKRELAY_ADMIN_TOKEN":    "hra_test_admin_token_0123456789",
		"HOOKRELAY_ENCRYPTION_KEY": dbtest.TestEncryptionKey,
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, cleanup, err := newService(ctx, cfg, newLogger(cfg, &logtest.Buffer{}), io.Discard)
	require.NoError(t, err)
	defer cleanup()
	defer func() {
		if s.dispatch != nil {
			s.dispatch.Close()
		}
	}()
	for _, role := range allRoles {
		_, err := roleStarters[role](ctx, s)
		require.NoError(t, err, role)
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		s.registry.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		require.NotNil(t, m, "descriptor %s", d)
		names = append(names, m[1])
	}
	return names
}
