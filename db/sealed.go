package db

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// What a sealed value is for: a value sealed for one purpose does not open
// as another (a header value copied into a secret's row fails to open).
const (
	purposeSecret = "endpoint_secret"
	purposeHeader = "endpoint_header"
	purposeAuth   = "endpoint_auth"
	// A carrier's secret verifies its callbacks; an ops endpoint's signs
	// operational webhooks.
	purposeCarrierSecret = "carrier_signing_secret"
	purposeOpsSecret     = "ops_endpoint_secret"
)

var errNoKeyring = hookrelay.Errorf(hookrelay.EINTERNAL, "no encryption key configured (HOOKRELAY_ENCRYPTION_KEY)")

// seal returns plain sealed under the current key.
func (db *DB) seal(purpose, plain string) (string, error) {
	if db.cfg.Keys == nil {
		return "", errNoKeyring
	}
	return db.cfg.Keys.Seal(purpose, []byte(plain)), nil
}

// open returns the plaintext of a stored value. A value that is not sealed
// is a row written before values were sealed, not yet sealed by the
// start-up pass (SealPlaintext): it is its own plaintext.
func (db *DB) open(purpose, stored string) (string, error) {
	v, err := db.openValue(purpose, stored)
	if err != nil {
		return "", hookrelay.WrapError(hookrelay.EINTERNAL, "a stored secret cannot be decrypted", err)
	}
	return v, nil
}

// openValue is open with the keyring's own error, which says why a value
// cannot be opened without showing any of it ("key id 1a2b3c4d: sealed
// under a key this process does not have").
func (db *DB) openValue(purpose, stored string) (string, error) {
	if !keyring.IsSealed(stored) {
		return stored, nil
	}
	if db.cfg.Keys == nil {
		return "", errNoKeyring
	}
	b, err := db.cfg.Keys.Open(purpose, stored)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// sealHeaders returns the stored form of custom headers: a JSON object of
// name → sealed value.
func (db *DB) sealHeaders(h map[string]string) ([]byte, error) {
	out := make(map[string]string, len(h))
	for name, v := range h {
		s, err := db.seal(purposeHeader, v)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return json.Marshal(out)
}

// storedHeaders decodes stored custom headers: name → stored value.
func storedHeaders(stored []byte) (map[string]string, error) {
	var in map[string]string
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &in); err != nil {
			return nil, fmt.Errorf("stored headers: %w", err)
		}
	}
	return in, nil
}

// openedHeaders are stored custom headers opened value by value.
type openedHeaders struct {
	// values holds the plaintext of every value that opens (nil when none).
	values map[string]string
	// unreadable names the headers whose values do not open, sorted.
	unreadable []string
	// why is the error of the first of them.
	why error
}

// openHeaders opens stored custom headers value by value: one value that
// cannot be opened leaves the others readable.
func (db *DB) openHeaders(stored []byte) (openedHeaders, error) {
	in, err := storedHeaders(stored)
	if err != nil || len(in) == 0 {
		return openedHeaders{}, err
	}
	out := openedHeaders{values: make(map[string]string, len(in))}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v, err := db.openValue(purposeHeader, in[name])
		if err != nil {
			out.unreadable = append(out.unreadable, name)
			if out.why == nil {
				out.why = err
			}
			continue
		}
		out.values[name] = v
	}
	if len(out.values) == 0 {
		out.values = nil
	}
	return out, nil
}

// EndpointAuth is the credentials an endpoint's requests carry in their
// Authorization header.
type EndpointAuth struct {
	Type     string `json:"type"` // basic | bearer
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Token    string `json:"token,omitempty"`
}

