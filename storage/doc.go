// Package storage keeps large callback payloads in an S3-compatible object
// store.
//
// Store is the client every role uses, whatever the endpoint: AWS S3, any
// S3-compatible service, or Embedded, an S3-compatible server that runs inside
// the hookrelay process and keeps each object in a file of its own under a
// data directory. Because the embedded server speaks the S3 protocol over loopback
// HTTP, the same client code runs in development, tests and production.
//
// Objects are keyed by the day the callback was received (see PayloadKey), so
// retention can drop a whole day with DeletePrefix.
//
// The package returns errors and never logs, except Embedded, whose server
// goroutine reports its own failures to the logger it was given.
package storage
