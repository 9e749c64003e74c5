package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// unitStatus reads endpoint id's status outside any unit (what another
// session sees).
func unitStatus(t *testing.T, store *db.DB, id int64) string {
	t.Helper()
	ep, err := store.EndpointGet(context.Background(), id)
	require.NoError(t, err)
	return ep.Status
}

func auditCount(t *testing.T, store *db.DB) int64 {
	t.Helper()
	h, err := store.AuditHeadGet(context.Background())
	require.NoError(t, err)
	return h.LastID
}

// A unit's statements, those of the store's own transactions among them,
// and the entry queued for its commit become visible together at Commit,
// and not before.
func TestUnitCommitsTogether(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	_, err := store.AuditEnsurePartitions(ctx, time.Now(), 1)
	require.NoError(t, err)

	uctx, u, err := store.BeginUnit(ctx)
	require.NoError(t, err)
	_, err = store.EndpointDisable(uctx, ep.ID, "unit")
	require.NoError(t, err)
	require.NoError(t, store.AuditAppend(uctx, db.AuditEntry{At: time.Now(), ActorKind: "system", Action: "endpoint.disable", Result: "ok"}, db.AuditChain{}))
	got, err := store.EndpointGet(uctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, db.EndpointDisabled, got.Status, "the unit reads its own change")
	require.Equal(t, db.EndpointEnabled, unitStatus(t, store, ep.ID), "nothing is visible before the commit")
	require.Zero(t, auditCount(t, store), "the entry waits for the commit")

	require.NoError(t, u.Commit(ctx))
	require.Equal(t, db.EndpointDisabled, unitStatus(t, store, ep.ID))
	require.EqualValues(t, 1, auditCount(t, store))
	u.Rollback(ctx) // after the commit: nothing
	require.Equal(t, db.EndpointDisabled, unitStatus(t, store, ep.ID))
}

// Rollback undoes the unit's statements and drops what was queued for
// the commit.
func TestUnitRollback(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	uctx, u, err := store.BeginUnit(ctx)
	require.NoError(t, err)
	_, err = store.EndpointDisable(uctx, ep.ID, "unit")
	require.NoError(t, err)
	require.NoError(t, store.AuditAppend(uctx, db.AuditEntry{At: time.Now(), ActorKind: "system", Action: "x", Result: "ok"}, db.AuditChain{}))
	u.Rollback(ctx)
	require.NoError(t, u.Commit(ctx), "a unit rolled back has nothing to commit")
	require.Equal(t, db.EndpointEnabled, unitStatus(t, store, ep.ID))
	require.Zero(t, auditCount(t, store))
}

// A statement that fails inside one of the store's transactions fails the
// whole unit (there is no savepoint): its commit is refused, nothing of it
// is kept, and its connection goes back to the pool usable.
func TestUnitFailedStatementFailsCommit(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{MaxConns: 1})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	other, _ := dbtest.Endpoint(t, store, nil)

	uctx, u, err := store.BeginUnit(ctx)
	require.NoError(t, err)
	_, err = store.EndpointDisable(uctx, ep.ID, "first")
	require.NoError(t, err)
	_, err = store.EndpointDisable(uctx, other.ID, "bad\x00reason")
	require.Error(t, err, "PostgreSQL refuses a NUL in text")
	_, err = store.EndpointGet(uctx, ep.ID)
	require.Error(t, err, "the unit's transaction is aborted")
	require.Error(t, u.Commit(ctx))
	require.Equal(t, db.EndpointEnabled, unitStatus(t, store, ep.ID), "the first change is undone too")
	require.Equal(t, db.EndpointEnabled, unitStatus(t, store, other.ID))
}

// A statement queued for the commit that fails (an entry dated where no
// audit partition exists) fails the commit, and the change goes with it.
func TestUnitQueuedStatementFailsCommit(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{MaxConns: 1})
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	uctx, u, err := store.BeginUnit(ctx)
	require.NoError(t, err)
	_, err = store.EndpointDisable(uctx, ep.ID, "unit")
	require.NoError(t, err)
	require.NoError(t, store.AuditAppend(uctx, db.AuditEntry{At: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
		ActorKind: "system", Action: "x", Result: "ok"}, db.AuditChain{}))
	require.Error(t, u.Commit(ctx))
	require.Equal(t, db.EndpointEnabled, unitStatus(t, store, ep.ID))
	require.Zero(t, auditCount(t, store))
}

// A unit that ran no statement of its own commits what was queued alone.
func TestUnitOnlyQueued(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{})
	ctx := context.Background()
	_, err := store.AuditEnsurePartitions(ctx, time.Now(), 1)
	require.NoError(t, err)
	uctx, u, err := store.BeginUnit(ctx)
	require.NoError(t, err)
	require.NoError(t, store.AuditAppend(uctx, db.AuditEntry{At: time.Now(), ActorKind: "system", Action: "x", Result: "ok"}, db.AuditChain{}))
	require.NoError(t, u.Commit(ctx))
	require.EqualValues(t, 1, auditCount(t, store))
}
