package hookrelay

import "slices"

// Operational webhook event types: what the platform tells an operator's ops
// endpoints (docs/api.md, "Operational webhooks", documents each one's data).
// An ops endpoint is a registration (/v1/ops-endpoints); an ops event is what
// is sent to it.
const (
	OpsEventEndpointDisabled      = "endpoint.disabled"
	OpsEventEndpointEnabled       = "endpoint.enabled"
	OpsEventEndpointCircuitOpened = "endpoint.circuit_opened"
	OpsEventEndpointCircuitClosed = "endpoint.circuit_closed"
	OpsEventDeliveryDeadLettered  = "delivery.dead_lettered"
	OpsEventDatabaseLongXact      = "database.long_transaction"
	OpsEventReplayFinished        = "replay.finished"
	// OpsEventEndpointSecretUnreadable: a dispatcher cannot open an
	// endpoint's signing secret, a header value or its credentials with
	// the keys it holds; the endpoint's deliveries are parked.
	OpsEventEndpointSecretUnreadable = "endpoint.secret_unreadable"
	// OpsEventEndpointPollLagging: a poll endpoint's oldest unacknowledged
	// delivery got older than the alert threshold (HOOKRELAY_POLL_LAG_ALERT);
	// once per episode, until OpsEventEndpointPollCaughtUp.
	OpsEventEndpointPollLagging = "endpoint.poll_lagging"
	// OpsEventEndpointPollCaughtUp: a poll endpoint reported lagging is
	// back under half the threshold.
	OpsEventEndpointPollCaughtUp = "endpoint.poll_caught_up"
	// OpsEventAuditEntry: an entry appended to the audit log, as GET
	// /v1/audit-log shows it. Sent only to ops endpoints that name it
	// (an endpoint of every event type does not get it).
	OpsEventAuditEntry = "audit.entry"
)

// OpsEventTypes lists every operational webhook event type.
var OpsEventTypes = []string{
	OpsEventEndpointDisabled, OpsEventEndpointEnabled, OpsEventEndpointCircuitOpened, OpsEventEndpointCircuitClosed,
	OpsEventDeliveryDeadLettered, OpsEventDatabaseLongXact, OpsEventReplayFinished, OpsEventEndpointSecretUnreadable,
	OpsEventEndpointPollLagging, OpsEventEndpointPollCaughtUp, OpsEventAuditEntry,
}

// IsOpsEventType reports whether t is an operational webhook event type.
func IsOpsEventType(t string) bool { return slices.Contains(OpsEventTypes, t) }
