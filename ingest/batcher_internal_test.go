package ingest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func testMsg(carrierID int64, key string, received time.Time) db.NewMessage {
	p := []byte(`{"tracking_no":"` + key + `"}`)
	sum := sha256.Sum256(p)
	return db.NewMessage{ReceivedAt: received, CarrierID: carrierID, OrderingKey: key, Queue: hookrelay.QueueFor(key, 32),
		Payload: p, PayloadSize: len(p), PayloadSHA256: sum[:]}
}

// A batch whose transaction fails answers an error to exactly its own
// requests and stores none of them; other batches commit.
func TestBatcherFailedBatchFailsExactlyItsRequests(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	c, _ := dbtest.Carrier(t, store, nil)

	var mu sync.Mutex
	var batches [][]string // ordering keys per batch
	failed := map[string]bool{}
	insert := func(ctx context.Context, msgs []db.NewMessage) ([]db.StoredMessage, error) {
		res, err := store.MessageInsertMany(ctx, msgs)
		mu.Lock()
		defer mu.Unlock()
		var keys []string
		for _, m := range msgs {
			keys = append(keys, m.OrderingKey)
			if err != nil {
				failed[m.OrderingKey] = true
			}
		}
		batches = append(batches, keys)
		return res, err
	}
	b := NewBatcher(BatcherConfig{MaxWait: 5 * time.Millisecond, MaxRows: 8, Flushers: 2}, insert, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()

	const n = 60
	errs := make([]error, n)
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			received := time.Now()
			if i%15 == 0 {
				// No partition exists for 1999: this message fails its whole batch.
				received = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			st, err := b.Submit(context.Background(), testMsg(c.ID, fmt.Sprintf("k%d", i), received))
			errs[i], ids[i] = err, st.ID
		}()
	}
	wg.Wait()
	cancel()
	<-done

	require.NotEmpty(t, failed)
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		if failed[key] {
			require.Error(t, errs[i], key)
			require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(errs[i]))
			continue
		}
		require.NoError(t, errs[i], key)
		_, err := dbtest.MessageGetByID(context.Background(), store, ids[i])
		require.NoError(t, err, "acknowledged %s is stored", key)
	}
	// Failed messages are nowhere (their batch rolled back as a whole).
	st, err := store.StatsGet(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(n-len(failed)), st.MessagesToday)
	// Each request was in exactly one batch.
	count := 0
	for _, bt := range batches {
		count += len(bt)
	}
	require.Equal(t, n, count)
}

func TestBatcherRefusesAfterShutdown(t *testing.T) {
	t.Parallel()
	b := NewBatcher(BatcherConfig{}, func(context.Context, []db.NewMessage) ([]db.StoredMessage, error) {
		return nil, fmt.Errorf("not reached")
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.Run(ctx)
	_, err := b.Submit(context.Background(), db.NewMessage{})
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err))
}

// OnStored runs after a batch that committed deliveries, not after one that
// stored none (a callback routed to no endpoint, a duplicate) nor after a
// failed one.
func TestBatcherOnStoredAfterDeliveriesCommit(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	c, _ := dbtest.Carrier(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, nil)
	var n, deliveries int
	var stored []int
	var mu sync.Mutex
	b := NewBatcher(BatcherConfig{MaxWait: time.Millisecond, OnStored: func(d int, queues []int) {
		mu.Lock()
		n++
		deliveries += d
		stored = append(stored, queues...)
		mu.Unlock()
	}}, store.MessageInsertMany, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}

	routed := testMsg(c.ID, "w1", time.Now())
	routed.EndpointIDs, routed.IdempotencyKey = []int64{ep.ID}, "once"
	_, err := b.Submit(ctx, routed)
	require.NoError(t, err)
	require.Equal(t, 1, count(), "a batch with a delivery")

	again := routed
	st, err := b.Submit(ctx, again)
	require.NoError(t, err)
	require.True(t, st.Duplicate)
	_, err = b.Submit(ctx, testMsg(c.ID, "w2", time.Now()))
	require.NoError(t, err)
	failing := routed
	failing.IdempotencyKey, failing.ReceivedAt = "", time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) // no partition
	_, err = b.Submit(ctx, failing)
	require.Error(t, err)
	require.Equal(t, 1, count(), "a duplicate, a callback with no endpoint and a failed batch")
	mu.Lock()
	require.Equal(t, 1, deliveries)
	require.Equal(t, []int{routed.Queue}, stored, "the delivery's queue")
	mu.Unlock()
}

