package dispatch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

func TestMergeOutcomes(t *testing.T) {
	t.Parallel()
	fail2 := db.EndpointOutcome{EndpointID: 7, Failures: 2, Trailing: 2, LastError: "500"}
	ok1 := db.EndpointOutcome{EndpointID: 7, Successes: 1}
	fail1 := db.EndpointOutcome{EndpointID: 7, Failures: 1, Trailing: 1, LastError: "timeout", Gone: true}

	require.Equal(t, fail2, mergeOutcomes(db.EndpointOutcome{}, fail2), "nothing carried")
	// Failures then a success: the streak ends.
	require.Equal(t, db.EndpointOutcome{EndpointID: 7, Successes: 1, Failures: 2, Trailing: 0, LastError: "500"},
		mergeOutcomes(fail2, ok1))
	// A success then failures: only the later failures trail.
	require.Equal(t, db.EndpointOutcome{EndpointID: 7, Successes: 1, Failures: 1, Trailing: 1, LastError: "timeout", Gone: true},
		mergeOutcomes(ok1, fail1))
	// Failures on failures: the streak grows.
	require.Equal(t, db.EndpointOutcome{EndpointID: 7, Failures: 3, Trailing: 3, LastError: "timeout", Gone: true},
		mergeOutcomes(fail2, fail1))
}

func TestTakeCarriedFoldsEarlierOutcomesFirst(t *testing.T) {
	t.Parallel()
	a := &acker{carried: map[int64]db.EndpointOutcome{
		1: {EndpointID: 1, Failures: 4, Trailing: 4},
		2: {EndpointID: 2, Successes: 3},
	}}
	got := a.takeCarried([]db.EndpointOutcome{{EndpointID: 1, Failures: 1, Trailing: 1}})
	require.ElementsMatch(t, []db.EndpointOutcome{
		{EndpointID: 1, Failures: 5, Trailing: 5},
		{EndpointID: 2, Successes: 3},
	}, got)
	require.Empty(t, a.carried)
	require.Len(t, a.takeCarried(nil), 0)
}
