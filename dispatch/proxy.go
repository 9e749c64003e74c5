package dispatch

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/hookrelay/hookrelay"
)

// EgressProxy sends deliveries through an HTTP proxy, so that merchants see
// the proxy's addresses (static egress IPs) rather than the dispatchers'.
//
// Every delivery, to an http:// or an https:// endpoint, goes through a
// CONNECT tunnel. hookrelay resolves the endpoint's host itself, applies the
// SSRF policy to the addresses (the proxy's own address is not checked: it
// is usually private), and asks the proxy for a tunnel to the address it
// checked, not to the host name, so the proxy cannot resolve the name to
// another address than the one allowed. TLS runs inside the tunnel with
// the endpoint's host name (SNI, certificate verification), end to end.
type EgressProxy struct {
	// URL is the proxy, http://[user:password@]host:port; user and password,
	// when present, go in a Proxy-Authorization (Basic) header.
	URL *url.URL
	// NoProxy, when set, reports the hosts reached directly instead (the
	// NO_PROXY of the environment's proxy variables).
	NoProxy func(host string) bool
}

// ParseEgressProxy parses a proxy URL: http://[user:password@]host:port (the
// port defaults to 80).
func ParseEgressProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "want an http:// proxy URL such as http://proxy.internal:3128")
	}
	return u, nil
}

// EgressProxyFromEnv returns the proxy of the environment: HTTPS_PROXY, else
// HTTP_PROXY (or their lower-case spellings), with NO_PROXY's exclusions;
// nil when neither is set. getenv reads the environment.
func EgressProxyFromEnv(getenv func(string) string) (*EgressProxy, error) {
	cfg := httpproxy.Config{
		HTTPSProxy: firstEnv(getenv, "HTTPS_PROXY", "https_proxy"),
		HTTPProxy:  firstEnv(getenv, "HTTP_PROXY", "http_proxy"),
		NoProxy:    firstEnv(getenv, "NO_PROXY", "no_proxy"),
	}
	raw := cfg.HTTPSProxy
	if raw == "" {
		raw = cfg.HTTPProxy
	}
	if raw == "" {
		return nil, nil
	}
	u, err := ParseEgressProxy(raw)
	if err != nil {
		return nil, err
	}
	// One proxy for every delivery: httpproxy then only answers whether a
	// host is excluded.
	cfg.HTTPSProxy, cfg.HTTPProxy = u.String(), u.String()
	match := cfg.ProxyFunc()
	noProxy := func(host string) bool {
		p, err := match(&url.URL{Scheme: "https", Host: host})
		return err == nil && p == nil
	}
	return &EgressProxy{URL: u, NoProxy: noProxy}, nil
}

func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// proxyConnectTimeout bounds the CONNECT exchange with the proxy (the dial
// itself has the dialer's timeout).
const proxyConnectTimeout = 10 * time.Second

// proxyDial returns the DialContext of a transport that tunnels through p:
// direct (the guarded dialer) for hosts p excludes; otherwise the host is
// resolved with resolve (nil: the system resolver), each address is judged
// by the SSRF policy unless allowPrivate, and plain dials the proxy.
func proxyDial(p *EgressProxy, plain *net.Dialer, direct dialFunc, resolve Resolver, allowPrivate bool) dialFunc {
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if p.NoProxy != nil && p.NoProxy(host) {
			return direct(ctx, network, addr)
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = resolve(ctx, host); err != nil {
			return nil, err
		}
		var last error = fmt.Errorf("no addresses for %s", host)
		for _, ip := range ips {
			target := net.JoinHostPort(ip.Unmap().String(), port)
			if !allowPrivate && !hookrelay.TargetAllowed(ip) {
				last = fmt.Errorf("dial %s through proxy: %w", target, errTargetRefused)
				continue
			}
			c, err := connectVia(ctx, plain, p.URL, target)
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}

// connectVia dials the proxy and asks it for a tunnel to target (ip:port).
func connectVia(ctx context.Context, d *net.Dialer, proxy *url.URL, target string) (net.Conn, error) {
	proxyAddr := proxy.Host
	if proxy.Port() == "" {
		proxyAddr = net.JoinHostPort(proxy.Hostname(), "80")
	}
	c, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("dial egress proxy: %w", err)
	}
	deadline := time.Now().Add(proxyConnectTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("egress proxy CONNECT %s: %w", target, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("egress proxy CONNECT %s: %w", target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("egress proxy CONNECT %s: %s", target, resp.Status)
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The target spoke first and the reader holds its bytes.
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// bufferedConn reads what its reader already buffered before the rest of
// the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
