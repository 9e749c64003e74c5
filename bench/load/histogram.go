package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Histogram is a cumulative Prometheus histogram summed over all its label
// sets: Counts[i] observations were ≤ Bounds[i]; Bounds ends with +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
}

// Total returns the number of observations.
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// ParseHistogram reads the Prometheus text exposition from r and returns the
// histogram name (its name_bucket series), summing the buckets of every label
// set. A histogram absent from the text is empty, not an error.
func ParseHistogram(r io.Reader, name string) (Histogram, error) {
	prefix := name + "_bucket"
	sums := map[float64]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		rest := line[len(prefix):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric sharing the prefix
		}
		le, value, err := parseBucketLine(rest)
		if err != nil {
			return Histogram{}, fmt.Errorf("%s: %w in %q", name, err, line)
		}
		sums[le] += value
	}
	if err := sc.Err(); err != nil {
		return Histogram{}, fmt.Errorf("read metrics: %w", err)
	}
	var h Histogram
	for le := range sums {
		h.Bounds = append(h.Bounds, le)
	}
	sort.Float64s(h.Bounds)
	for _, le := range h.Bounds {
		h.Counts = append(h.Counts, sums[le])
	}
	return h, nil
}

// parseBucketLine parses `{...,le="0.005",...} 42` (optionally followed by a
// timestamp) into the bound and the value.
func parseBucketLine(rest string) (le, value float64, err error) {
	labels := ""
	if rest[0] == '{' {
		end := strings.LastIndexByte(rest, '}')
		if end < 0 {
			return 0, 0, fmt.Errorf("unterminated labels")
		}
		labels, rest = rest[1:end], rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, 0, fmt.Errorf("no value")
	}
	if value, err = strconv.ParseFloat(fields[0], 64); err != nil {
		return 0, 0, fmt.Errorf("bad value")
	}
	i := strings.Index(labels, `le="`)
	if i < 0 {
		return 0, 0, fmt.Errorf("no le label")
	}
	raw := labels[i+4:]
	j := strings.IndexByte(raw, '"')
	if j < 0 {
		return 0, 0, fmt.Errorf("unterminated le label")
	}
	if le, err = strconv.ParseFloat(raw[:j], 64); err != nil { // ParseFloat reads "+Inf"
		return 0, 0, fmt.Errorf("bad le %q", raw[:j])
	}
	return le, value, nil
}

// Sub returns the observations made between an earlier snapshot prev and h.
// Buckets missing from prev count as zero (a process that started after
// prev); a counter reset (a restarted process) yields h itself.
func (h Histogram) Sub(prev Histogram) Histogram {
	old := map[float64]float64{}
	for i, b := range prev.Bounds {
		old[b] = prev.Counts[i]
	}
	d := Histogram{Bounds: append([]float64(nil), h.Bounds...), Counts: make([]float64, len(h.Counts))}
	for i, b := range h.Bounds {
		d.Counts[i] = h.Counts[i] - old[b]
		if d.Counts[i] < 0 {
			return h
		}
	}
	return d
}

// Add returns the bucket-wise sum of two histograms (of two processes).
func (h Histogram) Add(o Histogram) Histogram {
	sums := map[float64]float64{}
	for i, b := range h.Bounds {
		sums[b] += h.Counts[i]
	}
	for i, b := range o.Bounds {
		sums[b] += o.Counts[i]
	}
	var r Histogram
	for b := range sums {
		r.Bounds = append(r.Bounds, b)
	}
	sort.Float64s(r.Bounds)
	for _, b := range r.Bounds {
		r.Counts = append(r.Counts, sums[b])
	}
	return r
}

// Quantile estimates the q-quantile (0..1) like PromQL histogram_quantile:
// it finds the bucket holding rank q×total and interpolates linearly inside
// it (from 0 for the first bucket). A rank in the +Inf bucket returns the
// largest finite bound. NaN when the histogram is empty.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Total()
	if total <= 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.Bounds {
		c := h.Counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// ScrapeHistograms fetches metricsURL once and parses each named histogram
// from it.
func ScrapeHistograms(ctx context.Context, client *http.Client, metricsURL string, names ...string) (map[string]Histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", metricsURL, resp.StatusCode)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	out := make(map[string]Histogram, len(names))
	for _, name := range names {
		h, err := ParseHistogram(bytes.NewReader(raw), name)
		if err != nil {
			return nil, err
		}
		out[name] = h
	}
	return out, nil
}

// ScrapeGauge fetches metricsURL once and returns the value of the
// unlabelled series name (0 when it is not there).
func ScrapeGauge(ctx context.Context, client *http.Client, metricsURL, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape %s: status %d", metricsURL, resp.StatusCode)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}
