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

// A statement PostgreSQL refuses for a text value it cannot take (invalid
// UTF-8, NUL: SQLSTATE 22021) is EINVALID with a client-safe message, not
// an internal error, should a value reach the store unchecked.
func TestRefusedTextIsInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	now := time.Now()
	for _, f := range []db.MessageFilter{
		{OrderingKey: "\xff\xfe", Since: now.Add(-time.Hour), Until: now},
		{EventType: "a\x00b", Since: now.Add(-time.Hour), Until: now},
	} {
		_, err := store.MessageSearch(ctx, f, db.MessagePosition{}, 10)
		require.Error(t, err)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err), "%v", err)
		msg := hookrelay.ErrorMessage(err)
		require.Contains(t, msg, "not valid UTF-8 or contains a NUL")
		require.NotContains(t, msg, "0xff", "the answer does not quote the server's message")
		require.NotContains(t, msg, "0x00")
	}
}
