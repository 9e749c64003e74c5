package db

import (
	"context"
	"fmt"
	"slices"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// WebSessionKeySetting names the dashboard's session key: the key of the
// MAC that makes each session's CSRF token, shared by every process running
// the web role.
const WebSessionKeySetting = "web_session_key"

// purposeWebSessionKey binds the sealed session key to its row.
const purposeWebSessionKey = "web_session_key"

// sealedSettings are the settings stored sealed, with their purposes: the
// re-seal passes and the key check cover them like the secrets of the
// other tables.
var sealedSettings = map[string]string{WebSessionKeySetting: purposeWebSessionKey}

// SettingGet returns the named setting, or a hookrelay.ENOTFOUND error.
func (db *DB) SettingGet(ctx context.Context, name string) (string, error) {
	v, err := db.q.SettingGet(ctx, name)
	if err != nil {
		return "", notFound(unavailableUnlessNoRows(err), "setting "+name)
	}
	return v, nil
}

// SettingPutIfAbsent stores the setting unless it exists and reports whether
// it stored it.
func (db *DB) SettingPutIfAbsent(ctx context.Context, name, value string) (bool, error) {
	n, err := db.q.SettingPutIfAbsent(ctx, dbsqlc.SettingPutIfAbsentParams{Name: name, Value: value})
	if err != nil {
		return false, fmt.Errorf("put setting %s: %w", name, unavailable(err))
	}
	return n == 1, nil
}

// WebSessionKey returns the dashboard's session key: the stored one, or
// fresh, stored sealed, when there is none yet (the first process wins; the
// others read what it stored). A key stored in clear by an earlier version
// is returned as it is (the start-up pass seals it). A key sealed under a
// key id declared lost (Config.LostKeyIDs) is replaced by fresh: the
// dashboard's forms open before then must be reloaded.
func (db *DB) WebSessionKey(ctx context.Context, fresh string) (string, error) {
	sealed, err := db.seal(purposeWebSessionKey, fresh)
	if err != nil {
		return "", err
	}
	if _, err := db.SettingPutIfAbsent(ctx, WebSessionKeySetting, sealed); err != nil {
		return "", err
	}
	stored, err := db.SettingGet(ctx, WebSessionKeySetting)
	if err != nil {
		return "", err
	}
	v, err := db.open(purposeWebSessionKey, stored)
	if err == nil {
		return v, nil
	}
	if !db.lost(stored) {
		return "", fmt.Errorf("setting %s: %w", WebSessionKeySetting, err)
	}
	if _, err := db.q.SettingReplace(ctx, dbsqlc.SettingReplaceParams{Name: WebSessionKeySetting, OldValue: stored, NewValue: sealed}); err != nil {
		return "", fmt.Errorf("replace setting %s: %w", WebSessionKeySetting, unavailable(err))
	}
	stored, err = db.SettingGet(ctx, WebSessionKeySetting)
	if err != nil {
		return "", err
	}
	return db.open(purposeWebSessionKey, stored)
}

// lost reports whether stored is a value sealed under a key id declared
// lost that this process does not hold.
func (db *DB) lost(stored string) bool {
	id, ok := keyring.KeyID(stored)
	if !ok || db.cfg.Keys != nil && db.cfg.Keys.Holds(id) {
		return false
	}
	return slices.Contains(db.cfg.LostKeyIDs, id)
}
