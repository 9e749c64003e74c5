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

// Ping sends a signed {"type":"ping",...} with a fresh webhook id to
// an endpoint (enabled or not) through the delivery client, and returns what
// came of it. Nothing is recorded and the endpoint's health is unchanged.
func (d *Dispatcher) Ping(ctx context.Context, endpointID int64) (hookrelay.PingResult, error) {
	eps, err := d.db.EndpointConfigLoad(ctx, []int64{endpointID})
	if err != nil {
		return hookrelay.PingResult{}, err
	}
	if len(eps) == 0 || eps[0].Status == "deleted" {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "endpoint not found")
	}
	ep := eps[0]
	if ep.Unreadable != "" {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.ECONFLICT, "the endpoint's %s; replace them first (new headers or credentials, or rotate its secret)", ep.Unreadable)
	}
	var rnd [10]byte
	_, _ = rand.Read(rnd[:])
	id := "msg_ping_" + hex.EncodeToString(rnd[:])
	at := d.cfg.Now()
	body, err := json.Marshal(map[string]string{
		"type": "ping", "id": id, "endpoint_id": strconv.FormatInt(endpointID, 10),
		"timestamp": at.UTC().Format(time.RFC3339),
	})
	if err != nil {
		return hookrelay.PingResult{}, err
	}
	h := d.headers(id, at, body, ep)
	h.Set("X-Hookrelay-Event-Type", "ping")
	h.Set("X-Hookrelay-Attempt", "1")
	resp := d.sender.Send(ctx, request{URL: ep.URL, Body: body, Header: h, Timeout: timeoutOf(ep)})
	return hookrelay.PingResult{
		WebhookID: id, Outcome: resp.Outcome, Success: resp.Outcome == OutcomeSuccess, StatusCode: resp.Status, Latency: resp.Latency,
		Error: resp.Err, ResponseExcerpt: resp.Excerpt, AttemptedAt: at,
	}, nil
}
