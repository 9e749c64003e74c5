package dispatch

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// connectProxy is a loopback HTTP proxy that only tunnels (CONNECT), asks
// for Basic credentials, and records every tunnel it was asked for. route
// maps a requested target to the address it really connects to, standing
// in for the internet behind the proxy.
type connectProxy struct {
	ln   net.Listener
	auth string // the Proxy-Authorization it wants

	mu      sync.Mutex
	targets []string          // CONNECT targets asked for, in order; guarded by mu
	route   map[string]string // guarded by mu
	wg      sync.WaitGroup
}

func newConnectProxy(t *testing.T, user, password string) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &connectProxy{ln: ln, route: map[string]string{},
		auth: "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// URL returns the proxy's URL with its credentials.
func (p *connectProxy) URL(user, password string) *url.URL {
	return &url.URL{Scheme: "http", User: url.UserPassword(user, password), Host: p.ln.Addr().String()}
}

func (p *connectProxy) setRoute(target, to string) {
	p.mu.Lock()
	p.route[target] = to
	p.mu.Unlock()
}

func (p *connectProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *connectProxy) serve() {
	defer p.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			p.tunnel(c)
		}()
	}
}

// tunnel answers one client connection: a CONNECT with the right
// credentials gets a tunnel to its (routed) target, anything else an error.
func (p *connectProxy) tunnel(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if req.Header.Get("Proxy-Authorization") != p.auth {
		_, _ = io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, req.Host)
	to := req.Host
	if r, ok := p.route[req.Host]; ok {
		to = r
	}
	p.mu.Unlock()
	up, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, br) // what the client sent after the CONNECT
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, up)
		done <- struct{}{}
	}()
	<-done // either side ended: close both (deferred), which ends the other
}

// TestEgressProxyCarriesDeliveries: with an egress proxy every delivery
// goes through a CONNECT tunnel, to an http:// and to an https:// endpoint
// (TLS end to end, verified against the endpoint's host name), signed and in
// order; the proxy is asked for the address hookrelay resolved, never the
// name. The SSRF guard still judges the endpoint's address, not the
// proxy's: with private targets refused, a name resolving to a public
// address is delivered through the loopback proxy, while a name (or
// literal) resolving to loopback is refused without any tunnel asked for.
func TestEgressProxyCarriesDeliveries(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	proxy := newConnectProxy(t, "relay", "s3cret")

	plain := newSink(t)
	var tlsGot sync.Mutex
	var tlsHosts []string
	tlsSink := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		tlsGot.Lock()
		tlsHosts = append(tlsHosts, r.Host+" "+r.TLS.ServerName)
		tlsGot.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(tlsSink.Close)
	roots := x509.NewCertPool()
	roots.AddCert(tlsSink.Certificate())
	tlsPort := tlsSink.URL[strings.LastIndex(tlsSink.URL, ":")+1:]
	plainAddr := strings.TrimPrefix(plain.srv.URL, "http://")
	plainPort := plainAddr[strings.LastIndex(plainAddr, ":")+1:]

	// DNS of the test: example.com (the name httptest's certificate is for)
	// is the TLS sink on loopback; public.merchant.test a public address
	// the proxy routes to the plain sink; rebound.merchant.test loopback.
	public := netip.MustParseAddr("93.184.216.34")
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "example.com", "rebound.merchant.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "public.merchant.test":
			return []netip.Addr{public}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	proxy.setRoute(net.JoinHostPort(public.String(), plainPort), plainAddr)

	cfg := testConfig()
	cfg.EgressProxy = &EgressProxy{URL: proxy.URL("relay", "s3cret")}
	cfg.RootCAs = roots
	cfg.Resolve = resolve

	// Deliveries to both receivers, private targets allowed (loopback).
	secret := stdSecret(3)
	httpEp, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: plain.srv.URL + "/in", Secret: secret})
	httpsEp, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "https://example.com:" + tlsPort + "/in"})
	const perKey = 4
	for i := range perKey {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{httpEp.ID, httpsEp.ID}, OrderingKey: "T1", Queues: 8,
			Payload: fmt.Appendf(nil, `{"tracking_no":"T1","seq":%d}`, i)})
	}
	_, stop := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "every delivery through the proxy", func() bool {
		tlsGot.Lock()
		n := len(tlsHosts)
		tlsGot.Unlock()
		return len(plain.requests()) >= perKey && n >= perKey
	})
	require.NoError(t, stop())
	reqs := plain.requests()
	require.Len(t, reqs, perKey)
	for _, r := range reqs {
		require.True(t, verifyStandardWebhook(secret, r.Header, r.Body), "signature verifies")
	}
	require.Equal(t, map[string]int{"T1": perKey}, checkOrder(t, reqs))
	tlsGot.Lock()
	for _, h := range tlsHosts {
		require.Equal(t, "example.com:"+tlsPort+" example.com", h, "TLS inside the tunnel names the endpoint's host")
	}
	tlsGot.Unlock()
	asked := proxy.asked()
	require.NotEmpty(t, asked)
	for _, a := range asked {
		require.Contains(t, []string{plainAddr, "127.0.0.1:" + tlsPort}, a, "the proxy is asked for the resolved address, not the name")
	}
	require.Contains(t, asked, "127.0.0.1:"+tlsPort)
	require.Contains(t, asked, plainAddr)

	// Private targets refused: the guard judges the endpoint, not the proxy.
	strict := cfg
	strict.AllowPrivateTargets = false
	d := New(testLogger(t), strict, store, nil, nil)
	t.Cleanup(d.Close)
	publicEp, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "http://public.merchant.test:" + plainPort + "/in"})
	before := len(plain.requests())
	res, err := d.Ping(ctx, publicEp.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeSuccess, res.Outcome, res.Error)
	require.Len(t, plain.requests(), before+1)
	require.Equal(t, net.JoinHostPort(public.String(), plainPort), proxy.asked()[len(proxy.asked())-1])

	rebound, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "http://rebound.merchant.test:" + plainPort + "/in"})
	literal, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: "https://127.0.0.1:" + tlsPort + "/in"})
	tunnels := len(proxy.asked())
	for _, id := range []int64{rebound.ID, literal.ID} {
		res, err := d.Ping(ctx, id)
		require.NoError(t, err)
		require.Equal(t, OutcomeRefused, res.Outcome, res.Error)
	}
	require.Len(t, proxy.asked(), tunnels, "no tunnel was asked for a refused address")
	require.Len(t, plain.requests(), before+1)

	// Wrong credentials: the proxy's refusal is a connection error, not a
	// refusal by the SSRF policy.
	wrong := strict
	wrong.EgressProxy = &EgressProxy{URL: proxy.URL("relay", "guess")}
	d2 := New(testLogger(t), wrong, store, nil, nil)
	t.Cleanup(d2.Close)
	res, err = d2.Ping(ctx, publicEp.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeConnError, res.Outcome, res.Error)
	require.Contains(t, res.Error, "407")
}
