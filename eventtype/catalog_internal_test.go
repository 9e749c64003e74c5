package eventtype

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestCatalogCheckPeriod: Run checks the configuration version every TTL
// without a LISTEN session, every db.ListenedRefresh while one follows the
// announcements, and every TTL again after a failed load or once the
// session is lost.
func TestCatalogCheckPeriod(t *testing.T) {
	t.Parallel()
	c := NewCatalog(nil, Config{TTL: time.Second})
	require.Equal(t, time.Second, c.every())
	c.SetListening(true)
	require.Equal(t, db.ListenedRefresh, c.every())
	c.failed.Store(true)
	require.Equal(t, time.Second, c.every(), "after a failed load")
	c.failed.Store(false)
	c.SetListening(false)
	require.Equal(t, time.Second, c.every(), "session lost")
}
