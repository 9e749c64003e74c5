// Package storage keeps large callback payloads in an S3-compatible object
// store.
//
// Store is the client every role uses, whatever the endpoint: AWS S3, any
// S3-compatible service, or Embedded, an S3-compatible server that runs inside
// the hookrelay process and keeps each object in a file of its own under a
// data directory. Because the embedded server speaks the S3 protocol over loopback
// HTTP, the same client code runs in development, tests and production. The
// process running the embedded server gets its Store from Embedded.NewStore,
// whose Put and Get skip HTTP and the SDK and call the server's disk backend
// directly, writing the same files with the same durability; other processes
// read and write those objects over HTTP.
//
// Objects are keyed by the day the callback was received (see PayloadKey), so
// retention can drop a whole day with DeletePrefix.
//
// The package returns errors and never logs, except Embedded, whose server
// goroutine reports its own failures to the logger it was given.
package storage
