package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// deleteBatch is the most keys one DeleteObjects request may name.
const deleteBatch = 1000

// DeletePrefix removes every object whose key starts with prefix, a page of
// up to 1000 keys per request, and returns how many it removed. Retention
// calls it with DayPrefix to drop a whole day. It stops at the first failure;
// calling it again resumes where it stopped.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	deleted := 0
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(prefix),
		MaxKeys: aws.Int32(deleteBatch),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return deleted, fmt.Errorf("s3 list %s: %w", prefix, err)
		}
		// A server may answer more keys than asked for; send them in
		// batches it accepts.
		for objs := range slices.Chunk(page.Contents, deleteBatch) {
			n, err := s.deleteObjects(ctx, objs)
			deleted += n
			if err != nil {
				return deleted, fmt.Errorf("s3 delete prefix %s: %w", prefix, err)
			}
		}
	}
	return deleted, nil
}

// deleteObjects removes objs in one request and returns how many went.
func (s *Store) deleteObjects(ctx context.Context, objs []types.Object) (int, error) {
	ids := make([]types.ObjectIdentifier, len(objs))
	for i, o := range objs {
		ids[i] = types.ObjectIdentifier{Key: o.Key}
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(s.bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return 0, err
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return len(ids) - len(out.Errors), fmt.Errorf("%d of %d keys not deleted, first %s: %s: %s",
			len(out.Errors), len(ids), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return len(ids), nil
}
