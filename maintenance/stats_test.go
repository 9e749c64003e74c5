package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestStatSamplerWritesContiguousSamples: the holder writes a sample per
// interval, each window starting where the previous one ended, and trims
// samples older than StatKeep.
func TestStatSamplerWritesContiguousSamples(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	now := time.Now().UTC()
	b.clock.Set(now)
	ancient := db.StatSample{SampledAt: now.Add(-3 * time.Hour), WindowStart: now.Add(-4 * time.Hour), WindowEnd: now.Add(-3 * time.Hour)}
	require.NoError(t, b.store.StatSampleInsert(ctx, ancient))
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
	for i := 1; i < len(got); i++ {
		require.True(t, got[i].WindowStart.Equal(got[i-1].WindowEnd), "gap between samples %d and %d", i-1, i)
		require.Len(t, got[i].BacklogPerQueue, 4)
	}
	r.stop()
}
