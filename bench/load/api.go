package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Admin is a client of the service's admin API (docs/api.md), for setting up a
// benchmark.
type Admin struct {
	BaseURL string // http://host:port
	Token   string // admin token
	Client  *http.Client
}

// Carrier is a registered carrier.
type Carrier struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	APIKey string `json:"api_key"`
}

// Merchant is a registered merchant.
type Merchant struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	APIKey string `json:"api_key"`
}

// Endpoint is a registered endpoint with its signing secret.
type Endpoint struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// CreateCarrier registers a carrier whose ordering key is tracking_no, event
// type status and merchant merchant_id.
func (a *Admin) CreateCarrier(ctx context.Context, name string) (Carrier, error) {
	var c Carrier
	err := a.post(ctx, "/v1/carriers", map[string]any{
		"name": name, "ordering_key_field": "tracking_no", "event_type_field": "status", "merchant_field": "merchant_id",
	}, &c)
	return c, err
}

// CreateMerchant registers a merchant.
func (a *Admin) CreateMerchant(ctx context.Context, name string) (Merchant, error) {
	var m Merchant
	err := a.post(ctx, "/v1/merchants", map[string]any{"name": name}, &m)
	return m, err
}

// CreateEndpoint registers an endpoint of merchantID at url for every
// carrier and event type, with retrySchedule (nil = service default) and
// maxInFlight (0 = service default).
func (a *Admin) CreateEndpoint(ctx context.Context, merchantID, url string, retrySchedule []string, maxInFlight int) (Endpoint, error) {
	body := map[string]any{"merchant_id": merchantID, "url": url, "description": "hookrelay bench sink"}
	if retrySchedule != nil {
		body["retry_schedule"] = retrySchedule
	}
	if maxInFlight > 0 {
		body["max_in_flight"] = maxInFlight
	}
	var e Endpoint
	err := a.post(ctx, "/v1/endpoints", body, &e)
	return e, err
}

// SetEndpointOrdering changes the ordering ("key" or "none") of endpoint id.
func (a *Admin) SetEndpointOrdering(ctx context.Context, id, ordering string) error {
	var e Endpoint
	return a.send(ctx, http.MethodPatch, "/v1/endpoints/"+id, map[string]any{"ordering": ordering}, &e)
}

// DeleteEndpoint deletes an endpoint with its pending deliveries.
func (a *Admin) DeleteEndpoint(ctx context.Context, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, strings.TrimRight(a.BaseURL, "/")+"/v1/endpoints/"+id, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("DELETE endpoint %s: %w", id, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE endpoint %s: status %d", id, resp.StatusCode)
	}
	return nil
}

func (a *Admin) post(ctx context.Context, path string, body, out any) error {
	return a.send(ctx, http.MethodPost, path, body, out)
}

func (a *Admin) send(ctx context.Context, method, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.BaseURL, "/")+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// CreatePollEndpoint registers a poll endpoint ("type": "poll", no URL) of
// merchantID for every carrier and event type.
func (a *Admin) CreatePollEndpoint(ctx context.Context, merchantID string) (Endpoint, error) {
	var e Endpoint
	err := a.post(ctx, "/v1/endpoints", map[string]any{"merchant_id": merchantID, "type": "poll",
		"description": "hookrelay bench poll endpoint"}, &e)
	return e, err
}

// CreateSignedCarrier registers a carrier like CreateCarrier whose
// callbacks must carry X-Signature: sha256=<hex HMAC-SHA256 of the body>
// keyed with secret (16 bytes or more).
func (a *Admin) CreateSignedCarrier(ctx context.Context, name, secret string) (Carrier, error) {
	var c Carrier
	err := a.post(ctx, "/v1/carriers", map[string]any{
		"name": name, "ordering_key_field": "tracking_no", "event_type_field": "status", "merchant_field": "merchant_id",
		"signing_secret": secret,
	}, &c)
	return c, err
}
