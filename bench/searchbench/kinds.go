package searchbench

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// kinds are the searches Measure times: by tracking number over the whole
// history, and the listings of the last day's window (first pages and
// pages at a random depth) with each filter, as the operator and as a
// merchant.
func (r *runner) kinds(ctx context.Context, c MeasureConfig) ([]search, error) {
	s := r.s
	all := url.Values{"since": {rfc(s.Start().Add(-time.Minute))}, "until": {rfc(s.End)}}
	day := url.Values{"since": {rfc(s.End.Add(-24 * time.Hour))}, "until": {rfc(s.End)}}
	with := func(base url.Values, kv ...string) url.Values {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return q
	}
	keyed := func(name string, base url.Values, merchant bool) search {
		return search{name: name, count: c.Searches, query: func(int) (url.Values, string, error) {
			k := r.randomKey()
			tok := r.admin
			if merchant {
				tok = r.merchants[s.merchantOf(k)]
			}
			return with(base, "ordering_key", s.trackingNumber(k)), tok, nil
		}}
	}
	out := []search{
		keyed("key, operator, 7 days", all, false),
		keyed("key, merchant, 7 days", all, true),
		keyed("key, operator, last 24 h", url.Values{}, false),
		{name: "key absent, operator, 7 days", count: c.Searches, query: func(int) (url.Values, string, error) {
			return with(all, "ordering_key", fmt.Sprintf("ZZ%010d", r.rng.Int64N(1e10))), r.admin, nil
		}},
	}
	// A listing: its filter (random among choices) as its caller, on the
	// first page and on a page at a random depth of the day.
	type listing struct {
		name    string
		filters func() (kv []string, token string)
	}
	listings := []listing{
		{"operator", func() ([]string, string) { return nil, r.admin }},
		{"operator, carrier_id", func() ([]string, string) {
			return []string{"carrier_id", itoa(1 + r.rng.Int64N(int64(s.Carriers)))}, r.admin
		}},
		{"operator, event_type", func() ([]string, string) {
			return []string{"event_type", eventTypes[r.rng.IntN(s.PerKey)]}, r.admin
		}},
		{"operator, endpoint_id", func() ([]string, string) {
			return []string{"endpoint_id", itoa(1 + r.rng.Int64N(int64(2*s.Merchants)))}, r.admin
		}},
		{"operator, status=delivered", func() ([]string, string) { return []string{"status", "delivered"}, r.admin }},
		{"operator, status=dead", func() ([]string, string) { return []string{"status", "dead"}, r.admin }},
		{"operator, status=pending", func() ([]string, string) { return []string{"status", "pending"}, r.admin }},
		{"merchant", func() ([]string, string) { return nil, r.merchants[1+r.rng.IntN(s.Merchants)] }},
	}
	perDay := s.Messages / int64(s.Days)
	for _, l := range listings {
		out = append(out, search{name: "list first page, " + l.name, count: c.Lists, query: func(int) (url.Values, string, error) {
			kv, tok := l.filters()
			return with(day, kv...), tok, nil
		}})
		if strings.Contains(l.name, "pending") {
			continue // the queued deliveries are the newest messages: no depth
		}
		out = append(out, search{name: "list deep page, " + l.name, count: c.Lists, query: func(int) (url.Values, string, error) {
			// The first page (untimed) gives the search's cursor; a
			// filter with one page only is drawn again, and a search with
			// one page only whatever its filter (a small fill's dead
			// letters) is timed on that page.
			for range 20 {
				kv, tok := l.filters()
				q := with(day, kv...)
				first, err := r.get(ctx, q, tok)
				if err != nil {
					return nil, "", err
				}
				if first.NextCursor != "" {
					q.Set("cursor", cursorBefore(first.NextCursor, s.Messages-r.rng.Int64N(perDay)))
					return q, tok, nil
				}
			}
			kv, tok := l.filters()
			return with(day, kv...), tok, nil
		}})
	}
	return out, nil
}

// cursorBefore is cursor (of GET /v1/messages, "m2:id:since:until:scope"
// in URL-safe base64) moved to before message id: a page at that depth of
// the same search.
func cursorBefore(cursor string, id int64) string {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return cursor
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 5 {
		return cursor
	}
	parts[1] = itoa(id)
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, ":")))
}
