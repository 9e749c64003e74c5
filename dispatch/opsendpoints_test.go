package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// requireSigned checks an ops request's Standard Webhooks headers with the
// independent verifier (signer_test.go) and a fresh timestamp.
func requireSigned(t *testing.T, secret string, r received) {
	t.Helper()
	require.NotEmpty(t, r.Header.Get("webhook-id"))
	sec, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), sec, 300, "timestamp within tolerance")
	require.True(t, verifyStandardWebhook(secret, r.Header, r.Body), "signature %q", r.Header.Get("webhook-signature"))
}

// opsEvent is a decoded operational webhook.
type opsEvent struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

func opsEvents(t *testing.T, s *sink) []opsEvent {
	t.Helper()
	var out []opsEvent
	for _, r := range s.requests() {
		if r.Status != http.StatusOK {
			continue
		}
		var ev opsEvent
		require.NoError(t, json.Unmarshal(r.Body, &ev), "body %s", r.Body)
		out = append(out, ev)
	}
	return out
}

func opsConfig() Config {
	cfg := testConfig()
	cfg.OpsPoll = 50 * time.Millisecond
	cfg.OpsRetryBase = 50 * time.Millisecond
	cfg.OpsTimeout = time.Second
	cfg.OpsCoalesce = 2 * time.Second
	return cfg
}