// sealAuth returns the stored form of credentials ("" for none).
func (db *DB) sealAuth(a *EndpointAuth) (string, error) {
	if a == nil {
		return "", nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	return db.seal(purposeAuth, string(b))
}

// parseAuth decodes opened credentials.
func parseAuth(plain string) (*EndpointAuth, error) {
	var a EndpointAuth
	if err := json.Unmarshal([]byte(plain), &a); err != nil {
		return nil, fmt.Errorf("endpoint credentials: %w", err)
	}
	return &a, nil
}

// ResealCounts is what a re-seal pass rewrote, in rows.
type ResealCounts struct {
	Secrets        int64 // endpoint_secrets
	Endpoints      int64 // endpoints (header values, credentials)
	CarrierSecrets int64 // carriers (signing_secret)
	OpsSecrets     int64 // ops_endpoints
	Settings       int64 // settings (the dashboard's session key)
	Users          int64 // users (TOTP secrets)
	// Lost counts the values left as they were because they are sealed
	// under a key id declared lost (Config.LostKeyIDs).
	Lost int64
}

// Total is every row rewritten.
func (n ResealCounts) Total() int64 {
	return n.Secrets + n.Endpoints + n.CarrierSecrets + n.OpsSecrets + n.Settings + n.Users
}

// Reseal seals under the current key every stored secret that is not:
// plaintext rows (written before values were sealed) and rows sealed under
// an older key (after a key rotation). It works in batches of batch rows,
// each read outside any transaction and written by one short statement that
// changes a row only if it still holds what was read. A value sealed under a
// key the keyring does not hold stops the pass with an error naming its row,
// unless that key id is declared lost (Config.LostKeyIDs): such values are
// left as they are and counted.
func (db *DB) Reseal(ctx context.Context, batch int) (ResealCounts, error) {
	if db.cfg.Keys == nil {
		return ResealCounts{}, errNoKeyring
	}
	return db.reseal(ctx, batch, db.cfg.Keys.CurrentPrefix())
}

// SealPlaintext seals the stored secrets still in plaintext (rows written
// before values were sealed), as Reseal does, leaving rows sealed under any
// key as they are.
func (db *DB) SealPlaintext(ctx context.Context, batch int) (ResealCounts, error) {
	if db.cfg.Keys == nil {
		return ResealCounts{}, errNoKeyring
	}
	return db.reseal(ctx, batch, keyring.Prefix)
}

// reseal rewrites, sealed under the current key, the rows holding a value
// that does not start with prefix.
func (db *DB) reseal(ctx context.Context, batch int, prefix string) (ResealCounts, error) {
	var n ResealCounts
	var err error
	lim := int32(batch)
	n.Secrets, err = db.resealColumn(ctx, "endpoint_secrets", purposeSecret, &n.Lost,
		func(after int64) ([]sealedRow, error) {
			rows, err := db.q.EndpointSecretListUnsealed(ctx, dbsqlc.EndpointSecretListUnsealedParams{AfterID: after, Prefix: prefix, Lim: lim})
			out := make([]sealedRow, len(rows))
			for i, r := range rows {
				out[i] = sealedRow{r.ID, r.Secret}
			}
			return out, err
		},
		func(ids []int64, old, new []string) (int64, error) {
			return db.q.EndpointSecretResealMany(ctx, dbsqlc.EndpointSecretResealManyParams{IDs: ids, OldSecrets: old, NewSecrets: new})
		})
	if err != nil {
		return n, err
	}
	n.CarrierSecrets, err = db.resealColumn(ctx, "carriers", purposeCarrierSecret, &n.Lost,
		func(after int64) ([]sealedRow, error) {
			rows, err := db.q.CarrierSecretListUnsealed(ctx, dbsqlc.CarrierSecretListUnsealedParams{AfterID: after, Prefix: prefix, Lim: lim})
			out := make([]sealedRow, len(rows))
			for i, r := range rows {
				out[i] = sealedRow{r.ID, r.Secret}
			}
			return out, err
		},
		func(ids []int64, old, new []string) (int64, error) {
			return db.q.CarrierSecretResealMany(ctx, dbsqlc.CarrierSecretResealManyParams{IDs: ids, OldSecrets: old, NewSecrets: new})
		})
	if err != nil {
		return n, err
	}
	n.OpsSecrets, err = db.resealColumn(ctx, "ops_endpoints", purposeOpsSecret, &n.Lost,
		func(after int64) ([]sealedRow, error) {
			rows, err := db.q.OpsEndpointSecretListUnsealed(ctx, dbsqlc.OpsEndpointSecretListUnsealedParams{AfterID: after, Prefix: prefix, Lim: lim})
			out := make([]sealedRow, len(rows))
			for i, r := range rows {
				out[i] = sealedRow{r.ID, r.Secret}
			}
			return out, err
		},
		func(ids []int64, old, new []string) (int64, error) {
			return db.q.OpsEndpointSecretResealMany(ctx, dbsqlc.OpsEndpointSecretResealManyParams{IDs: ids, OldSecrets: old, NewSecrets: new})
		})
	if err != nil {
		return n, err
	}
	if n.Endpoints, err = db.resealEndpoints(ctx, lim, prefix, &n.Lost); err != nil {
		return n, err
	}
	n.Users, err = db.resealColumn(ctx, "users", purposeTOTP, &n.Lost,
		func(after int64) ([]sealedRow, error) {
			rows, err := db.q.UserTOTPListUnsealed(ctx, dbsqlc.UserTOTPListUnsealedParams{AfterID: after, Prefix: prefix, Lim: lim})
			out := make([]sealedRow, len(rows))
			for i, r := range rows {
				out[i] = sealedRow{r.ID, r.TotpSecret}
			}
			return out, err
		},
		func(ids []int64, old, new []string) (int64, error) {
			return db.q.UserTOTPResealMany(ctx, dbsqlc.UserTOTPResealManyParams{IDs: ids, OldSecrets: old, NewSecrets: new})
		})
	if err != nil {
		return n, err
	}
	n.Settings, err = db.resealSettings(ctx, prefix, &n.Lost)
	return n, err
}

// resealEndpoints rewrites, batch by batch, the header values and
// credentials of endpoints not sealed under prefix, each value on its own:
// a value under a lost key id stays as it is (counted in lost) while the
// others of its row are rewritten.
func (db *DB) resealEndpoints(ctx context.Context, lim int32, prefix string, lost *int64) (int64, error) {
	var n int64
	for after := int64(0); ; {
		rows, err := db.q.EndpointListUnsealed(ctx, dbsqlc.EndpointListUnsealedParams{AfterID: after, Prefix: prefix, Lim: lim})
		if err != nil {
			return n, fmt.Errorf("reseal endpoints: %w", unavailable(err))
		}
		if len(rows) == 0 {
			return n, nil
		}
		p := dbsqlc.EndpointResealManyParams{}
		for _, r := range rows {
			in, err := storedHeaders(r.Headers)
			if err != nil {
				return n, fmt.Errorf("endpoints id %d: %w", r.ID, err)
			}
			out := make(map[string]string, len(in))
			changed := false
			for name, v := range in {
				if out[name], err = db.resealValue(purposeHeader, v, lost); err != nil {
					return n, fmt.Errorf("endpoints id %d: header %s: %w", r.ID, name, err)
				}
				changed = changed || out[name] != v
			}
			hs, err := json.Marshal(out)
			if err != nil {
				return n, err
			}
			as := r.Auth
			if as != "" {
				if as, err = db.resealValue(purposeAuth, r.Auth, lost); err != nil {
					return n, fmt.Errorf("endpoints id %d: endpoint credentials: %w", r.ID, err)
				}
				changed = changed || as != r.Auth
			}
			if !changed {
				continue // only values under lost keys: nothing to rewrite
			}
			p.IDs, p.OldHeaders, p.OldAuth = append(p.IDs, r.ID), append(p.OldHeaders, r.Headers), append(p.OldAuth, r.Auth)
			p.NewHeaders, p.NewAuth = append(p.NewHeaders, hs), append(p.NewAuth, as)
		}
		if len(p.IDs) > 0 {
			c, err := db.q.EndpointResealMany(ctx, p)
			if err != nil {
				return n, fmt.Errorf("reseal endpoints: %w", unavailable(err))
			}
			n += c
		}
		after = rows[len(rows)-1].ID
	}
}

// resealSettings rewrites the sealed settings not sealed under prefix.
func (db *DB) resealSettings(ctx context.Context, prefix string, lost *int64) (int64, error) {
	rows, err := db.q.SettingListUnsealed(ctx, dbsqlc.SettingListUnsealedParams{Names: slices.Sorted(maps.Keys(sealedSettings)), Prefix: prefix})
	if err != nil {
		return 0, fmt.Errorf("reseal settings: %w", unavailable(err))
	}
	var n int64
	for _, r := range rows {
		v, err := db.resealValue(sealedSettings[r.Name], r.Value, lost)
		if err != nil {
			return n, fmt.Errorf("settings %s: %w", r.Name, err)
		}
		if v == r.Value {
			continue
		}
		c, err := db.q.SettingReplace(ctx, dbsqlc.SettingReplaceParams{Name: r.Name, OldValue: r.Value, NewValue: v})
		if err != nil {
			return n, fmt.Errorf("reseal settings: %w", unavailable(err))
		}
		n += c
	}
	return n, nil
}

// resealValue returns stored sealed under the current key, or stored
// itself when it is sealed under a lost key id (counted in lost).
func (db *DB) resealValue(purpose, stored string, lost *int64) (string, error) {
	plain, err := db.openValue(purpose, stored)
	if err != nil {
		if db.lost(stored) {
			*lost++
			return stored, nil
		}
		return "", hookrelay.WrapError(hookrelay.EINTERNAL, "a stored secret cannot be decrypted", err)
	}
	return db.seal(purpose, plain)
}

// sealedRow is one row's id and stored value of a sealed column.
type sealedRow struct {
	id    int64
	value string
}

// resealColumn rewrites, batch by batch, the values list returns (each
// batch after the last id of the previous one) sealed under the current key
// with write; table names the rows in errors. Values under a lost key id
// are left as they are and counted in lost.
func (db *DB) resealColumn(ctx context.Context, table, purpose string, lost *int64,
	list func(after int64) ([]sealedRow, error), write func(ids []int64, old, new []string) (int64, error),
) (int64, error) {
	var n int64
	for after := int64(0); ; {
		rows, err := list(after)
		if err != nil {
			return n, fmt.Errorf("reseal %s: %w", table, unavailable(err))
		}
		if len(rows) == 0 {
			return n, nil
		}
		ids, old, sealed := make([]int64, 0, len(rows)), make([]string, 0, len(rows)), make([]string, 0, len(rows))
		for _, r := range rows {
			v, err := db.resealValue(purpose, r.value, lost)
			if err != nil {
				return n, fmt.Errorf("%s id %d: %w", table, r.id, err)
			}
			if v == r.value {
				continue
			}
			ids, old, sealed = append(ids, r.id), append(old, r.value), append(sealed, v)
		}
		if len(ids) > 0 {
			c, err := write(ids, old, sealed)
			if err != nil {
				return n, fmt.Errorf("reseal %s: %w", table, unavailable(err))
			}
			n += c
		}
		after = rows[len(rows)-1].id
	}
}
