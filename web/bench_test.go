package web_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/web"
)

const benchToken = "hra_bench_admin_token_0123456789"

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// loginCookie logs in through the form and returns the session cookie.
func loginCookie(tb testing.TB, h http.Handler, credential string) *http.Cookie {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/login", nil))
	m := csrfRe.FindStringSubmatch(rec.Body.String())
	if m == nil {
		tb.Fatalf("no csrf on the login form")
	}
	form := url.Values{"csrf": {m[1]}, "token": {credential}}
	req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "hr_session" && c.Value != "" {
			return c
		}
	}
	tb.Fatalf("login failed: %d %s", rec.Code, rec.Body.String())
	return nil
}

// BenchmarkPages measures every page's handler against a database holding
// 1,000,000 messages, 1,000,000 delivery attempts, 100,000 dead letters,
// 10,000 pending deliveries and an hour of samples.
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 50x ./web
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	dbURL := dbtest.NewURL(b)
	store := dbtest.Open(b, dbURL, db.Config{StatementTimeout: 10 * time.Minute})
	carrier, _ := dbtest.Carrier(b, store, nil)
	merchant, merchantKey := dbtest.Merchant(b, store, nil)
	var eps []int64
	for i := range 100 {
		opts := &dbtest.EndpointOpts{URL: fmt.Sprintf("http://127.0.0.1:9/hook/%d", i)}
		if i < 10 {
			opts.MerchantID = merchant.ID
		}
		ep, _ := dbtest.Endpoint(b, store, opts)
		eps = append(eps, ep.ID)
	}
	start := time.Now()
	dbtest.DashboardHistory(b, dbURL, dbtest.HistoryOpts{CarrierID: carrier.ID, EndpointIDs: eps,
		Messages: 1_000_000, Attempts: 1_000_000, DeadLetters: 100_000})
	for batch := range 10 {
		msgs := make([]db.NewMessage, 1000)
		for i := range msgs {
			key := fmt.Sprintf("PEND%d-%d", batch, i)
			msgs[i] = db.NewMessage{CarrierID: carrier.ID, EventType: "in_transit", OrderingKey: key,
				Queue: hookrelay.QueueFor(key, 32), Payload: []byte(`{"x":1}`), PayloadSize: 7,
				PayloadSHA256: make([]byte, 32), EndpointIDs: []int64{eps[i%len(eps)]}}
		}
		if _, err := store.MessageInsertMany(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	for i := range 360 {
		at := now.Add(-time.Duration(i) * 10 * time.Second)
		s := db.StatSample{SampledAt: at, WindowStart: at.Add(-10 * time.Second), WindowEnd: at,
			Ingested: 20000, Delivered: 19000, Failed: 1000, ErrorRate: 0.05, E2EP50Ms: 12, E2EP99Ms: 48,
			BacklogTotal: 10000, BacklogPerQueue: make([]int64, 32)}
		if err := store.StatSampleInsert(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	if err := dbtest.SettingPut(ctx, store, "admin_token_sha256", hex.EncodeToString(hookrelay.HashKey(benchToken))); err != nil {
		b.Fatal(err)
	}
	b.Logf("fixture loaded in %s", time.Since(start).Round(time.Millisecond))

	dash, err := web.New(ctx, web.Config{Store: store, Ops: ops.New(store, ops.Config{}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	e := echo.New()
	errs := httperr.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	errs.Install(e)
	dash.Mount(e, "/ui", errs)
	admin := loginCookie(b, e, benchToken)
	mcookie := loginCookie(b, e, merchantKey)

	// A delivery in the history whose endpoint (eps[0]) belongs to merchant.
	const histDelivery = 10_000_100
	dead, err := store.DeadLetterList(ctx, db.DeadLetterFilter{}, db.DeadLetterPage{Newest: true}, 1)
	if err != nil || len(dead) == 0 {
		b.Fatalf("no dead letters: %v", err)
	}
	csrfOf := func(c *http.Cookie) string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/ui/m/", nil)
		if c == admin {
			req = httptest.NewRequest(http.MethodGet, "/ui/database", nil)
		}
		req.AddCookie(c)
		e.ServeHTTP(rec, req)
		return csrfRe.FindStringSubmatch(rec.Body.String())[1]
	}
	adminCSRF := csrfOf(admin)

	pages := []struct {
		name   string
		path   string
		form   url.Values // POST when set
		cookie *http.Cookie
	}{
		{"overview", "/ui/", nil, admin},
		{"endpoints", "/ui/endpoints", nil, admin},
		{"dead_letters", "/ui/dead-letters", nil, admin},
		{"dead_letters_by_endpoint", fmt.Sprintf("/ui/dead-letters?endpoint_id=%d", eps[3]), nil, admin},
		{"dead_letters_by_carrier_since", fmt.Sprintf("/ui/dead-letters?carrier_id=%d&since=%s", carrier.ID,
			now.Add(-2*time.Hour).UTC().Format("2006-01-02T15:04")), nil, admin},
		{"dead_letters_page_2", fmt.Sprintf("/ui/dead-letters?before=%d_%d", dead[0].CreatedAt.Add(-time.Hour).UnixNano(), 0), nil, admin},
		{"dead_letters_confirm_all", "/ui/dead-letters/confirm", url.Values{"csrf": {adminCSRF}, "scope": {"filter"}, "action": {"retry"}}, admin},
		{"delivery_history", fmt.Sprintf("/ui/deliveries/%d", histDelivery), nil, admin},
		{"delivery_dead", fmt.Sprintf("/ui/deliveries/%d", dead[0].ID), nil, admin},
		{"message", "/ui/messages/500000", nil, admin},
		{"database", "/ui/database", nil, admin},
		{"merchant_home", "/ui/m/", nil, mcookie},
		{"merchant_endpoint", fmt.Sprintf("/ui/m/endpoints/%d", eps[0]), nil, mcookie},
		{"merchant_delivery", fmt.Sprintf("/ui/m/deliveries/%d", histDelivery), nil, mcookie},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				method, body := http.MethodGet, io.Reader(nil)
				if p.form != nil {
					method, body = http.MethodPost, strings.NewReader(p.form.Encode())
				}
				req := httptest.NewRequest(method, p.path, body)
				if p.form != nil {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				req.AddCookie(p.cookie)
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
