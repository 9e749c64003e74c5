package storage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/storage"
)

func TestPayloadKey(t *testing.T) {
	t.Parallel()
	// 23:30 on 31 Dec in New York is already 1 Jan in UTC.
	ny := time.FixedZone("EST", -5*3600)
	received := time.Date(2025, 12, 31, 23, 30, 0, 0, ny)

	require.Equal(t, "payloads/2026/01/01/abc", storage.PayloadKey(received, "abc"))
	require.Equal(t, "payloads/2026/01/01/", storage.DayPrefix(received))
	require.Equal(t, "payloads/2026/03/09/", storage.DayPrefix(time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)))
}
