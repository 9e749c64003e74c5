package searchbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookrelay/hookrelay"
)

// MeasureConfig says what Measure times.
type MeasureConfig struct {
	// Searches is how many of each search by tracking number are timed,
	// Lists how many of each listing.
	Searches, Lists int
	// OutDir, when set, receives results.json and, with PGLog set (the
	// server's log file), the plans of one search of each kind as
	// auto_explain logs them (plans.log).
	OutDir, PGLog string
	Seed          uint64
	// Budget bounds the time spent timing one kind: a kind whose searches
	// are slow is timed fewer times (Latency.Count says how many).
	Budget time.Duration
	// Only, when set, keeps the kinds whose name it matches.
	Only *regexp.Regexp
}

// DefaultMeasureConfig times 1,000 searches by key and 100 of each listing.
func DefaultMeasureConfig() MeasureConfig {
	return MeasureConfig{Searches: 1000, Lists: 100, Seed: 1, Budget: 2 * time.Minute}
}

// Latency is the distribution of one kind of search's response times.
type Latency struct {
	Name               string
	Count              int
	P50, P95, P99, Max float64 // milliseconds
	MeanItems          float64 // messages per answer
	// Failed searches (an error answer, such as the statement timeout's)
	// count with the time they took.
	Failed int
}

// Results is what Measure found.
type Results struct {
	Messages  int64
	Window    [2]time.Time
	Latencies []Latency
}

// search is one kind of search: query returns the request of the i-th one,
// as whom (a bearer token).
type search struct {
	name  string
	count int
	query func(i int) (url.Values, string, error)
}

// Measure starts bin's API on dbURL (filled by Fill with shape s, whatever
// its End) and times, one at a time, the searches of kinds(), then saves
// the plans.
func Measure(ctx context.Context, dbURL, bin string, s Shape, c MeasureConfig, log io.Writer) (Results, error) {
	res := Results{Messages: s.Messages}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	var maxID int64
	var end time.Time
	if err := pool.QueryRow(ctx, `SELECT id, received_at FROM messages ORDER BY id DESC LIMIT 1`).Scan(&maxID, &end); err != nil {
		return res, fmt.Errorf("newest message: %w", err)
	}
	if maxID != s.Messages {
		return res, fmt.Errorf("the database holds %d messages, the shape %d: give the fill's -messages", maxID, s.Messages)
	}
	// The newest message was received one step before End.
	s.End = end.Add(time.Duration(s.stepSeconds() * float64(time.Second))).Truncate(time.Minute).Add(time.Minute)
	res.Window = [2]time.Time{s.Start(), s.End}
	keys, err := merchantKeys(ctx, pool, s.Merchants)
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "hookrelay-searchbench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	admin := hookrelay.NewKey(hookrelay.AdminTokenPrefix)
	a, err := startAPI(ctx, bin, dbURL, admin, dir)
	if err != nil {
		return res, err
	}
	defer a.stop()
	r := &runner{api: a, s: s, admin: admin, merchants: keys, rng: rand.New(rand.NewPCG(c.Seed, 2))}
	kinds, err := r.kinds(ctx, c)
	if err != nil {
		return res, err
	}
	if c.Only != nil {
		kinds = slices.DeleteFunc(kinds, func(k search) bool { return !c.Only.MatchString(k.name) })
	}
	for _, k := range kinds {
		l, err := r.time(ctx, k, c.Budget)
		if err != nil {
			return res, fmt.Errorf("%s: %w", k.name, err)
		}
		fmt.Fprintf(log, "%-42s n=%d p50=%.1f p95=%.1f p99=%.1f max=%.1f ms (%.0f items, %d failed)\n",
			l.Name, l.Count, l.P50, l.P95, l.P99, l.Max, l.MeanItems, l.Failed)
		res.Latencies = append(res.Latencies, l)
	}
	if c.OutDir != "" {
		if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
			return res, err
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(filepath.Join(c.OutDir, "results.json"), b, 0o644); err != nil {
			return res, err
		}
		if c.PGLog != "" {
			if err := r.explain(ctx, pool, dbURL, bin, kinds, c, dir); err != nil {
				return res, fmt.Errorf("plans: %w", err)
			}
		}
	}
	return res, nil
}

// merchantKeys gives merchants 1..n new API keys and returns them.
func merchantKeys(ctx context.Context, pool *pgxpool.Pool, n int) ([]string, error) {
	keys := make([]string, n+1)
	for m := 1; m <= n; m++ {
		keys[m] = hookrelay.NewKey(hookrelay.MerchantKeyPrefix)
		if _, err := pool.Exec(ctx, `UPDATE merchants SET api_key_hash = $2, api_key_prefix = $3 WHERE id = $1`,
			m, hookrelay.HashKey(keys[m]), hookrelay.KeyDisplayPrefix(keys[m])); err != nil {
			return nil, fmt.Errorf("merchant keys: %w", err)
		}
	}
	return keys, nil
}

type runner struct {
	api       *api
	s         Shape
	admin     string
	merchants []string
	rng       *rand.Rand
}

// page is an answer of GET /v1/messages.
type page struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func (r *runner) get(ctx context.Context, q url.Values, token string) (page, error) {
	var p page
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.api.url+"/v1/messages?"+q.Encode(), nil)
	if err != nil {
		return p, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return p, fmt.Errorf("GET /v1/messages?%s: %s: %s", q.Encode(), resp.Status, b)
	}
	return p, json.NewDecoder(resp.Body).Decode(&p)
}

// time runs k's searches one after the other and times each request (not
// what query does to make it), after a few untimed ones (the API's
// connections and prepared statements).
func (r *runner) time(ctx context.Context, k search, budget time.Duration) (Latency, error) {
	for i := range min(3, k.count) {
		q, tok, err := k.query(i)
		if err != nil {
			return Latency{}, err
		}
		_, _ = r.get(ctx, q, tok)
	}
	ms := make([]float64, 0, k.count)
	items, failed := 0, 0
	start := time.Now()
	for i := 0; i < k.count && (i == 0 || time.Since(start) < budget); i++ {
		q, tok, err := k.query(i)
		if err != nil {
			return Latency{}, err
		}
		t := time.Now()
		p, err := r.get(ctx, q, tok)
		ms = append(ms, float64(time.Since(t).Microseconds())/1000)
		if err != nil {
			if ctx.Err() != nil {
				return Latency{}, err
			}
			failed++
		}
		items += len(p.Items)
	}
	slices.Sort(ms)
	at := func(q float64) float64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	return Latency{Name: k.name, Count: len(ms), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: ms[len(ms)-1],
		MeanItems: float64(items) / float64(len(ms)), Failed: failed}, nil
}

// randomKey is a random message's key number.
func (r *runner) randomKey() int64 {
	return r.s.keyNumber(r.rng.Int64N(r.s.Messages))
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
