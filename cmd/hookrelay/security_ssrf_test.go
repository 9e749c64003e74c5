package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/dispatch"
)

// ssrfURLs are endpoint URLs that reach loopback, private, link-local,
// metadata or otherwise internal addresses, in the notations that slip past
// naive checks.
var ssrfURLs = []string{
	"http://127.0.0.1/hook",
	"http://127.1/hook",
	"http://0.0.0.0/hook",
	"http://0/hook",
	"http://10.0.0.1/hook",
	"http://172.16.0.1/hook",
	"http://192.168.1.1/hook",
	"http://100.64.0.1/hook",
	"http://169.254.169.254/latest/meta-data/",
	"http://169.254.169.254:80/latest/meta-data/",
	"http://2130706433/hook",         // 127.0.0.1 as one decimal number
	"http://0x7f000001/hook",         // hex
	"http://0x7f.1/hook",             // hex, short form
	"http://0177.0.0.1/hook",         // octal
	"http://0251.0376.0251.0376/",    // 169.254.169.254 in octal
	"http://2852039166/",             // 169.254.169.254 as one decimal number
	"http://[::1]/hook",              // IPv6 loopback
	"http://[::]/hook",               // IPv6 unspecified
	"http://[fc00::1]/hook",          // unique local
	"http://[fd12:3456::1]/hook",     // unique local
	"http://[fe80::1]/hook",          // link-local
	"http://[fe80::1%25eth0]/hook",   // link-local with a zone
	"http://[::ffff:127.0.0.1]/hook", // IPv4-mapped loopback
	"http://[::ffff:7f00:1]/hook",    // the same in hex
	"http://[::ffff:a9fe:a9fe]/",     // IPv4-mapped metadata
	"http://[0:0:0:0:0:ffff:10.0.0.1]/hook",
	"http://[::127.0.0.1]/",               // IPv4-compatible loopback
	"http://[::a9fe:a9fe]/",               // IPv4-compatible metadata
	"http://[::ffff:0:7f00:1]/",           // SIIT (IPv4-translated) loopback
	"http://[2002:7f00:1::1]/",            // 6to4 of 127.0.0.1
	"http://[2002:a9fe:a9fe::1]/",         // 6to4 of the metadata address
	"http://[2001:0:808:808::80ff:fffe]/", // Teredo, client 127.0.0.1
	"http://[2001:0:a00:1::f7f7:f7f7]/",   // Teredo, server 10.0.0.1
	"http://[64:ff9b::7f00:1]/",           // NAT64 of 127.0.0.1
	"http://[64:ff9b:1:7f00:0:100::]/",    // local-use NAT64 (/48 layout) of 127.0.0.1
	"http://localhost/hook",
	"http://LOCALHOST:8080/hook",
	"http://localhost./hook", // trailing dot: a name the resolver maps to loopback
	"http://api.localhost/hook",
	"https://127.0.0.1:443/hook",
}