// TestOpsEventsDeliveredSigned: every event type reaches an ops endpoint
// subscribed to all of them, signed with its secret; an ops endpoint
// subscribed to one type gets only that one.
func TestOpsEventsDeliveredSigned(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	all, only := newSink(t), newSink(t)
	allEP, err := store.OpsEndpointCreate(ctx, all.srv.URL, nil, "everything", hookrelay.NewSecret())
	require.NoError(t, err)
	_, err = store.OpsEndpointCreate(ctx, only.srv.URL, []string{hookrelay.OpsEventEndpointEnabled}, "", hookrelay.NewSecret())
	require.NoError(t, err)

	// flaky fails its first three attempts (opening the circuit at two),
	// then succeeds (closing it); gone answers 410 (disabled); dead fails
	// for good (a dead letter).
	flaky, gone, dead := newSink(t), newSink(t), newSink(t)
	var flakyN atomic.Int32
	flaky.setDecide(func(*http.Request, []byte) (int, http.Header) {
		if flakyN.Add(1) <= 3 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	gone.setDecide(func(*http.Request, []byte) (int, http.Header) { return http.StatusGone, nil })
	dead.setDecide(func(*http.Request, []byte) (int, http.Header) { return http.StatusInternalServerError, nil })
	retry := []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
	flakyEP, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: flaky.srv.URL, RetrySchedule: retry})
	goneEP, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: gone.srv.URL, RetrySchedule: retry})
	deadEP, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: dead.srv.URL, RetrySchedule: retry[:1]})
	// sealed holds a secret this store cannot open (endpoint.secret_unreadable).
	sealedEP, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: flaky.srv.URL})
	sealedKeyID, err := dbtest.SealSecretsUnderUnknownKey(ctx, store, sealedEP.ID)
	require.NoError(t, err)
	for _, ep := range []int64{flakyEP.ID, goneEP.ID, deadEP.ID, sealedEP.ID} {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep}, OrderingKey: fmt.Sprint("ops-", ep), Queues: 8})
	}
	cfg := opsConfig()
	cfg.CircuitThreshold, cfg.CircuitBase = 2, 50*time.Millisecond
	runDispatcher(t, store, cfg)

	// Manual disable and enable, as the API and the dashboard do them.
	manual, _ := dbtest.Endpoint(t, store, nil)
	_, err = store.EndpointDisable(ctx, manual.ID, "maintenance window")
	require.NoError(t, err)
	_, err = store.EndpointEnable(ctx, manual.ID)
	require.NoError(t, err)
	require.NoError(t, store.OpsLongTransaction(ctx, db.LongTransaction{PID: 42, Database: "hookrelay", State: "idle in transaction",
		XactStart: time.Now().Add(-time.Hour), XactSeconds: 3600, SameDatabase: true}))
	require.NoError(t, dbtest.OpsReplayFinished(ctx, store, db.Replay{ID: 7, ReplaySpec: db.ReplaySpec{EndpointID: flakyEP.ID}, State: db.ReplayFinished, Total: 10, Done: 10}))
	// A poll endpoint lagging, then caught up, as the maintenance holder's
	// health sample reports them.
	pollEP, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
	lagging := db.PollLagAlert{Lag: db.PullLag{EndpointID: pollEP.ID, Pending: 1, Oldest: time.Now().Add(-time.Hour)}, LagSeconds: 3600}
	_, err = store.EndpointPollLagAlert(ctx, time.Now(), 5*time.Minute, []db.PollLagAlert{lagging}, nil)
	require.NoError(t, err)
	_, err = store.EndpointPollLagAlert(ctx, time.Now(), 5*time.Minute, nil, []db.PollLagAlert{{Lag: db.PullLag{EndpointID: pollEP.ID}}})
	require.NoError(t, err)

	byType := func() map[string][]opsEvent {
		m := map[string][]opsEvent{}
		for _, ev := range opsEvents(t, all) {
			m[ev.Type] = append(m[ev.Type], ev)
		}
		return m
	}
	// Every event type but audit.entry, which goes only to ops endpoints
	// that name it.
	testenv.Eventually(t, 20*time.Second, "every event type", func() bool { return len(byType()) == len(hookrelay.OpsEventTypes)-1 })
	for _, r := range all.requests() {
		requireSigned(t, allEP.Secret, r)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	}
	got := byType()
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	// about returns the data of the event of type typ about endpoint ep.
	about := func(typ string, ep int64) map[string]any {
		for _, ev := range got[typ] {
			if ev.Data["endpoint_id"] == id(ep) {
				return ev.Data
			}
		}
		t.Fatalf("no %s event about endpoint %d: %+v", typ, ep, got[typ])
		return nil
	}
	opened := about(hookrelay.OpsEventEndpointCircuitOpened, flakyEP.ID)
	require.GreaterOrEqual(t, opened["consecutive_failures"], 2.0)
	require.Equal(t, id(flakyEP.MerchantID), opened["merchant_id"])
	require.NotEmpty(t, opened["open_until"])
	require.Equal(t, "HTTP 500", opened["last_error"])
	require.Equal(t, id(flakyEP.MerchantID), about(hookrelay.OpsEventEndpointCircuitClosed, flakyEP.ID)["merchant_id"])
	auto, hand := about(hookrelay.OpsEventEndpointDisabled, goneEP.ID), about(hookrelay.OpsEventEndpointDisabled, manual.ID)
	require.Equal(t, "automatic", auto["trigger"])
	require.Equal(t, "the endpoint answered 410 Gone", auto["reason"])
	require.Equal(t, "manual", hand["trigger"])
	require.Equal(t, "maintenance window", hand["reason"])
	require.Equal(t, id(manual.MerchantID), about(hookrelay.OpsEventEndpointEnabled, manual.ID)["merchant_id"])
	dl := about(hookrelay.OpsEventDeliveryDeadLettered, deadEP.ID)
	require.EqualValues(t, 1, dl["count"])
	require.Equal(t, "HTTP 500", dl["last_error"])
	unreadable := about(hookrelay.OpsEventEndpointSecretUnreadable, sealedEP.ID)
	require.Equal(t, id(sealedEP.MerchantID), unreadable["merchant_id"])
	require.Contains(t, unreadable["reason"], "key id "+sealedKeyID)
	require.Len(t, got[hookrelay.OpsEventEndpointSecretUnreadable], 1, "one event however often its deliveries are parked")
	require.EqualValues(t, 42, got[hookrelay.OpsEventDatabaseLongXact][0].Data["pid"])
	require.Equal(t, db.ReplayFinished, got[hookrelay.OpsEventReplayFinished][0].Data["state"])
	require.Equal(t, "7", got[hookrelay.OpsEventReplayFinished][0].Data["replay_id"])
	require.EqualValues(t, 3600, about(hookrelay.OpsEventEndpointPollLagging, pollEP.ID)["lag_seconds"])
	require.Equal(t, id(pollEP.MerchantID), about(hookrelay.OpsEventEndpointPollCaughtUp, pollEP.ID)["merchant_id"])

	// The subscriber of endpoint.enabled alone got that one event.
	testenv.Eventually(t, 5*time.Second, "the filtered subscriber", func() bool { return len(opsEvents(t, only)) == 1 })
	require.Equal(t, hookrelay.OpsEventEndpointEnabled, opsEvents(t, only)[0].Type)
	testenv.Eventually(t, 5*time.Second, "the ops queue empty", func() bool {
		n, err := dbtest.OpsDeliveryCount(ctx, store)
		return err == nil && n == 0
	})
}

// TestOpsDeadLettersCoalesced: 50 dead letters of one endpoint within the
// window make one delivery.dead_lettered event with count 50.
func TestOpsDeadLettersCoalesced(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	ops := newSink(t)
	opsEP, err := store.OpsEndpointCreate(ctx, ops.srv.URL, []string{hookrelay.OpsEventDeliveryDeadLettered}, "", hookrelay.NewSecret())
	require.NoError(t, err)
	dead := newSink(t)
	dead.setDecide(func(*http.Request, []byte) (int, http.Header) { return http.StatusInternalServerError, nil })
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: dead.srv.URL, RetrySchedule: []time.Duration{time.Millisecond}, MaxInFlight: 50})
	for i := range 50 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprint("dl-", i), Queues: 8})
	}
	cfg := opsConfig()
	cfg.CircuitThreshold = 1000
	// The window stays open while the 100 attempts are made, however long
	// they take (a dead letter after it closed would make a second event):
	// the window closes when a dispatcher with a shorter one takes over.
	cfg.OpsCoalesce = time.Hour
	_, stop := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 40*time.Second, "the 50 dead letters", func() bool {
		dl, err := store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: ep.ID}, db.DeadLetterPage{}, 100)
		require.NoError(t, err)
		return len(dl) == 50
	})
	require.NoError(t, stop())
	require.Empty(t, opsEvents(t, ops), "no event while the window is open")
	cfg.OpsCoalesce = time.Millisecond
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 40*time.Second, "the coalesced event", func() bool { return len(opsEvents(t, ops)) > 0 })
	time.Sleep(3 * cfg.OpsPoll) // a second event (a duplicate) would come now
	evs := opsEvents(t, ops)
	require.Len(t, evs, 1)
	require.Len(t, dead.requests(), 100, "every message tried twice")
	require.Equal(t, hookrelay.OpsEventDeliveryDeadLettered, evs[0].Type)
	require.EqualValues(t, 50, evs[0].Data["count"])
	require.Equal(t, strconv.FormatInt(ep.ID, 10), evs[0].Data["endpoint_id"])
	require.NotEmpty(t, evs[0].Data["window_start"])
	require.NotEmpty(t, evs[0].Data["window_end"])
	requireSigned(t, opsEP.Secret, ops.requests()[0])
}

