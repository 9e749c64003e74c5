package storage

import "cmp"

// Defaults applied by New to zero Config fields.
const (
	DefaultBucket = "hookrelay-payloads"
	DefaultRegion = "us-east-1"
)

// Config says how to reach an S3-compatible store.
type Config struct {
	// Endpoint is the base URL of an S3-compatible service, such as
	// "http://127.0.0.1:9000". Empty means AWS S3 itself, resolved from Region.
	Endpoint string
	// Bucket holds the payloads. Default DefaultBucket.
	Bucket string
	// Region signs the requests and, on AWS, locates the bucket.
	// Default DefaultRegion.
	Region string
	// AccessKey and SecretKey are static credentials. When both are empty the
	// SDK's default chain is used (environment, shared files, instance role).
	AccessKey string
	// SecretKey goes with AccessKey.
	SecretKey string
	// UsePathStyle addresses the bucket as http://host/bucket/key instead of
	// http://bucket.host/key. Most S3-compatible servers, the embedded one
	// included, need it.
	UsePathStyle bool
}

// WithDefaults returns cfg with every empty field that has a default set.
// New applies it.
func (cfg Config) WithDefaults() Config {
	cfg.Bucket = cmp.Or(cfg.Bucket, DefaultBucket)
	cfg.Region = cmp.Or(cfg.Region, DefaultRegion)
	return cfg
}
