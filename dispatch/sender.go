package dispatch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Outcomes recorded in delivery_attempts.outcome.
const (
	OutcomeSuccess   = "success"
	OutcomeFailed    = "failed"     // a non-2xx answer (3xx included: redirects are not followed)
	OutcomeTimeout   = "timeout"    // no answer within the endpoint's timeout
	OutcomeConnError = "conn_error" // could not connect or the connection broke
	OutcomeGone      = "gone"       // 410: the endpoint is disabled
	OutcomeThrottled = "throttled"  // 429/503
	OutcomeRefused   = "refused"    // the SSRF policy refused the address
)

const (
	// excerptBytes of a response body are kept for the attempt history.
	excerptBytes = 2048
	// drainBytes more are read and discarded so the connection can be
	// reused; a longer body closes the connection instead.
	drainBytes = 64 << 10
	// connRetries is how many times a connection-level failure is retried
	// in-process (never an HTTP status).
	connRetries = 2
)

// request is one POST to an endpoint.
type request struct {
	URL     string
	Body    []byte
	Header  http.Header
	Timeout time.Duration
}

// response is what came of a request.
type response struct {
	Outcome    string
	Status     int
	Latency    time.Duration
	Err        string
	Excerpt    string
	RetryAfter time.Duration // from a 429/503 Retry-After, when hasRetryAfter
	// hasRetryAfter reports whether the endpoint named a wait.
	hasRetryAfter bool
}

// httpSender posts deliveries through a go-retryablehttp client whose
// transport dials with the SSRF guard, follows no redirects and keeps
// connections alive.
type httpSender struct {
	client *retryablehttp.Client
	now    func() time.Time
}

// Resolver looks up the addresses of a host name; tests replace it to
// simulate DNS changing after an endpoint was registered.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

func newHTTPSender(allowPrivate bool, proxy *EgressProxy, roots *x509.CertPool, resolve Resolver, maxConnsPerHost int, now func() time.Time) *httpSender {
	d := newDialer(allowPrivate, nil)
	dial := d.DialContext
	if resolve != nil {
		dial = resolvingDial(d, resolve)
	}
	if proxy != nil {
		// The proxy's own address is not judged (it is usually private);
		// proxyDial judges the endpoint's.
		dial = proxyDial(proxy, newDialer(true, nil), dial, resolve, allowPrivate)
	}
	tr := &http.Transport{
		// No Proxy: an egress proxy is reached by the dialer (proxyDial),
		// which judges the endpoint's address before asking for a tunnel.
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   max(maxConnsPerHost, 16),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
	}
	hc := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	c := retryablehttp.NewClient()
	c.HTTPClient = hc
	c.Logger = nil
	c.RetryMax = connRetries
	c.RetryWaitMin = 20 * time.Millisecond
	c.RetryWaitMax = 200 * time.Millisecond
	c.CheckRetry = retryConnErrors
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &httpSender{client: c, now: now}
}

// resolvingDial resolves the host with resolve and dials each address in
// turn through d (whose Control hook judges the address actually dialed).
func resolvingDial(d *net.Dialer, resolve Resolver) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		var last error = fmt.Errorf("no addresses for %s", host)
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}

// retryConnErrors retries only connection-level failures: never an HTTP
// answer, never a timeout, never an address the SSRF policy refused.
func retryConnErrors(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil || err == nil || resp != nil {
		return false, nil
	}
	if errors.Is(err, errTargetRefused) || isTimeout(err) {
		return false, nil
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true, nil
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), nil
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Send posts req and classifies the answer.
func (s *httpSender) Send(ctx context.Context, req request) response {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	start := s.now()
	hr, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, req.URL, req.Body)
	if err != nil {
		return response{Outcome: OutcomeFailed, Err: "bad request: " + err.Error()}
	}
	hr.Header = req.Header
	resp, err := s.client.Do(hr)
	lat := s.now().Sub(start)
	if err != nil {
		out := response{Outcome: OutcomeConnError, Latency: lat, Err: err.Error()}
		switch {
		case errors.Is(err, errTargetRefused):
			out.Outcome = OutcomeRefused
		case isTimeout(err):
			out.Outcome, out.Err = OutcomeTimeout, "timeout after "+req.Timeout.String()
		}
		return out
	}
	excerpt := readExcerpt(resp.Body)
	out := response{Status: resp.StatusCode, Latency: lat, Excerpt: excerpt}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Outcome = OutcomeSuccess
	case resp.StatusCode == http.StatusGone:
		out.Outcome, out.Err = OutcomeGone, "410 Gone"
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		out.Outcome, out.Err = OutcomeThrottled, "HTTP "+strconv.Itoa(resp.StatusCode)
		out.RetryAfter, out.hasRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.now())
	default:
		out.Outcome, out.Err = OutcomeFailed, "HTTP "+strconv.Itoa(resp.StatusCode)
	}
	return out
}

// readExcerpt keeps the first excerptBytes of body, discards up to
// drainBytes more (so the connection is reused) and closes it; a longer body
// is cut off, which closes the connection.
func readExcerpt(body io.ReadCloser) string {
	defer body.Close()
	bp := excerptPool.Get().(*[]byte)
	defer excerptPool.Put(bp)
	buf := *bp
	n, _ := io.ReadFull(body, buf)
	if n == excerptBytes {
		_, _ = io.CopyN(io.Discard, body, drainBytes)
	}
	return string(bytes.ReplaceAll(bytes.ToValidUTF8(buf[:n], []byte("?")), []byte{0}, nil))
}

// excerptPool recycles the response-excerpt buffers.
var excerptPool = sync.Pool{New: func() any { b := make([]byte, excerptBytes); return &b }}

// closeIdle closes idle keep-alive connections.
func (s *httpSender) closeIdle() { s.client.HTTPClient.CloseIdleConnections() }
