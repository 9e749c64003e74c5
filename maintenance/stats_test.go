package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestStatSamplerWritesContiguousSamples: the holder writes a sample per
// interval, each window starting where the previous one ended, and trims
// samples older than StatKeep; before its samples it summarizes the history
// partitions' new BRIN ranges.
func TestStatSamplerWritesContiguousSamples(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	now := time.Now().UTC()
	b.clock.Set(now)
	ancient := db.StatSample{SampledAt: now.Add(-3 * time.Hour), WindowStart: now.Add(-4 * time.Hour), WindowEnd: now.Add(-3 * time.Hour)}
	require.NoError(t, b.store.StatSampleInsert(ctx, ancient))
	// Callbacks in today's partition past its first BRIN range (the index's
	// build summarized that one, empty; inserts keep it up to date): ranges
	// nobody has summarized yet.
	b.exec(t, `INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
		SELECT now(), 1, 'k' || g, 0, convert_to(repeat('x', 1000), 'UTF8'), 1000, '\x00' FROM generate_series(1, 1500) g`)
	// The clock runs at real pace from now on: samples are contiguous as long
	// as none starts more than 3 intervals after the previous one ended
	// (after a longer gap a sample covers one interval only). Moving it from
	// the polling loop instead let it run ahead of a sampler slowed by a
	// busy machine, which then saw a "long gap".
	b.clock.Run()
	r := b.start(t, Config{RetentionInterval: -1, StatInterval: 100 * time.Millisecond, StatLag: time.Second, Queues: 4})
	var got []db.StatSample
	require.Eventually(t, func() bool {
		var err error
		got, err = b.store.StatSamplesSince(ctx, now.Add(-24*time.Hour))
		require.NoError(t, err)
		return len(got) >= 4
	}, 10*time.Second, 30*time.Millisecond)
	require.True(t, got[0].SampledAt.After(now.Add(-time.Minute)), "the 3-hour-old sample was not trimmed")
	require.GreaterOrEqual(t, value(t, r.mt.m.brinRanges), 1.0, "no BRIN range summarized")
	for i := 1; i < len(got); i++ {
		require.True(t, got[i].WindowStart.Equal(got[i-1].WindowEnd), "gap between samples %d and %d", i-1, i)
		require.Len(t, got[i].BacklogPerQueue, 4)
	}
	r.stop()
}
