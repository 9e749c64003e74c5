package storage

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// maxKeyComponent is the longest key component (the text between two "/")
// that fits in a file name on common filesystems.
const maxKeyComponent = 255

// keyComponents splits an object key into the directory names and file name
// that hold its object, refusing every key that would not map onto one file
// strictly inside the bucket directory: empty keys and components (a leading
// "/" included), "." and "..", NUL bytes and components longer than a file
// name may be.
//
// Nothing of ours lives in a bucket directory besides objects and the
// directories holding them, so no valid key can collide with an internal file.
func keyComponents(key string) ([]string, error) {
	if key == "" {
		return nil, gofakes3.ErrorMessage(gofakes3.ErrInvalidArgument, "empty object key")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return nil, gofakes3.ErrorMessage(gofakes3.ErrInvalidArgument, "object key contains NUL")
	}
	parts := strings.Split(key, "/")
	for _, p := range parts {
		switch {
		case p == "":
			return nil, gofakes3.ErrorMessage(gofakes3.ErrInvalidArgument,
				"object key has an empty component (leading, trailing or doubled \"/\")")
		case p == "." || p == "..":
			return nil, gofakes3.ErrorMessage(gofakes3.ErrInvalidArgument,
				fmt.Sprintf("object key has a %q component", p))
		case len(p) > maxKeyComponent:
			return nil, gofakes3.ErrorMessage(gofakes3.ErrKeyTooLong,
				fmt.Sprintf("object key has a component longer than %d bytes", maxKeyComponent))
		}
	}
	return parts, nil
}

// validBucket returns an error unless name is a valid S3 bucket name. Valid
// names are single path components that start with a letter or digit, so they
// can neither escape the data directory nor collide with our files in it,
// which start with ".".
func validBucket(name string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return err
	}
	if strings.ContainsAny(name, `/\`) || name != filepath.Base(name) {
		return gofakes3.ResourceError(gofakes3.ErrInvalidBucketName, name)
	}
	return nil
}
