package ops_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/ops"
)

func audited(t *testing.T) (*ops.Service, *db.DB) {
	t.Helper()
	store := dbtest.New(t)
	return ops.New(store, ops.Config{AllowPrivateTargets: true, Audit: audit.New(store, audit.Config{})}), store
}

func entries(t *testing.T, store *db.DB, f db.AuditFilter) []db.AuditEntry {
	t.Helper()
	es, err := store.AuditList(context.Background(), f, 0, 1000)
	require.NoError(t, err)
	return es
}

var support = access.Principal{Kind: access.KindUser, Role: access.Support, UserID: 3, SessionID: 11,
	Name: "sam@example.com", Addr: "198.51.100.7", UserAgent: "Firefox"}

// Who looked at which message's body is recorded, failed look-ups too.
func TestMessageReadsAreRecorded(t *testing.T) {
	t.Parallel()
	s, store := audited(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	msg := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	ctx := access.WithPrincipal(context.Background(), support)
	m, err := s.Message(ctx, ops.Actor{}, msg.ID, nil)
	require.NoError(t, err)
	require.NotEmpty(t, m.Payload)
	_, err = s.Message(ctx, ops.Actor{}, 999999, nil)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	es := entries(t, store, db.AuditFilter{Action: "message.read"})
	require.Len(t, es, 2)
	require.Equal(t, audit.ID(msg.ID), es[0].TargetID)
	require.Equal(t, "sam@example.com", es[0].ActorName)
	require.Equal(t, "support", es[0].ActorRole)
	require.EqualValues(t, 11, es[0].ActorSessionID)
	require.Equal(t, "198.51.100.7", es[0].Addr)
	require.Equal(t, audit.ResultOK, es[0].Result)
	require.Equal(t, "not_found", es[1].Result)
}

// Rotations and creations keep no secret in the log: not the new keys, not
// the signing secrets, not custom header values.
func TestRecordedChangesHoldNoSecret(t *testing.T) {
	t.Parallel()
	s, store := audited(t)
	ctx := context.Background()
	c, err := s.CreateCarrier(ctx, ops.NewCarrier{Name: "Acme", SigningSecret: "carrier-signing-secret-0123456789"})
	require.NoError(t, err)
	rot, err := s.RotateCarrierKey(ctx, c.Carrier.ID, time.Hour)
	require.NoError(t, err)
	m, err := s.CreateMerchant(ctx, "Shop")
	require.NoError(t, err)
	mrot, err := s.RotateMerchantKey(ctx, m.Merchant.ID)
	require.NoError(t, err)
	url, header := "http://127.0.0.1:9/hook", "header-value-secret-42"
	ep, err := s.CreateEndpoint(ctx, ops.Actor{}, m.Merchant.ID, ops.EndpointInput{URL: &url,
		Headers: map[string]*string{"X-Api-Token": &header}})
	require.NoError(t, err)
	erot, err := s.RotateSecret(ctx, ops.Actor{}, ep.Endpoint.ID)
	require.NoError(t, err)
	desc := "changed"
	_, err = s.UpdateEndpoint(ctx, ops.Actor{}, ep.Endpoint.ID, ops.EndpointInput{Description: &desc})
	require.NoError(t, err)

	es := entries(t, store, db.AuditFilter{})
	var actions []string
	for _, e := range es {
		actions = append(actions, e.Action)
		for _, secret := range []string{"carrier-signing-secret-0123456789", c.Key, rot.Key, m.Key, mrot.Key, header, ep.Secret, erot.Secret} {
			require.NotContains(t, e.Before+e.After, secret, "%s keeps a secret", e.Action)
		}
	}
	require.Equal(t, []string{"carrier.create", "carrier.rotate_key", "merchant.create", "merchant.rotate_key",
		"endpoint.create", "endpoint.rotate_secret", "endpoint.update"}, actions)
	require.Contains(t, es[1].After, `"key":"[redacted]"`, "the rotation says a key was made, not which")
	require.Contains(t, es[4].After, `"X-Api-Token":"[redacted]"`, "header names stay, values go")
	require.Contains(t, es[6].Before, `"Description":""`)
	require.Contains(t, es[6].After, `"Description":"changed"`)
}

// Operator actions are recorded with their result: a refused one with its
// error code and message, and no "after".
func TestOperatorActionsAreRecorded(t *testing.T) {
	t.Parallel()
	s, store := audited(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	_, err := s.DisableEndpoint(ctx, ops.Actor{}, ep.ID, "maintenance")
	require.NoError(t, err)
	_, err = s.EnableEndpoint(ctx, ops.Actor{}, ep.ID)
	require.NoError(t, err)
	_, err = s.RetryDeadLetters(ctx, ops.DeadLetters{IDs: []int64{1, 2}})
	require.NoError(t, err)
	_, err = s.DiscardDeadLetters(ctx, ops.DeadLetters{Filter: db.DeadLetterFilter{EndpointID: ep.ID}})
	require.NoError(t, err)
	_, err = s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Status: "everything"})
	require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
	_, err = s.CreatePortalLink(ctx, ep.MerchantID, time.Hour, true)
	require.NoError(t, err)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(s.RevokeSession(ctx, 4242)))

	es := entries(t, store, db.AuditFilter{})
	got := make([]string, len(es))
	for i, e := range es {
		got[i] = e.Action + " " + e.TargetType + ":" + e.TargetID + " " + e.Result
	}
	id := audit.ID(ep.ID)
	require.Equal(t, []string{
		"endpoint.disable endpoint:" + id + " ok", "endpoint.enable endpoint:" + id + " ok",
		"dead_letters.retry dead_letters: ok", "dead_letters.discard dead_letters: ok",
		"replay.start endpoint:" + id + " invalid", "portal_link.create merchant:" + audit.ID(ep.MerchantID) + " ok",
		"session.revoke session:4242 not_found",
	}, got)
	require.Contains(t, es[0].After, `"DisabledReason":"maintenance"`)
	require.JSONEq(t, `{"count":0,"ids":[1,2]}`, es[2].After)
	require.True(t, strings.HasPrefix(es[4].Error, "status must be"), es[4].Error)
	require.Empty(t, es[4].After)
}

