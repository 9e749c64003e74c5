// Package dispatch delivers pending deliveries to merchant endpoints: it
// registers the process as a dispatcher, shares the logical queues with the
// other live dispatchers through queue leases, runs one claim loop per held
// queue, sends each claimed delivery signed (Standard Webhooks) through an
// SSRF-safe HTTP client, and acknowledges results in batches. Ordering per
// (endpoint, ordering key) comes from the claim: only chain heads are leased.
// See docs/architecture.md and docs/dispatch.md.
package dispatch
