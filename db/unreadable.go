package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// Unreadable is what of an endpoint's sealed values this process cannot
// open with the keys it holds, and why: values sealed under a key id
// declared lost, or written by a process with another key. The endpoint
// stays readable without them, can be fixed (new header values or
// credentials, a new signing secret) and deleted; its deliveries are parked
// until then (docs/operations/security.md).
type Unreadable struct {
	// Secret reports that its newest signing secret cannot be opened.
	Secret bool
	// Headers names the custom headers whose values cannot be opened.
	Headers []string
	// Auth reports that its credentials cannot be opened.
	Auth bool
	// Reason is why the first of them cannot be opened, e.g. "signing
	// secret: key id 1a2b3c4d: sealed under a key this process does not
	// have"; it never holds any part of a value.
	Reason string
}

// Fields names what cannot be opened: "secret", "headers", "auth".
func (u *Unreadable) Fields() []string {
	var out []string
	if u.Secret {
		out = append(out, "secret")
	}
	if len(u.Headers) > 0 {
		out = append(out, "headers")
	}
	if u.Auth {
		out = append(out, "auth")
	}
	return out
}

// note records that what (a field of Unreadable) cannot be opened because
// of err, creating u when nil, and returns it.
func (u *Unreadable) note(what string, err error) *Unreadable {
	if u == nil {
		u = &Unreadable{}
	}
	if u.Reason == "" {
		u.Reason = what + ": " + err.Error()
	}
	return u
}

// openEndpointSealed opens the custom headers and credentials of an
// endpoint row: what cannot be opened is left out (a header's name stays,
// with an empty value) and described in the returned Unreadable (nil when
// everything opened). Only a malformed stored form is an error.
func (db *DB) openEndpointSealed(headers []byte, auth string) (map[string]string, *EndpointAuth, *Unreadable, error) {
	h, err := db.openHeaders(headers)
	if err != nil {
		return nil, nil, nil, err
	}
	var u *Unreadable
	if len(h.unreadable) > 0 {
		u = u.note("header "+h.unreadable[0], h.why)
		u.Headers = h.unreadable
		if h.values == nil {
			h.values = map[string]string{}
		}
		for _, name := range h.unreadable {
			h.values[name] = ""
		}
	}
	var a *EndpointAuth
	if auth != "" {
		plain, err := db.openValue(purposeAuth, auth)
		if err != nil {
			u = u.note("credentials", err)
			u.Auth = true
		} else if a, err = parseAuth(plain); err != nil {
			return nil, nil, nil, fmt.Errorf("endpoint credentials: %w", err)
		}
	}
	return h.values, a, u, nil
}

// openSecrets opens an endpoint's signing secrets (newest first): the
// plaintext of those that open, in order. The newest not opening makes the
// endpoint unreadable (u, with its reason); an older one not opening is
// only left out (rotated out, it signs beside the newest until it expires).
func (db *DB) openSecrets(stored []string, u *Unreadable) ([]string, *Unreadable) {
	out := make([]string, 0, len(stored))
	for i, s := range stored {
		v, err := db.openValue(purposeSecret, s)
		if err != nil {
			if i == 0 {
				u = u.note("signing secret", err)
				u.Secret = true
			}
			continue
		}
		out = append(out, v)
	}
	return out, u
}

// markSecrets sets Unreadable.Secret on the endpoints of eps whose newest
// signing secret this process cannot open (one query for all of them).
func (db *DB) markSecrets(ctx context.Context, eps []Endpoint) error {
	if len(eps) == 0 {
		return nil
	}
	ids := make([]int64, len(eps))
	for i, ep := range eps {
		ids[i] = ep.ID
	}
	rows, err := db.q.EndpointSecretNewestMany(ctx, ids)
	if err != nil {
		return fmt.Errorf("endpoint secrets: %w", unavailable(err))
	}
	newest := make(map[int64]string, len(rows))
	for _, r := range rows {
		newest[r.EndpointID] = r.Secret
	}
	for i := range eps {
		s, ok := newest[eps[i].ID]
		if !ok || !keyring.IsSealed(s) {
			continue
		}
		if _, err := db.openValue(purposeSecret, s); err != nil {
			eps[i].Unreadable = eps[i].Unreadable.note("signing secret", err)
			eps[i].Unreadable.Secret = true
		}
	}
	return nil
}

// String describes u for logs and pages: what cannot be opened and why.
func (u *Unreadable) String() string {
	if u == nil {
		return ""
	}
	what := strings.Join(u.Fields(), ", ")
	if what == "" {
		what = "stored values" // malformed rather than unopenable
	}
	return what + " cannot be opened (" + u.Reason + ")"
}

// EndpointUnreadableMark records that endpoint id's sealed values cannot be
// opened (reason says which and why) unless recorded already, and reports
// whether it recorded it: then, in the same transaction, it reports
// endpoint.secret_unreadable to the ops endpoints that want it, so one
// event goes out per episode however many dispatchers find the endpoint.
func (db *DB) EndpointUnreadableMark(ctx context.Context, id int64, reason string) (bool, error) {
	marked := false
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		merchant, err := q.EndpointUnreadableMark(ctx, dbsqlc.EndpointUnreadableMarkParams{EndpointID: id, Reason: reason})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return unavailable(err)
		}
		marked = true
		return opsEventAdd(ctx, q, hookrelay.OpsEventEndpointSecretUnreadable, id, map[string]any{
			"endpoint_id": strconv.FormatInt(id, 10), "merchant_id": strconv.FormatInt(merchant, 10), "reason": reason,
		})
	})
	if err != nil {
		return false, fmt.Errorf("mark endpoint %d unreadable: %w", id, err)
	}
	return marked, nil
}

// EndpointUnreadableClear clears the record of EndpointUnreadableMark (its
// values open again) and, when there was one, makes the endpoint's parked
// deliveries due at once; it reports whether there was one.
func (db *DB) EndpointUnreadableClear(ctx context.Context, id int64) (bool, error) {
	cleared := false
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		n, err := q.EndpointUnreadableClear(ctx, id)
		if err != nil || n == 0 {
			return unavailable(err)
		}
		cleared = true
		_, err = q.DeliveryReleaseByEndpoint(ctx, id)
		return unavailable(err)
	})
	if err != nil {
		return false, fmt.Errorf("clear endpoint %d unreadable: %w", id, err)
	}
	return cleared, nil
}