// TestSSRFRegistrationRefused registers endpoint URLs pointing inside the
// network, with private targets not allowed: every one is refused with 400,
// at creation and when an existing endpoint's URL is changed. A public
// address is accepted (the control that shows the check can pass).
func TestSSRFRegistrationRefused(t *testing.T) {
	t.Parallel()
	s := startServe(t, map[string]string{"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "false"})
	api := newSecAPI(t, s.URL)
	m := api.mustJSON(http.StatusCreated, "POST", "/v1/merchants", secAdminToken, map[string]any{"name": "ssrf"})
	key := m["api_key"].(string)

	urls := append([]string(nil), ssrfURLs...)
	// The machine's own name, when it resolves to an internal address (in
	// containers it usually maps to 127.0.0.1 or a private address).
	if host, err := os.Hostname(); err == nil {
		if addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host); err == nil && len(addrs) > 0 && !hookrelay.TargetAllowed(addrs[0]) {
			urls = append(urls, "http://"+host+"/hook")
		}
	}

	for _, u := range urls {
		st, data := api.do("POST", "/v1/endpoints", key, map[string]any{"url": u})
		require.Equal(t, http.StatusBadRequest, st, "POST /v1/endpoints %s: %s", u, data)
	}
	ep := api.mustJSON(http.StatusCreated, "POST", "/v1/endpoints", key, map[string]any{"url": "http://93.184.216.34/hook"})
	id := secIDOf(t, ep)
	for _, u := range urls {
		st, data := api.do("PATCH", "/v1/endpoints/"+id, key, map[string]any{"url": u})
		require.Equal(t, http.StatusBadRequest, st, "PATCH url %s: %s", u, data)
	}
	got := api.mustJSON(http.StatusOK, "GET", "/v1/endpoints/"+id, key, nil)
	require.Equal(t, "http://93.184.216.34/hook", got["url"], "a refused PATCH changed the URL")
}

// TestSSRFDNSRebinding: an endpoint was registered while its name resolved
// to a public address; by delivery time the name resolves to loopback. The
// dispatcher checks the address it actually connects to, so the delivery
// is refused and nothing reaches the loopback server. With private targets
// allowed the same set-up delivers (the control).
func TestSSRFDNSRebinding(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "control-allowed"}[allow], func(t *testing.T) {
			t.Parallel()
			hits, attempt, lookups := rebindDelivery(t, allow, netip.MustParseAddr("127.0.0.1"))
			require.NotZero(t, lookups, "the dispatcher did not resolve the endpoint's name through the hook")
			if allow {
				require.Equal(t, "success", attempt.Outcome, "control: %+v", attempt)
				require.EqualValues(t, 1, hits)
				return
			}
			require.Zero(t, hits, "a delivery reached loopback after the name was rebound to 127.0.0.1")
			require.Equal(t, "refused", attempt.Outcome, "attempt: %+v", attempt)
		})
	}
}

// TestSSRFEmbeddedIPv4AtConnect: the endpoint's name resolves, by delivery
// time, to an IPv6 address that carries a loopback or private IPv4 address.
// The dialer judges the carried address and refuses the connection.
func TestSSRFEmbeddedIPv4AtConnect(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"::127.0.0.1", "::ffff:0:7f00:1", "2002:7f00:1::1", "2001:0:808:808::80ff:fffe", "64:ff9b::a00:1"} {
		t.Run(a, func(t *testing.T) {
			t.Parallel()
			hits, attempt, lookups := rebindDelivery(t, false, netip.MustParseAddr(a))
			require.NotZero(t, lookups, "the dispatcher did not resolve the endpoint's name through the hook")
			require.Zero(t, hits)
			require.Equal(t, "refused", attempt.Outcome, "attempt: %+v", attempt)
		})
	}
}

// rebindDelivery stores an endpoint at http://rebind.hookrelay.test:<port>
// (as if registration had seen a public address) and one delivery for it,
// runs a dispatcher whose resolver now answers to, and returns what the
// loopback server received and the first attempt.
func rebindDelivery(t *testing.T, allowPrivate bool, to netip.Addr) (int64, db.Attempt, int64) {
	store := dbtest.New(t)
	sink := newSecSink(t, http.StatusNoContent)
	_, port, err := net.SplitHostPort(sink.Listener.Addr().String())
	require.NoError(t, err)
	carrier, _ := dbtest.Carrier(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "http://rebind.hookrelay.test:" + port + "/hook"})
	dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: carrier.ID, EndpointIDs: []int64{ep.ID}})

	var lookups atomic.Int64
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		return []netip.Addr{to}, nil
	}
	d := dispatch.New(slog.New(slog.DiscardHandler), dispatch.Config{
		Lease: 2 * time.Second, IdlePoll: 20 * time.Millisecond, AllowPrivateTargets: allowPrivate, Resolve: resolve,
	}, store, nil, prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dispatcher did not stop")
		}
	}()

	var first db.Attempt
	require.Eventually(t, func() bool {
		as, err := store.AttemptListRecent(context.Background(), ep.ID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), 10)
		if err != nil || len(as) == 0 {
			return false
		}
		first = as[len(as)-1]
		return true
	}, 30*time.Second, 20*time.Millisecond, "no delivery attempt recorded")
	return sink.hits.Load(), first, lookups.Load()
}
