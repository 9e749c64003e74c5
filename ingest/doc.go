// Package ingest is the callback intake pipeline behind POST /v1/callbacks,
// without the HTTP handler itself (package api composes these parts):
//
//   - RateLimits: each carrier's callbacks per second (ratelimit.go);
//   - BodyMemory: reads a callback's body into a pooled buffer, bounding
//     what the bodies in flight hold together (body.go);
//   - ParseCallback and ParseCallbackValues: one pass over the body for the
//     routing values and the content filters' values (parse.go);
//   - Routes: the snapshot of carriers, merchants and endpoint routes the
//     fan-out reads, kept fresh (routes.go);
//   - Batcher: the group commit, with each carrier's share of it once it is
//     saturated (batcher.go, quota.go);
//   - Announcer: tells dispatchers in other processes what was stored
//     (announce.go).
//
// Callbacks are stored by the group-commit batcher: concurrent requests hand
// their rows to one goroutine that writes them in a single transaction and
// answers each request only after that transaction committed.
package ingest
