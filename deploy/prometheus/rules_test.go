// Package prometheus_test checks the alert rules and the Grafana dashboard
// beside them: every expression parses with Prometheus's own PromQL parser,
// the rule file has the shape Prometheus loads, and the metric names are
// the ones the product's test (cmd/hookrelay, TestDeployFilesNameRealMetrics)
// checks against the real registry.
package prometheus_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// ruleFile is the part of Prometheus's rule file format these rules use;
// decoding is strict, so a misspelt key fails.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// sameAsProductTest is the pattern cmd/hookrelay's test finds metric names
// with; TestNamesFoundByThePattern shows it finds every selector's name.
var sameAsProductTest = regexp.MustCompile(`\b(?:hookrelay|go|process)_[a-z0-9_]*[a-z0-9]`)

// promql parses with the default options, as a Prometheus server does.
var promql = parser.NewParser(parser.Options{})

var labelRef = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

func TestAlertRules(t *testing.T) {
	raw, err := os.ReadFile("alerts.yaml")
	require.NoError(t, err)
	var f ruleFile
	require.NoError(t, yaml.UnmarshalStrict(raw, &f))
	require.NotEmpty(t, f.Groups)
	seen := map[string]bool{}
	for _, g := range f.Groups {
		require.NotEmpty(t, g.Rules, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: a rule without a name", g.Name)
			require.False(t, seen[r.Alert], "alert %s twice", r.Alert)
			seen[r.Alert] = true
			expr, err := promql.ParseExpr(r.Expr)
			require.NoError(t, err, "%s: %s", r.Alert, r.Expr)
			require.Contains(t, []parser.ValueType{parser.ValueTypeVector, parser.ValueTypeScalar}, expr.Type(), r.Alert)
			if r.For != "" {
				_, err := model.ParseDuration(r.For)
				require.NoError(t, err, "%s for", r.Alert)
			}
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			// A label the annotation prints must survive the expression's
			// aggregations, or the summary reads "<no value>".
			kept := keptLabels(expr)
			for _, a := range r.Annotations {
				for _, m := range labelRef.FindAllStringSubmatch(a, -1) {
					require.True(t, kept == nil || slices.Contains(kept, m[1]), "%s prints $labels.%s, which its expression aggregates away", r.Alert, m[1])
				}
			}
		}
	}
}

// keptLabels returns the labels the outermost aggregation keeps (its by
// clause), or nil when the expression has none.
func keptLabels(e parser.Expr) []string {
	var kept []string
	found := false
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok && !found {
			found = true
			if !a.Without {
				kept = append([]string{}, a.Grouping...)
			}
		}
		return nil
	})
	if !found {
		return nil
	}
	return kept
}

// dashboard is the part of Grafana's dashboard model the test reads.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaVars are the dashboard variables as Prometheus would see them
// after Grafana substitutes them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")

func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../grafana/hookrelay.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.Equal(t, "hookrelay", d.UID)
	ids := map[int]bool{}
	targets := 0
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			targets++
			_, err := promql.ParseExpr(grafanaVars.Replace(tg.Expr))
			require.NoError(t, err, "%s %s: %s", p.Title, tg.RefID, tg.Expr)
		}
	}
	require.Greater(t, targets, 20)
}

// TestNamesFoundByThePattern: the names the product's test checks (found by
// a pattern over the whole file) are exactly the parser's selectors.
func TestNamesFoundByThePattern(t *testing.T) {
	var exprs []string
	raw, err := os.ReadFile("alerts.yaml")
	require.NoError(t, err)
	var f ruleFile
	require.NoError(t, yaml.UnmarshalStrict(raw, &f))
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	raw, err = os.ReadFile("../grafana/hookrelay.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, grafanaVars.Replace(tg.Expr))
		}
	}
	for _, e := range exprs {
		expr, err := promql.ParseExpr(e)
		require.NoError(t, err, e)
		var selectors []string
		for _, vs := range parser.ExtractSelectors(expr) {
			for _, m := range vs {
				if m.Name == model.MetricNameLabel {
					selectors = append(selectors, m.Value)
				}
			}
		}
		byPattern := sameAsProductTest.FindAllString(e, -1)
		sort.Strings(selectors)
		sort.Strings(byPattern)
		require.Equal(t, slices.Compact(selectors), slices.Compact(byPattern), e)
	}
}
