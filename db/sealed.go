package db

import (
	"context"
	"encoding/json"
	"fmt"

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
	if !keyring.IsSealed(stored) {
		return stored, nil
	}
	if db.cfg.Keys == nil {
		return "", errNoKeyring
	}
	b, err := db.cfg.Keys.Open(purpose, stored)
	if err != nil {
		return "", hookrelay.WrapError(hookrelay.EINTERNAL, "a stored secret cannot be decrypted", err)
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

// openHeaders returns the plaintext of stored custom headers (nil when none).
func (db *DB) openHeaders(stored []byte) (map[string]string, error) {
	var in map[string]string
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &in); err != nil {
			return nil, fmt.Errorf("stored headers: %w", err)
		}
	}
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for name, s := range in {
		v, err := db.open(purposeHeader, s)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", name, err)
		}
		out[name] = v
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

// openAuth returns the credentials of their stored form (nil for none).
func (db *DB) openAuth(stored string) (*EndpointAuth, error) {
	if stored == "" {
		return nil, nil
	}
	plain, err := db.open(purposeAuth, stored)
	if err != nil {
		return nil, fmt.Errorf("endpoint credentials: %w", err)
	}
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
}

// Total is every row rewritten.
func (n ResealCounts) Total() int64 {
	return n.Secrets + n.Endpoints + n.CarrierSecrets + n.OpsSecrets
}

// Reseal seals under the current key every stored secret that is not:
// plaintext rows (written before values were sealed) and rows sealed under
// an older key (after a key rotation). It works in batches of batch rows,
// each read outside any transaction and written by one short statement that
// changes a row only if it still holds what was read. A value sealed under a
// key the keyring does not hold stops the pass with an error naming its row.
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
	n.Secrets, err = db.resealColumn(ctx, "endpoint_secrets", purposeSecret,
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
	n.CarrierSecrets, err = db.resealColumn(ctx, "carriers", purposeCarrierSecret,
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
	n.OpsSecrets, err = db.resealColumn(ctx, "ops_endpoints", purposeOpsSecret,
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
	for after := int64(0); ; {
		rows, err := db.q.EndpointListUnsealed(ctx, dbsqlc.EndpointListUnsealedParams{AfterID: after, Prefix: prefix, Lim: int32(batch)})
		if err != nil {
			return n, fmt.Errorf("reseal endpoints: %w", unavailable(err))
		}
		if len(rows) == 0 {
			break
		}
		p := dbsqlc.EndpointResealManyParams{}
		for _, r := range rows {
			h, err := db.openHeaders(r.Headers)
			if err != nil {
				return n, fmt.Errorf("endpoints id %d: %w", r.ID, err)
			}
			a, err := db.openAuth(r.Auth)
			if err != nil {
				return n, fmt.Errorf("endpoints id %d: %w", r.ID, err)
			}
			hs, err := db.sealHeaders(h)
			if err != nil {
				return n, err
			}
			as, err := db.sealAuth(a)
			if err != nil {
				return n, err
			}
			p.IDs, p.OldHeaders, p.OldAuth = append(p.IDs, r.ID), append(p.OldHeaders, r.Headers), append(p.OldAuth, r.Auth)
			p.NewHeaders, p.NewAuth = append(p.NewHeaders, hs), append(p.NewAuth, as)
		}
		c, err := db.q.EndpointResealMany(ctx, p)
		if err != nil {
			return n, fmt.Errorf("reseal endpoints: %w", unavailable(err))
		}
		n.Endpoints += c
		after = rows[len(rows)-1].ID
	}
	return n, nil
}

// sealedRow is one row's id and stored value of a sealed column.
type sealedRow struct {
	id    int64
	value string
}

// resealColumn rewrites, batch by batch, the values list returns (each
// batch after the last id of the previous one) sealed under the current key
// with write; table names the rows in errors.
func (db *DB) resealColumn(ctx context.Context, table, purpose string,
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
		ids, old, sealed := make([]int64, len(rows)), make([]string, len(rows)), make([]string, len(rows))
		for i, r := range rows {
			plain, err := db.open(purpose, r.value)
			if err != nil {
				return n, fmt.Errorf("%s id %d: %w", table, r.id, err)
			}
			ids[i], old[i] = r.id, r.value
			if sealed[i], err = db.seal(purpose, plain); err != nil {
				return n, err
			}
		}
		c, err := write(ids, old, sealed)
		if err != nil {
			return n, fmt.Errorf("reseal %s: %w", table, unavailable(err))
		}
		n += c
		after = rows[len(rows)-1].id
	}
}
