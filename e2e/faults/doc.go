// Package faults is hookrelay's end-to-end fault suite (docs/guarantees.md as executable
// evidence). Every scenario starts real `hookrelay serve` processes, built
// once from the product module, against a real PostgreSQL and an S3 store,
// drives them with a carrier load generator (bench/load), injects a fault
// (kill -9, SIGSTOP, a PostgreSQL restart, an S3 outage, misbehaving merchant
// endpoints) and checks at the end that every acknowledged callback reached
// every matching endpoint, in order per key, with bounded duplicates.
//
// The tests carry the build tag `faults` so that plain `go test ./...` does
// not run them (from the e2e module's directory; make test-faults does it):
//
//	go test -tags faults -count=1 -timeout 15m ./faults/
//
// The scenarios run one after the other (not in parallel): on a small
// machine they would otherwise measure each other's CPU use.
//
// Set FAULTS_REPORT=/path/file.json to have each scenario append its figures
// (one JSON line per scenario) for docs/reliability.md.
package faults