// A batch that the database refuses for a value of one of its messages is
// split until that message is alone: it gets the 400, the others of the
// batch are committed, and idempotency keys keep their meaning across the
// split. A batch that is stored takes one statement, as before.
func TestBatcherSplitsAroundARefusedMessage(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	c, _ := dbtest.Carrier(t, store, nil)
	var mu sync.Mutex
	statements := 0
	insert := func(ctx context.Context, msgs []db.NewMessage) ([]db.StoredMessage, error) {
		mu.Lock()
		statements++
		mu.Unlock()
		return store.MessageInsertMany(ctx, msgs)
	}
	b := NewBatcher(BatcherConfig{}, insert, nil)
	now := time.Now()
	msg := func(key, idem string) db.NewMessage {
		m := testMsg(c.ID, key, now)
		m.IdempotencyKey = idem
		return m
	}
	flush := func(msgs ...db.NewMessage) []batchResult {
		batch := make([]*pendingMsg, len(msgs))
		for i, m := range msgs {
			batch[i] = &pendingMsg{msg: m, done: make(chan batchResult, 1)}
		}
		b.flush(batch)
		out := make([]batchResult, len(batch))
		for i, p := range batch {
			out[i] = <-p.done
		}
		return out
	}

	badKey := msg("x\x00y", "K2") // past the door's check: only the database refuses it
	badType := msg("t", "")
	badType.EventType = "\xff"
	res := flush(
		msg("a", "K1"), msg("b", ""), badKey, msg("c", "K2"),
		msg("d", "K1"), msg("e", ""), badType, msg("f", ""),
	)
	for _, i := range []int{2, 6} {
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(res[i].err), "message %d: %v", i, res[i].err)
	}
	for _, i := range []int{0, 1, 3, 4, 5, 7} {
		require.NoError(t, res[i].err, "message %d", i)
	}
	require.False(t, res[0].stored.Duplicate)
	require.True(t, res[4].stored.Duplicate, "K1 again: a duplicate of the first, across the split")
	require.Equal(t, res[0].stored.ID, res[4].stored.ID)
	require.False(t, res[3].stored.Duplicate, "K2's first holder was refused: the key is free")
	for _, i := range []int{0, 1, 3, 5, 7} {
		_, err := dbtest.MessageGetByID(context.Background(), store, res[i].stored.ID)
		require.NoError(t, err, "message %d is stored", i)
	}
	st, err := store.StatsGet(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(5), st.MessagesToday, "nothing of the refused messages")

	mu.Lock()
	statements = 0
	mu.Unlock()
	res = flush(msg("g", ""), msg("h", "K3"), msg("i", ""))
	for i, r := range res {
		require.NoError(t, r.err, "message %d", i)
	}
	mu.Lock()
	require.Equal(t, 1, statements, "a stored batch takes one statement")
	mu.Unlock()
}

// batcherProbe runs a batcher whose batch timer the test fires by hand and
// whose batches it sees close, storing nothing.
type batcherProbe struct {
	b      *Batcher
	waits  chan time.Duration // the wait each batch asked for
	expire chan time.Time     // fires the open batch's timer
	closed chan int           // messages of each batch closed
}

func newBatcherProbe(t *testing.T, cfg BatcherConfig) *batcherProbe {
	p := &batcherProbe{waits: make(chan time.Duration, 16), expire: make(chan time.Time), closed: make(chan int, 16)}
	insert := func(_ context.Context, msgs []db.NewMessage) ([]db.StoredMessage, error) {
		out := make([]db.StoredMessage, len(msgs))
		for i := range out {
			out[i] = db.StoredMessage{ID: int64(i + 1), Deliveries: len(msgs[i].EndpointIDs)}
		}
		return out, nil
	}
	p.b = NewBatcher(cfg, insert, nil)
	p.b.test.after = func(d time.Duration) <-chan time.Time {
		p.waits <- d
		return p.expire
	}
	p.b.test.closed = func(msgs, _ int) { p.closed <- msgs }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.b.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return p
}

// submit submits a message of rows rows (one message, rows-1 deliveries)
// and returns a channel that receives its error.
func (p *batcherProbe) submit(rows int) <-chan error {
	m := testMsg(1, fmt.Sprintf("k%d", rows), time.Now())
	m.EndpointIDs = make([]int64, rows-1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.b.Submit(context.Background(), m)
		errc <- err
	}()
	return errc
}

// Under a latency budget a batch stays open for the group commit's share
// (a quarter of the budget) unless it fills up first (batchFillRows): at a
// low rate the commit waits for the budget, at a high rate for enough rows,
// never for the timer. Without a budget the batch waits MaxWait, as
// configured, and closes at MaxRows.
func TestBatcherLatencyBudget(t *testing.T) {
	t.Parallel()
	t.Run("waits for the share or for enough rows", func(t *testing.T) {
		t.Parallel()
		p := newBatcherProbe(t, BatcherConfig{LatencyBudget: 40 * time.Millisecond, Flushers: 1})
		// Half the fill rows: the batch opens for the share and waits.
		first := p.submit(batchFillRows / 2)
		require.Equal(t, 10*time.Millisecond, <-p.waits)
		// The other half closes it with both messages; the timer never
		// fired, so the batch was still open when the second came.
		second := p.submit(batchFillRows / 2)
		require.Equal(t, 2, <-p.closed)
		require.NoError(t, <-first)
		require.NoError(t, <-second)

		// A lone small message waits until its share has passed.
		third := p.submit(2)
		require.Equal(t, 10*time.Millisecond, <-p.waits)
		p.expire <- time.Now()
		require.Equal(t, 1, <-p.closed)
		require.NoError(t, <-third)
	})
	t.Run("no budget: MaxWait and MaxRows", func(t *testing.T) {
		t.Parallel()
		p := newBatcherProbe(t, BatcherConfig{MaxRows: 3 * batchFillRows, Flushers: 1})
		first := p.submit(batchFillRows)
		require.Equal(t, DefaultBatchMaxWait, <-p.waits)
		// Past batchFillRows the batch stays open: only MaxRows closes it.
		second := p.submit(batchFillRows)
		third := p.submit(batchFillRows)
		require.Equal(t, 3, <-p.closed)
		for _, c := range []<-chan error{first, second, third} {
			require.NoError(t, <-c)
		}
	})
}
