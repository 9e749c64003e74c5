package storage

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// EnsureBucket creates the bucket unless it exists. It is idempotent, and
// safe when several processes start at once: losing the race to create the
// bucket is success, provided the bucket is then reachable.
func (s *Store) EnsureBucket(ctx context.Context) error {
	err := s.headBucket(ctx)
	if err == nil {
		return nil
	}
	if !hasErrorCode(err, "NotFound", "NoSuchBucket") {
		return fmt.Errorf("s3 head bucket %s: %w", s.bucket, err)
	}

	in := &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	// us-east-1 is the default location and must not be named.
	if s.region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(s.region),
		}
	}
	_, err = s.client.CreateBucket(ctx, in)
	switch {
	case err == nil, hasErrorCode(err, "BucketAlreadyOwnedByYou"):
		return nil
	case hasErrorCode(err, "BucketAlreadyExists"):
		// AWS says this when someone else owns the name; S3-compatible
		// servers also say it when another process of ours just made it.
		// Only a bucket we can reach will do.
		if err := s.headBucket(ctx); err != nil {
			return fmt.Errorf("s3 create bucket %s: exists but unreachable: %w", s.bucket, err)
		}
		return nil
	default:
		return fmt.Errorf("s3 create bucket %s: %w", s.bucket, err)
	}
}

// Ping reports whether the bucket is reachable, for readiness checks.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.headBucket(ctx); err != nil {
		return fmt.Errorf("s3 head bucket %s: %w", s.bucket, err)
	}
	return nil
}

func (s *Store) headBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	return err
}