// TestOpsReceiverHangingDoesNotSlowDeliveries: while the only ops receiver
// hangs past its timeout, merchant deliveries keep flowing, and the ops
// message is retried until the receiver answers.
func TestOpsReceiverHangingDoesNotSlowDeliveries(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	release := make(chan struct{})
	var opsTries atomic.Int32
	var hung atomic.Bool // the first attempt's hang ended
	opsRecv := newSink(t)
	opsRecv.setDecide(func(r *http.Request, _ []byte) (int, http.Header) {
		if n := opsTries.Add(1); n <= 2 {
			select { // hang until the client gives up or the test releases it
			case <-r.Context().Done():
			case <-release:
			}
			if n == 1 {
				hung.Store(true)
			}
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusOK, nil
	})
	_, err := store.OpsEndpointCreate(ctx, opsRecv.srv.URL, nil, "", hookrelay.NewSecret())
	require.NoError(t, err)
	merchant := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: merchant.srv.URL})
	cfg := opsConfig()
	// Long enough for the merchant deliveries below on a loaded machine.
	cfg.OpsTimeout = 5 * time.Second
	d, _ := runDispatcher(t, store, cfg)
	require.NoError(t, dbtest.OpsReplayFinished(ctx, store, db.Replay{ID: 1, ReplaySpec: db.ReplaySpec{EndpointID: ep.ID}, State: db.ReplayFinished}))
	testenv.Eventually(t, 5*time.Second, "the ops receiver hanging", func() bool { return opsTries.Load() == 1 })

	const n = 40
	for i := range n {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprint("live-", i%4), Queues: 8})
	}
	testenv.Eventually(t, 10*time.Second, "merchant deliveries", func() bool { return len(merchant.requests()) == n })
	require.False(t, hung.Load(), "merchant deliveries waited for the ops receiver")
	require.EqualValues(t, 1, opsTries.Load(), "the ops receiver was still hanging")

	// It times out and is retried: the third attempt is answered.
	testenv.Eventually(t, 30*time.Second, "the ops message delivered", func() bool { return len(opsEvents(t, opsRecv)) == 1 })
	require.GreaterOrEqual(t, opsTries.Load(), int32(3))
	close(release)
	testenv.Eventually(t, 5*time.Second, "the delivered attempt counted", func() bool {
		return metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("delivered")) == 1
	})
	require.GreaterOrEqual(t, metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("retried")), 2.0)
	require.Zero(t, metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("dropped")))
}

// TestOpsMessageDroppedAfterItsAttempts: an ops receiver that always fails
// gets OpsAttempts attempts of a message, which is then given up, deleted
// and counted as dropped.
func TestOpsMessageDroppedAfterItsAttempts(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	var tries atomic.Int32
	recv := newSink(t)
	recv.setDecide(func(*http.Request, []byte) (int, http.Header) {
		tries.Add(1)
		return http.StatusInternalServerError, nil
	})
	_, err := store.OpsEndpointCreate(ctx, recv.srv.URL, nil, "", hookrelay.NewSecret())
	require.NoError(t, err)
	ep, _ := dbtest.Endpoint(t, store, nil)
	cfg := opsConfig()
	cfg.OpsAttempts = 3
	d, _ := runDispatcher(t, store, cfg)
	require.NoError(t, dbtest.OpsReplayFinished(ctx, store, db.Replay{ID: 1, ReplaySpec: db.ReplaySpec{EndpointID: ep.ID}, State: db.ReplayFinished}))
	testenv.Eventually(t, 10*time.Second, "the message given up", func() bool {
		return metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("dropped")) == 1
	})
	require.EqualValues(t, 3, tries.Load())
	require.Equal(t, 2.0, metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("retried")))
	require.Zero(t, metricValue(t, d.metrics.opsEventAttempts.WithLabelValues("delivered")))
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctx))
	var left int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM ops_deliveries").Scan(&left))
	require.Zero(t, left, "the message is deleted")
	time.Sleep(5 * cfg.OpsRetryBase) // for an attempt that should not come
	require.EqualValues(t, 3, tries.Load(), "no attempt after it was given up")
}
