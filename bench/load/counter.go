package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ParseCounters reads the Prometheus text exposition from r and returns, for
// each name, the sum of its series whose labels contain every one of match
// (`key="value"` each; none: all its series). A name absent from the text
// sums to 0.
func ParseCounters(r io.Reader, match []string, names ...string) (map[string]float64, error) {
	out := make(map[string]float64, len(names))
	for _, n := range names {
		out[n] = 0
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			continue
		}
		name := line[:end]
		if _, ok := out[name]; !ok {
			continue
		}
		rest, labels := line[end:], ""
		if rest[0] == '{' {
			close := strings.LastIndexByte(rest, '}')
			if close < 0 {
				return nil, fmt.Errorf("%s: unterminated labels in %q", name, line)
			}
			labels, rest = rest[1:close], rest[close+1:]
		}
		if !hasLabels(labels, match) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: no value in %q", name, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w in %q", name, err, line)
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

// hasLabels reports whether the label list (`a="x",b="y"`) has each of
// match. Label values are compared as exposed (escaped).
func hasLabels(labels string, match []string) bool {
	for _, m := range match {
		found := false
		for _, l := range strings.Split(labels, ",") {
			if strings.TrimSpace(l) == m {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ScrapeCounters fetches metricsURL once and sums each named counter (or
// gauge) over its series with the labels of match.
func ScrapeCounters(ctx context.Context, client *http.Client, metricsURL string, match []string, names ...string) (map[string]float64, error) {
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
	return ParseCounters(resp.Body, match, names...)
}
