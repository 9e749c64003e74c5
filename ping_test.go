package hookrelay

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPingResultJSONAndProblem(t *testing.T) {
	for _, c := range []struct {
		r       PingResult
		json    string
		problem string
	}{
		{PingResult{Outcome: "success", Success: true, StatusCode: 204, Latency: 7 * time.Millisecond, WebhookID: "msg_ping_1"},
			`{"status_code":204,"latency_ms":7,"success":true}`, ""},
		{PingResult{Outcome: "failed", StatusCode: 500, Latency: 3 * time.Millisecond, ResponseExcerpt: "down"},
			`{"status_code":500,"latency_ms":3,"response_excerpt":"down","success":false}`, "HTTP 500"},
		{PingResult{Outcome: "conn_error", Error: "connection refused"},
			`{"status_code":0,"latency_ms":0,"error":"connection refused","success":false}`, "connection refused"},
	} {
		b, err := json.Marshal(c.r)
		if err != nil || string(b) != c.json {
			t.Errorf("json of %+v = %s, %v; want %s", c.r, b, err, c.json)
		}
		if got := c.r.Problem(); got != c.problem {
			t.Errorf("Problem of %+v = %q; want %q", c.r, got, c.problem)
		}
	}
}
