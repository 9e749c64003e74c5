package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// maxPresignTTL is the longest validity Signature Version 4 allows.
const maxPresignTTL = 7 * 24 * time.Hour

// Presign returns a URL that lets anyone holding it GET the object under key
// for ttl, without credentials. It signs locally and does not check that the
// object exists.
//
// A URL signed with temporary credentials (an instance or task role) stops
// working when those credentials expire, which may be before ttl.
func (s *Store) Presign(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > maxPresignTTL {
		return "", fmt.Errorf("s3 presign %s: ttl %s outside (0, %s]", key, ttl, maxPresignTTL)
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3 presign %s: %w", key, err)
	}
	return req.URL, nil
}