// An action whose entry cannot be written fails (EUNAVAILABLE) and is
// undone, rather than done unrecorded; a message body is not returned.
func TestUnrecordedActionFails(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	gone := dbtest.New(t)
	gone.Close()
	s := ops.New(store, ops.Config{Audit: audit.New(gone, audit.Config{})})
	_, err := s.CreateMerchant(context.Background(), "Shop")
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err), "%v", err)
	require.Contains(t, hookrelay.ErrorMessage(err), "audit log")
	ms, err := s.Merchants(context.Background(), 0, 10)
	require.NoError(t, err)
	require.Empty(t, ms, "the change is rolled back with its entry")
	ep, _ := dbtest.Endpoint(t, store, nil)
	msg := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	m, err := s.Message(context.Background(), ops.Actor{}, msg.ID, nil)
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err))
	require.Empty(t, m.Payload, "no body without its record")
}

// BenchmarkAuditedAction: what recording adds to an operator action (an
// endpoint disabled, then enabled: a read and an update that writes, and
// commits), with the principal's role checked as a route would. Each
// iteration runs the action once without the log and once with it (in
// turn first), each on an endpoint of its own in one database, and the
// medians of the two are reported with their difference (added-ms), so
// that a machine other work slows down slows both alike. Both commit once
// per action (the entry rides in the action's transaction); that commit's
// WAL flush, milliseconds on a loaded test machine and the same in both,
// is switched off (synchronous_commit) so that the difference is what
// recording adds.
func BenchmarkAuditedAction(b *testing.B) {
	store := dbtest.Open(b, dbtest.NewURL(b)+"&options=-csynchronous_commit%3Doff", db.Config{})
	plain := ops.New(store, ops.Config{})
	logged := ops.New(store, ops.Config{Audit: audit.New(store, audit.Config{})})
	plainEP, _ := dbtest.Endpoint(b, store, nil)
	loggedEP, _ := dbtest.Endpoint(b, store, nil)
	ctx := access.WithPrincipal(context.Background(), support)
	act := func(s *ops.Service, id int64, disable bool) time.Duration {
		start := time.Now()
		p, _ := access.FromContext(ctx)
		if !p.Role.Allows(access.Support) {
			b.Fatal("refused")
		}
		var err error
		if disable {
			_, err = s.DisableEndpoint(ctx, ops.Actor{}, id, "bench")
		} else {
			_, err = s.EnableEndpoint(ctx, ops.Actor{}, id)
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var without, with []time.Duration
	i := 0
	for b.Loop() {
		i++
		disable := i%2 == 1
		if i%4 < 2 {
			without = append(without, act(plain, plainEP.ID, disable))
			with = append(with, act(logged, loggedEP.ID, disable))
		} else {
			with = append(with, act(logged, loggedEP.ID, disable))
			without = append(without, act(plain, plainEP.ID, disable))
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / float64(time.Millisecond)
	}
	a, w := p50(without), p50(with)
	b.ReportMetric(a, "plain-ms")
	b.ReportMetric(w, "audited-ms")
	b.ReportMetric(w-a, "added-ms")
}
