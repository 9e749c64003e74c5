package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// A value the database refuses fails the statement as hookrelay.EINVALID
// (the batcher then stores the others without it); a missing partition is
// not a row's own fault and keeps its error.
func TestMessageInsertManyDataErrorIsInvalid(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	poison := map[string]func(*db.NewMessage){
		"NUL ordering key":          func(m *db.NewMessage) { m.OrderingKey = "A\x00B" },
		"invalid UTF-8 event type":  func(m *db.NewMessage) { m.EventType = "\xff\xfe" },
		"NUL merchant reference":    func(m *db.NewMessage) { m.MerchantRef = "\x00" },
		"invalid UTF-8 idempotency": func(m *db.NewMessage) { m.IdempotencyKey = "k\xc3" },
	}
	for name, spoil := range poison {
		bad := newMsg(c.ID, "bad", "")
		spoil(&bad)
		_, err := store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "ok1", ""), bad, newMsg(c.ID, "ok2", "")})
		require.Error(t, err, name)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err), "%s: %v", name, err)
		require.Contains(t, hookrelay.ErrorMessage(err), "SQLSTATE 22", name)
	}
	st, err := store.StatsGet(ctx)
	require.NoError(t, err)
	require.Zero(t, st.MessagesToday, "a refused statement stores nothing")

	old := newMsg(c.ID, "old", "")
	old.ReceivedAt = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) // no partition
	_, err = store.MessageInsertMany(ctx, []db.NewMessage{old})
	require.Error(t, err)
	require.NotEqual(t, hookrelay.EINVALID, hookrelay.CodeOf(err), "%v", err)
}
