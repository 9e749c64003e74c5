package hookrelay

import "slices"

// Operational webhook event types: what the platform tells an operator's ops
// endpoints (docs/api.md, "Operational webhooks", documents each one's data).
const (
	OpsEndpointDisabled      = "endpoint.disabled"
	OpsEndpointEnabled       = "endpoint.enabled"
	OpsEndpointCircuitOpened = "endpoint.circuit_opened"
	OpsEndpointCircuitClosed = "endpoint.circuit_closed"
	OpsDeliveryDeadLettered  = "delivery.dead_lettered"
	OpsDatabaseLongXact      = "database.long_transaction"
	OpsReplayFinished        = "replay.finished"
)

// OpsEventTypes lists every operational webhook event type.
var OpsEventTypes = []string{
	OpsEndpointDisabled, OpsEndpointEnabled, OpsEndpointCircuitOpened, OpsEndpointCircuitClosed,
	OpsDeliveryDeadLettered, OpsDatabaseLongXact, OpsReplayFinished,
}

// IsOpsEventType reports whether t is an operational webhook event type.
func IsOpsEventType(t string) bool { return slices.Contains(OpsEventTypes, t) }
