package storage_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hookrelay/hookrelay/storage"
)

// newS3Client returns a plain SDK client for the embedded server, for the S3
// calls Store does not make (ranges, listings, conditional writes).
func newS3Client(t testing.TB, e *storage.Embedded) *s3.Client {
	t.Helper()
	cfg := e.Config()
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(transport.CloseIdleConnections)
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(cfg.Endpoint),
		Region:       cfg.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: transport},
	})
}
