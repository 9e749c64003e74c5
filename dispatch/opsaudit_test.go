package dispatch

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestOpsAuditEntryStreamed: an ops endpoint that names audit.entry gets
// every audit entry as the export shows it, signed; one of every event type
// does not get them.
func TestOpsAuditEntryStreamed(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	siem, all := newSink(t), newSink(t)
	siemEP, err := store.OpsEndpointCreate(ctx, siem.srv.URL, []string{hookrelay.OpsEventAuditEntry}, "SIEM", hookrelay.NewSecret())
	require.NoError(t, err)
	_, err = store.OpsEndpointCreate(ctx, all.srv.URL, nil, "everything", hookrelay.NewSecret())
	require.NoError(t, err)
	runDispatcher(t, store, opsConfig())

	log := audit.New(store, audit.Config{})
	require.NoError(t, log.Record(ctx, audit.Entry{Action: "endpoint.disable", TargetType: "endpoint", TargetID: "7",
		Before: map[string]any{"status": "enabled"}, After: map[string]any{"status": "disabled", "secret": "whsec_abc"}}))
	require.NoError(t, log.Record(ctx, audit.Entry{Action: "message.read", TargetType: "message", TargetID: "9"}))

	testenv.Eventually(t, 10*time.Second, "two audit entries", func() bool { return len(opsEvents(t, siem)) == 2 })
	for _, r := range siem.requests() {
		requireSigned(t, siemEP.Secret, r)
	}
	evs := opsEvents(t, siem)
	byID := map[string]map[string]any{}
	for _, ev := range evs {
		require.Equal(t, hookrelay.OpsEventAuditEntry, ev.Type)
		byID[ev.Data["id"].(string)] = ev.Data
	}
	require.Equal(t, "endpoint.disable", byID["1"]["action"])
	require.Equal(t, map[string]any{"status": "disabled", "secret": audit.Redacted}, byID["1"]["after"])
	require.Equal(t, byID["1"]["hash"], byID["2"]["prev_hash"], "the stream carries the chain")
	head, err := store.AuditHeadGet(ctx)
	require.NoError(t, err)
	require.Equal(t, byID["2"]["hash"], hex.EncodeToString(head.Hash), "the newest hash streamed is the head: an anchor outside the database")

	testenv.Eventually(t, 5*time.Second, "the ops queue empty", func() bool {
		n, err := dbtest.OpsDeliveryCount(ctx, store)
		return err == nil && n == 0
	})
	require.Empty(t, opsEvents(t, all), "an ops endpoint of every event type does not get the audit log")
}
