package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/apitest"
)

// TestCarrierShareOfASaturatedCommit: while the database takes nothing (a
// lock holds the messages table), carrier A fills the group commit up to
// its saturation level (8 callbacks waiting). A's next callback is refused
// at once with 429 and Retry-After; carrier B's callbacks are still taken,
// up to B's share (8 split between two carriers: 4), and stored once the
// database takes writes again, as are A's 8.
func TestCarrierShareOfASaturatedCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := privateOK()
	cfg.Batcher.Saturation = 8
	b := setup(t, cfg)
	w := b.world(t)
	other := b.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "other"})
	keyA, keyB := w.CarrierKey, other["api_key"].(string)
	const waiting = "hookrelay_ingest_callbacks_waiting"

	lock, err := pgx.Connect(ctx, b.DBURL)
	require.NoError(t, err)
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE messages IN SHARE MODE")
	require.NoError(t, err)

	type answer struct {
		status int
		err    error
	}
	send := func(key, tracking string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/callbacks",
				strings.NewReader(fmt.Sprintf(`{"tracking_no":%q}`, tracking)))
			if err != nil {
				ch <- answer{err: err}
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := apitest.Client(t).Do(req)
			if err != nil {
				ch <- answer{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ch <- answer{status: resp.StatusCode}
		}()
		return ch
	}
	var held []<-chan answer
	for i := range 8 {
		held = append(held, send(keyA, fmt.Sprintf("A-%d", i)))
	}
	require.Eventually(t, func() bool { return metricValue(t, b.Registry, waiting) == 8 },
		10*time.Second, 10*time.Millisecond, "A's callbacks wait for the commit")

	// A holds the whole saturation level: refused at once, with the answer
	// the API documents.
	st, body := b.call(t, http.MethodPost, "/v1/callbacks", keyA, []byte(`{"tracking_no":"A-over"}`))
	require.Equal(t, http.StatusTooManyRequests, st, "%v", body)
	require.Equal(t, "rate_limited", errCode(body))
	resp := b.do(t, http.MethodPost, "/v1/callbacks", keyA, []byte(`{"tracking_no":"A-over-2"}`))
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	// B is not behind A's share: its callbacks are taken up to its own.
	for i := range 4 {
		held = append(held, send(keyB, fmt.Sprintf("B-%d", i)))
		require.Eventually(t, func() bool { return metricValue(t, b.Registry, waiting) == float64(9+i) },
			10*time.Second, 10*time.Millisecond, "B's callback %d waits for the commit", i)
	}
	st, body = b.call(t, http.MethodPost, "/v1/callbacks", keyB, []byte(`{"tracking_no":"B-over"}`))
	require.Equal(t, http.StatusTooManyRequests, st, "%v", body)
	require.Equal(t, float64(3), metricValue(t, b.Registry, "hookrelay_ingest_carrier_share_refusals_total"))

	require.NoError(t, tx.Rollback(ctx))
	for i, ch := range held {
		a := <-ch
		require.NoError(t, a.err)
		require.Equal(t, http.StatusAccepted, a.status, "callback %d", i)
	}
	require.Equal(t, float64(12), b.stats(t)["messages_today_utc"])
	require.Zero(t, metricValue(t, b.Registry, waiting))

	// Below saturation nothing is refused.
	st, body = b.call(t, http.MethodPost, "/v1/callbacks", keyA, []byte(`{"tracking_no":"A-after"}`))
	require.Equal(t, http.StatusAccepted, st, "%v", body)
}
