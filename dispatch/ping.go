package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay"
)

// PingResult is the outcome of a test ping to an endpoint.
type PingResult struct {
	WebhookID       string
	Outcome         string // success, failed, timeout, conn_error, gone, throttled, refused
	StatusCode      int
	Latency         time.Duration
	Error           string
	ResponseExcerpt string
	AttemptedAt     time.Time
}

// PingEndpoint sends a signed {"type":"ping",...} with a fresh webhook id to
// an endpoint (enabled or not) through the delivery client, and returns what
// came of it. Nothing is recorded and the endpoint's health is unchanged.
func (d *Dispatcher) PingEndpoint(ctx context.Context, endpointID int64) (PingResult, error) {
	eps, err := d.db.EndpointsDispatchLoad(ctx, []int64{endpointID})
	if err != nil {
		return PingResult{}, err
	}
	if len(eps) == 0 || eps[0].Status == "deleted" {
		return PingResult{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "endpoint not found")
	}
	ep := eps[0]
	var rnd [10]byte
	_, _ = rand.Read(rnd[:])
	id := "msg_ping_" + hex.EncodeToString(rnd[:])
	at := d.cfg.Now()
	body, err := json.Marshal(map[string]string{
		"type": "ping", "id": id, "endpoint_id": strconv.FormatInt(endpointID, 10),
		"timestamp": at.UTC().Format(time.RFC3339),
	})
	if err != nil {
		return PingResult{}, err
	}
	h := d.headers(id, at, body, ep.Secrets)
	h.Set("X-Hookrelay-Event-Type", "ping")
	h.Set("X-Hookrelay-Attempt", "1")
	resp := d.sender.Send(ctx, request{URL: ep.URL, Body: body, Header: h, Timeout: timeoutOf(ep)})
	return PingResult{
		WebhookID: id, Outcome: resp.Outcome, StatusCode: resp.Status, Latency: resp.Latency,
		Error: resp.Err, ResponseExcerpt: resp.Excerpt, AttemptedAt: at,
	}, nil
}
