// Package api is hookrelay's public HTTP API: the admin API (carriers,
// merchants, stats, dead letters, ops endpoints, sessions), the merchant
// API (endpoints, deliveries, messages, replays) and the carrier API
// (POST /v1/callbacks), served with echo.
//
// The actions go through package ops, which the dashboard uses too; the
// callback handler composes the intake pipeline of package ingest (body
// memory, parser, routing snapshot, group-commit batcher, announcer).
package api
