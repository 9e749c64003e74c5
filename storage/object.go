package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
)

// Object describes a stored payload.
type Object struct {
	// Key is the object's key in the bucket.
	Key string
	// Size is the payload's length in bytes.
	Size int64
	// SHA256 is the lowercase hex SHA-256 of the payload.
	SHA256 string
}

// Put stores body under key, replacing any object there, and returns its
// description. The SHA-256 goes along as the object's checksum: a store that
// checks checksums (AWS does) refuses a body damaged on the way, and one that
// returns it (AWS and the embedded server do) lets Get verify the body it
// reads back. A Store from Embedded.NewStore writes the same object straight
// to the embedded server's files.
func (s *Store) Put(ctx context.Context, key string, body []byte) (Object, error) {
	sum := sha256.Sum256(body)
	var err error
	if s.local != nil {
		err = s.local.putDirect(ctx, s.bucket, key, body, sum)
	} else {
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:         aws.String(s.bucket),
			Key:            aws.String(key),
			Body:           bytes.NewReader(body),
			ContentLength:  aws.Int64(int64(len(body))),
			ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		})
	}
	if err != nil {
		return Object{}, fmt.Errorf("s3 put %s: %w", key, err)
	}
	return Object{Key: key, Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// Get returns the payload stored under key, or an error wrapping ErrNotFound
// when there is none. A body that does not match the checksum stored with it
// is an error.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if s.local != nil {
		body, err := s.local.getDirect(ctx, s.bucket, key)
		if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
			return nil, fmt.Errorf("s3 get %s: %w", key, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("s3 get %s: %w", key, err)
		}
		return body, nil
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
	})
	if hasErrorCode(err, "NoSuchKey") {
		return nil, fmt.Errorf("s3 get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", key, err)
	}
	defer out.Body.Close()

	var buf bytes.Buffer
	if n := aws.ToInt64(out.ContentLength); n > 0 {
		buf.Grow(int(n))
	}
	if _, err := io.Copy(&buf, out.Body); err != nil {
		return nil, fmt.Errorf("s3 get %s: read body: %w", key, err)
	}
	return buf.Bytes(), nil
}

// Delete removes the object under key. Deleting a missing object is not an
// error.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		return fmt.Errorf("s3 delete %s: %w", key, err)
	}
	return nil
}
