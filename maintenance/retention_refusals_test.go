package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestRetentionDropsRefusalLogDays: the carriers' refusal log goes by whole
// day partitions after RefusalRetention, shorter than the history's, and
// the carriers' per-minute statistics after a day.
func TestRetentionDropsRefusalLogDays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d0 := day(time.Now()).AddDate(0, 0, 1)
	noon := func(i int) time.Time { return d0.AddDate(0, 0, i).Add(12 * time.Hour) }
	b.clock.Set(noon(0))
	cfg := Config{Retention: 30 * 24 * time.Hour, RefusalRetention: 2 * 24 * time.Hour, PartitionsAhead: 3}
	r := b.start(t, cfg)
	r.pass(t, noon(0))
	ctx := t.Context()
	require.NoError(t, b.store.CarrierRefusalInsertMany(ctx, []db.CarrierRefusal{
		{CarrierID: 1, ReceivedAt: noon(0), Status: 400, Reason: "parse", Message: "m", BodyExcerpt: "{"},
	}))
	require.NoError(t, b.store.CarrierStatsAdd(ctx, []db.CarrierStat{
		{CarrierID: 1, Minute: noon(0).Truncate(time.Minute), Accepted: 3, Latency: []int64{1, 2}, LastAt: noon(0)},
	}))

	b.clock.Set(noon(2))
	rep := r.pass(t, noon(2))
	require.True(t, b.tableExists(t, partName("carrier_refusals", d0)), "dropped before its retention: %v", rep.Dropped)
	stats, err := b.store.CarrierStatsSince(ctx, noon(-1), nil)
	require.NoError(t, err)
	require.Empty(t, stats, "statistics older than a day kept")

	b.clock.Set(noon(3))
	rep = r.pass(t, noon(3))
	require.Contains(t, rep.Dropped, partName("carrier_refusals", d0))
	require.False(t, b.tableExists(t, partName("carrier_refusals", d0)))
	require.True(t, b.tableExists(t, partName("messages", d0)), "the history follows its own retention")
	require.True(t, b.tableExists(t, partName("carrier_refusals", d0.AddDate(0, 0, 6))), "partitions ahead")
}
