package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// TestRetentionPrunesTheAuditLog: the retention pass drops the audit log's
// days past AuditRetention, and the chain still verifies from the anchor
// the drop recorded.
func TestRetentionPrunesTheAuditLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d0 := day(time.Now()).AddDate(0, 0, 1)
	noon := func(i int) time.Time { return d0.AddDate(0, 0, i).Add(12 * time.Hour) }
	b.clock.Set(noon(0))
	log := audit.New(b.store, audit.Config{Now: b.clock.Now})
	r := b.start(t, Config{Retention: 30 * 24 * time.Hour, AuditRetention: 2 * 24 * time.Hour, PartitionsAhead: 3, Audit: log})
	ctx := t.Context()
	for range 3 {
		require.NoError(t, log.Record(ctx, audit.Entry{Action: "endpoint.update", TargetType: "endpoint", TargetID: "1"}))
	}
	b.clock.Set(noon(1))
	require.NoError(t, log.Record(ctx, audit.Entry{Action: "endpoint.delete", TargetType: "endpoint", TargetID: "1"}))

	b.clock.Set(noon(3))
	rep := r.pass(t, noon(3))
	require.Contains(t, rep.Dropped, "audit_log_p"+d0.Format("20060102"))
	require.NotContains(t, rep.Dropped, "audit_log_p"+d0.AddDate(0, 0, 1).Format("20060102"))
	v, err := audit.Verify(ctx, b.store)
	require.NoError(t, err)
	require.True(t, v.OK(), v.Problem)
	require.EqualValues(t, 3, v.Head.AnchorID)
	require.EqualValues(t, 2, v.Count, "the entry of day 1 and the audit.pruned entry")
	es, err := b.store.AuditList(ctx, db.AuditFilter{Action: audit.ActionPruned}, 0, 10)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "maintenance", es[0].ActorName)
}
