package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// checkKeys runs the database's key check (db.CheckKeys) for every command
// that opens the database: serve (whatever its roles: each may open or
// seal secrets), migrate (it seals the rows still in clear text) and
// rotate-encryption-key. A refusal is an EINVALID error that names the key
// ids and what to do; the process then exits non-zero before it listens, so
// it is never ready.
func checkKeys(ctx context.Context, cfg config, store *db.DB, logger *slog.Logger) error {
	res, err := store.CheckKeys(ctx)
	var refusal *db.KeyCheckError
	if errors.As(err, &refusal) {
		return hookrelay.Errorf(hookrelay.EINVALID, "encryption key check: %s. %s", refusal.Error(), keyAdvice(cfg, refusal))
	}
	if err != nil {
		return err
	}
	if len(res.Written) > 0 {
		logger.Info("stored the key check value of the encryption keys", "key_ids", strings.Join(res.Written, ","))
	}
	for _, id := range slices.Sorted(maps.Keys(res.Lost)) {
		logger.Warn("values sealed under a key declared lost stay unreadable: the endpoints holding them are parked until given new values",
			"key_id", id, "values", res.Lost[id], "variable", lostKeyIDsVar)
	}
	logger.Info("encryption keys match the database", "key_id", cfg.Keys.CurrentID(), "old_key_ids", strings.Join(cfg.Keys.IDs()[1:], ","))
	return nil
}

// keyAdvice says which keys this process has and how to start it.
func keyAdvice(cfg config, r *db.KeyCheckError) string {
	var b strings.Builder
	b.WriteString("This process has key id " + cfg.Keys.CurrentID() + " (HOOKRELAY_ENCRYPTION_KEY)")
	if old := cfg.Keys.IDs()[1:]; len(old) > 0 {
		b.WriteString(" and " + strings.Join(old, ", ") + " (HOOKRELAY_ENCRYPTION_KEYS_OLD)")
	}
	b.WriteString(". No secret was opened or sealed.")
	if len(r.Missing) > 0 {
		ids := strings.Join(slices.Sorted(maps.Keys(r.Missing)), ", ")
		b.WriteString(" Start it with the key of id " + ids + " as HOOKRELAY_ENCRYPTION_KEY (or in HOOKRELAY_ENCRYPTION_KEYS_OLD beside a new key, to rotate);" +
			" if that key is lost for good, list its id in " + lostKeyIDsVar + " to start without it: the endpoints whose secrets it sealed are parked until given new ones.")
	}
	if len(r.Mismatched) > 0 {
		b.WriteString(" A key given under id " + strings.Join(r.Mismatched, ", ") + " is another key than the one that sealed the data: give the right one.")
	}
	b.WriteString(" See docs/operations/security.md, \"Key check\".")
	return b.String()
}
