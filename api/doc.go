// Package ingest is hookrelay's public HTTP API: the admin API (carriers,
// merchants, stats, dead letters), the merchant API (endpoints, deliveries)
// and the carrier API (POST /v1/callbacks), served with echo.
//
// Callbacks are stored by a group-commit batcher: concurrent requests hand
// their rows to one goroutine that writes them in a single transaction and
// answers each request only after that transaction committed.
package api
