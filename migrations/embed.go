// Package migrations holds the SQL migrations of hookrelay, applied by
// `hookrelay migrate` and at start-up.
package migrations

import "embed"

// FS holds every migration file (goose format).
//
//go:embed *.sql
var FS embed.FS
