package db

import (
	"context"
	"fmt"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

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
