package storage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Timeouts and retries of the S3 client. They are short on purpose: ingest
// answers 503 when the store cannot take a payload, so an outage must turn
// into an error within seconds instead of holding requests open.
const (
	// requestTimeout bounds one HTTP request, body included.
	requestTimeout = 10 * time.Second
	// dialTimeout bounds opening a TCP connection.
	dialTimeout = 3 * time.Second
	// maxAttempts counts the first try: one retry at most.
	maxAttempts = 2
	// maxRetryBackoff caps the pause before the retry.
	maxRetryBackoff = 200 * time.Millisecond
	// maxIdleConnsPerHost keeps enough warm connections for concurrent
	// ingest requests to one endpoint.
	maxIdleConnsPerHost = 64
)

// Store reads and writes payload objects in one bucket. It is safe for
// concurrent use.
type Store struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	region  string
	// idle closes the HTTP client's pooled connections; nil if it cannot.
	idle idleCloser
	// local, set by Embedded.NewStore, is the embedded server in this
	// process that client reaches: Put and Get call its backend directly.
	local *Embedded
}

// idleCloser is the part of *http.Client that Close needs.
type idleCloser interface {
	CloseIdleConnections()
}

// New returns a Store for cfg. It does not contact the endpoint; call Ping or
// EnsureBucket for that. ctx bounds loading the SDK's shared configuration.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(newHTTPClient()),
		config.WithRetryer(newRetryer),
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	// Loading may have derived a new client (AWS_CA_BUNDLE does); freeze
	// that one into a plain *http.Client so Close can reach its connections.
	if b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		awsCfg.HTTPClient = b.Freeze()
	}
	idle, _ := awsCfg.HTTPClient.(idleCloser)

	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle
	})
	return &Store{
		client:  client,
		presign: s3.NewPresignClient(client),
		bucket:  cfg.Bucket,
		region:  cfg.Region,
		idle:    idle,
	}, nil
}

// Bucket returns the name of the bucket the Store uses.
func (s *Store) Bucket() string { return s.bucket }

// Close releases the Store's idle connections. The Store must not be used
// afterwards.
func (s *Store) Close() {
	if s.idle != nil {
		s.idle.CloseIdleConnections()
	}
}

// newHTTPClient returns the SDK's HTTP client with timeouts that fail fast
// when the endpoint is down or hangs.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithTimeout(requestTimeout).
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = dialTimeout }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = 5 * time.Second
			t.ResponseHeaderTimeout = requestTimeout
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
		})
}

// newRetryer returns the SDK's standard retryer cut down to one quick retry.
// The client-side retry quota is off: with two attempts it adds nothing, and
// once drained by an outage it would fail requests that could have succeeded.
func newRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxRetryBackoff
		o.RateLimiter = ratelimit.None
	})
}
