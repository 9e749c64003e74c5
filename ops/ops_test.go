package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/ops"
)

// TestMain fails the package when a test leaves a goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type fakePinger struct{ res hookrelay.PingResult }

func (f fakePinger) Ping(context.Context, int64) (hookrelay.PingResult, error) {
	return f.res, nil
}

// A merchant acts on its own endpoints and their deliveries only; another
// merchant's are "not found"; the operator acts on all of them.
func TestOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	s := ops.New(store, ops.Config{Pinger: fakePinger{hookrelay.PingResult{Success: true, StatusCode: 204}}})
	m1, _ := dbtest.Merchant(t, store, nil)
	m2, _ := dbtest.Merchant(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: m1.ID})
	msg := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}})
	mine, theirs := ops.Merchant(m1.ID), ops.Merchant(m2.ID)

	notFound := func(err error) {
		t.Helper()
		require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)
	}
	_, err := s.Endpoint(ctx, theirs, ep.ID)
	notFound(err)
	_, _, err = s.Delivery(ctx, theirs, msg.DeliveryIDs[0])
	notFound(err)
	notFound(s.RetryDelivery(ctx, theirs, msg.DeliveryIDs[0]))
	_, err = s.RotateSecret(ctx, theirs, ep.ID)
	notFound(err)
	_, err = s.DisableEndpoint(ctx, theirs, ep.ID, "")
	notFound(err)
	_, err = s.EnableEndpoint(ctx, theirs, ep.ID)
	notFound(err)
	_, err = s.Ping(ctx, theirs, ep.ID)
	notFound(err)
	_, err = s.DeleteEndpoint(ctx, theirs, ep.ID)
	notFound(err)

	for _, a := range []ops.Actor{mine, {}} {
		got, err := s.Endpoint(ctx, a, ep.ID)
		require.NoError(t, err)
		require.Equal(t, ep.ID, got.ID)
		res, err := s.Ping(ctx, a, ep.ID)
		require.NoError(t, err)
		require.True(t, res.Success)
		require.Empty(t, res.Problem())
	}
	rot, err := s.RotateSecret(ctx, mine, ep.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rot.Secret, hookrelay.SecretPrefix))
	require.WithinDuration(t, time.Now().Add(db.SecretOverlap), rot.PreviousExpireAt, time.Minute)

	_, err = s.DisableEndpoint(ctx, mine, ep.ID, strings.Repeat("x", ops.MaxDisableReason+1))
	require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
	off, err := s.DisableEndpoint(ctx, mine, ep.ID, "maintenance")
	require.NoError(t, err)
	require.Equal(t, db.EndpointDisabled, off.Status)
	on, err := s.EnableEndpoint(ctx, ops.Actor{}, ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointEnabled, on.Status)

	n, err := s.DeleteEndpoint(ctx, mine, ep.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	_, _, err = s.Delivery(ctx, mine, msg.DeliveryIDs[0])
	notFound(err)
}

// What a retry does depends on the delivery's state, whoever asks.
func TestRetryDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	s := ops.New(store, ops.Config{})
	ep, _ := dbtest.Endpoint(t, store, nil)
	send := func(key string) int64 {
		return dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key}).DeliveryIDs[0]
	}
	pending, delivered, dead := send("P1"), send("D1"), send("X1")
	dbtest.Finish(t, store, "D1", db.AckSuccess)
	dbtest.Finish(t, store, "X1", db.AckDead)

	err := s.RetryDelivery(ctx, ops.Actor{}, delivered)
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.CodeOf(err), "%v", err)
	require.NoError(t, s.RetryDelivery(ctx, ops.Actor{}, pending), "a pending delivery already due is left as it is")
	require.NoError(t, s.RetryDelivery(ctx, ops.Actor{}, dead))
	d, _, err := s.Delivery(ctx, ops.Actor{}, dead)
	require.NoError(t, err)
	require.Equal(t, db.DeliveryPending, d.State)
	require.False(t, d.Ordered, "a retried dead letter does not hold back its key")
	err = s.RetryDelivery(ctx, ops.Actor{}, 999999999)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	// Without a sender a test event cannot be made.
	_, err = s.Ping(ctx, ops.Actor{}, ep.ID)
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err))
	require.False(t, s.CanPing())
}

// Dead letters are selected by ids (an empty list selects none) or else by
// the filter; too many ids at once are refused.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	s := ops.New(store, ops.Config{})
	e1, _ := dbtest.Endpoint(t, store, nil)
	e2, _ := dbtest.Endpoint(t, store, nil)
	var first int64
	for i, ep := range []int64{e1.ID, e1.ID, e2.ID} {
		key := "DL" + string(rune('a'+i))
		id := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep}, OrderingKey: key}).DeliveryIDs[0]
		if i == 0 {
			first = id
		}
		dbtest.Finish(t, store, key, db.AckDead)
	}
	n, err := s.RetryDeadLetters(ctx, ops.DeadLetters{IDs: []int64{}})
	require.NoError(t, err)
	require.Zero(t, n, "an empty id list selects nothing")
	_, err = s.RetryDeadLetters(ctx, ops.DeadLetters{IDs: make([]int64, ops.MaxDeadLetterIDs+1)})
	require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
	n, err = s.RetryDeadLetters(ctx, ops.DeadLetters{IDs: []int64{first}})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	n, err = s.DiscardDeadLetters(ctx, ops.DeadLetters{Filter: db.DeadLetterFilter{EndpointID: e2.ID}})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	n, err = s.RetryDeadLetters(ctx, ops.DeadLetters{})
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the zero filter selects every dead letter left")
}
