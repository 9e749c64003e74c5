package db_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// Versions of a carrier's adapter are numbered 1, 2, ... per carrier, also
// when they are created concurrently; activating a version the carrier does
// not have is not found, and 0 turns adapters off.
func TestCarrierAdapterVersions(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	other, _ := dbtest.Carrier(t, store, nil)

	const n = 8
	var wg sync.WaitGroup
	versions := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := store.CarrierAdapterCreate(ctx, c.ID, fmt.Sprintf("function transform(cb) { return null } // %d", i), "")
			if err != nil {
				t.Error(err)
				return
			}
			versions[i] = a.Version
		}()
	}
	wg.Wait()
	slices.Sort(versions)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, versions)
	a, err := store.CarrierAdapterCreate(ctx, other.ID, "function transform(cb) { return null }", "other")
	require.NoError(t, err)
	require.Equal(t, 1, a.Version, "versions count per carrier")

	list, err := store.CarrierAdapterList(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, list, n)
	require.Equal(t, n, list[0].Version, "newest first")
	require.Empty(t, list[0].Source, "lists leave the sources out")
	require.Positive(t, list[0].SourceSize)

	_, err = store.CarrierAdapterActivate(ctx, other.ID, 2)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)
	car, err := store.CarrierAdapterActivate(ctx, c.ID, 3)
	require.NoError(t, err)
	require.Equal(t, 3, car.AdapterVersion)
	active, err := store.CarrierAdapterActiveAll(ctx)
	require.NoError(t, err)
	require.Len(t, active, 1)
	require.Equal(t, 3, active[0].Version)
	require.Contains(t, active[0].Source, "// ")
	car, err = store.CarrierAdapterActivate(ctx, c.ID, 0)
	require.NoError(t, err)
	require.Zero(t, car.AdapterVersion)

	_, err = store.CarrierAdapterCreate(ctx, 999999, "x", "")
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)
}
