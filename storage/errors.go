package storage

import (
	"errors"
	"slices"

	"github.com/aws/smithy-go"
)

// ErrNotFound is returned, wrapped, when the requested object does not exist.
// Test for it with errors.Is.
var ErrNotFound = errors.New("object not found")

// hasErrorCode reports whether err is an S3 API error with one of codes, such
// as "NoSuchKey". The codes are the service's, so they hold for every
// S3-compatible server, whether or not the SDK has a typed error for them.
func hasErrorCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && slices.Contains(codes, apiErr.ErrorCode())
}
