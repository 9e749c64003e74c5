// Package opsevent builds the data of the operational webhook events that
// package db writes into the outbox in the transactions that cause them, and
// that db/dbtest writes for tests that need an event without its cause; one
// builder, so both write the same event.
package opsevent

import "strconv"

// ReplayFinished is the data of a replay.finished event: the replay, its
// endpoint, its final state and its counts.
func ReplayFinished(replayID, endpointID int64, state string, total, done, failed int64) map[string]any {
	return map[string]any{
		"replay_id": strconv.FormatInt(replayID, 10), "endpoint_id": strconv.FormatInt(endpointID, 10),
		"state": state, "total": total, "done": done, "failed": failed,
	}
}
