package db

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// KeyCheckSetting starts the name of the settings row that holds the key
// check value of a key; the key id follows ("encryption_key_check.1a2b3c4d").
// One row per key id, so processes starting together each insert theirs
// with ON CONFLICT DO NOTHING and verify what is stored.
const KeyCheckSetting = "encryption_key_check."

// sourcePurposes is the purpose of the sealed values of each place
// SealedKeyIDs reports, to open a sample under its key.
var sourcePurposes = map[string]string{
	"endpoint_secrets.secret": purposeSecret,
	"endpoints.headers":       purposeHeader,
	"endpoints.auth":          purposeAuth,
	"carriers.signing_secret": purposeCarrierSecret,
	"ops_endpoints.secret":    purposeOpsSecret,
	"users.totp_secret":       purposeTOTP,
}

func init() {
	for name, purpose := range sealedSettings {
		sourcePurposes["settings."+name] = purpose
	}
}

// KeyCheckResult is what CheckKeys found and did.
type KeyCheckResult struct {
	// Written are the key ids whose check value this process stored.
	Written []string
	// Lost counts the stored values sealed under each key id the
	// configuration declares lost (Config.LostKeyIDs): they stay unreadable.
	Lost map[string]int64
}

// KeyCheckError is why CheckKeys refuses the keys: the store holds values
// sealed under keys this process does not have, or a key it has under some
// id is not the key that id sealed with.
type KeyCheckError struct {
	// Missing are the key ids this process has no key for, each with how
	// many stored values name it, per column ("endpoints.headers").
	Missing map[string]map[string]int64
	// Mismatched are the key ids this process has a key for that is not
	// the key the stored values (or their check value) were sealed with.
	Mismatched []string
}

func (e *KeyCheckError) Error() string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(e.Missing)) {
		var total int64
		var where []string
		for _, src := range slices.Sorted(maps.Keys(e.Missing[id])) {
			n := e.Missing[id][src]
			total += n
			where = append(where, fmt.Sprintf("%s: %d", src, n))
		}
		parts = append(parts, fmt.Sprintf("the database holds %d values sealed under key id %s (%s), a key this process does not have",
			total, id, strings.Join(where, ", ")))
	}
	for _, id := range e.Mismatched {
		parts = append(parts, fmt.Sprintf("the key given with id %s is not the key that id sealed the stored values with (its key check value does not verify): another key with the same id", id))
	}
	return strings.Join(parts, "; ")
}

// CheckKeys verifies, before anything is opened or sealed, that this
// process holds the keys of the stored data:
//   - every key id named by a stored sealed value is one of its keys, or
//     declared lost (Config.LostKeyIDs);
//   - for each of its keys, the key check value stored under its id
//     verifies; a key without one gets one (inserted unless another process
//     did first, then read back and verified, so processes starting at once
//     agree), after it opened a stored value of its id if there is one.
//
// Check values of key ids this process does not hold and nothing is sealed
// under any more (keys retired after a rotation) are left as they are.
// A refusal is a *KeyCheckError.
func (db *DB) CheckKeys(ctx context.Context) (KeyCheckResult, error) {
	keys := db.cfg.Keys
	if keys == nil {
		return KeyCheckResult{}, errNoKeyring
	}
	used, err := db.q.SealedKeyIDs(ctx, dbsqlc.SealedKeyIDsParams{Prefix: keyring.Prefix, Settings: slices.Sorted(maps.Keys(sealedSettings))})
	if err != nil {
		return KeyCheckResult{}, fmt.Errorf("key check: list the key ids of stored values: %w", unavailable(err))
	}
	checks, err := db.q.SettingListByPrefix(ctx, KeyCheckSetting)
	if err != nil {
		return KeyCheckResult{}, fmt.Errorf("key check: read the check values: %w", unavailable(err))
	}
	res := KeyCheckResult{Lost: map[string]int64{}}
	refusal := &KeyCheckError{Missing: map[string]map[string]int64{}}
	checked := map[string]bool{}
	for _, c := range checks {
		id := strings.TrimPrefix(c.Name, KeyCheckSetting)
		if !keys.Holds(id) {
			continue
		}
		checked[id] = true
		if err := keys.VerifyCheck(c.Value); err != nil {
			refusal.Mismatched = append(refusal.Mismatched, id)
		}
	}
	for _, u := range used {
		switch {
		case keys.Holds(u.KeyID):
			if checked[u.KeyID] {
				continue
			}
			// No check value yet (data sealed before key checks existed):
			// the key must open what its id sealed before it gets one.
			if _, err := keys.Open(sourcePurposes[u.Source], u.Sample); err != nil && !slices.Contains(refusal.Mismatched, u.KeyID) {
				refusal.Mismatched = append(refusal.Mismatched, u.KeyID)
			}
		case slices.Contains(db.cfg.LostKeyIDs, u.KeyID):
			res.Lost[u.KeyID] += u.N
		default:
			if refusal.Missing[u.KeyID] == nil {
				refusal.Missing[u.KeyID] = map[string]int64{}
			}
			refusal.Missing[u.KeyID][u.Source] = u.N
		}
	}
	if len(refusal.Missing) > 0 || len(refusal.Mismatched) > 0 {
		slices.Sort(refusal.Mismatched)
		return res, refusal
	}
	for _, id := range keys.IDs() {
		if checked[id] {
			continue
		}
		check, _ := keys.CheckValue(id)
		stored, err := db.q.SettingPutIfAbsent(ctx, dbsqlc.SettingPutIfAbsentParams{Name: KeyCheckSetting + id, Value: check})
		if err != nil {
			return res, fmt.Errorf("key check: store the check value of key id %s: %w", id, unavailable(err))
		}
		got, err := db.q.SettingGet(ctx, KeyCheckSetting+id)
		if err != nil {
			return res, fmt.Errorf("key check: read the check value of key id %s: %w", id, unavailable(err))
		}
		if err := keys.VerifyCheck(got); err != nil {
			if errors.Is(err, keyring.ErrCheckMismatch) {
				return res, &KeyCheckError{Mismatched: []string{id}}
			}
			return res, fmt.Errorf("key check: key id %s: %w", id, err)
		}
		if stored == 1 {
			res.Written = append(res.Written, id)
		}
	}
	return res, nil
}
