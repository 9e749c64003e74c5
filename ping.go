package hookrelay

import (
	"encoding/json"
	"strconv"
	"time"
)

// PingResult is what came of one test delivery: a signed {"type":"ping"}
// sent to an endpoint exactly as a delivery is, recorded nowhere. The
// dispatcher's sender fills it, the API answers it as JSON and the dashboard
// shows it.
type PingResult struct {
	WebhookID string // the ping's webhook-id, fresh for every ping
	// Outcome is classified as a delivery attempt's would be: success,
	// failed, timeout, conn_error, gone, throttled or refused.
	Outcome string
	// Success is the outcome a delivery counts as delivered: a 2xx answer.
	Success         bool
	StatusCode      int // 0 when no answer came
	Latency         time.Duration
	Error           string // why it failed, when the sender can tell more than the status
	ResponseExcerpt string
	AttemptedAt     time.Time
}

// Problem is what a person is told went wrong: the error, or the status when
// the endpoint answered with one that is not a success; empty on success.
func (r PingResult) Problem() string {
	switch {
	case r.Error != "":
		return r.Error
	case !r.Success:
		return "HTTP " + strconv.Itoa(r.StatusCode)
	}
	return ""
}

// MarshalJSON gives the API's answer to POST /v1/endpoints/{id}/test.
func (r PingResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		StatusCode      int    `json:"status_code"`
		LatencyMS       int64  `json:"latency_ms"`
		Error           string `json:"error,omitempty"`
		ResponseExcerpt string `json:"response_excerpt,omitempty"`
		Success         bool   `json:"success"`
	}{r.StatusCode, r.Latency.Milliseconds(), r.Error, r.ResponseExcerpt, r.Success})
}
