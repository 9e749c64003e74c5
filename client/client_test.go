package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/client"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/ops"
)

const adminToken = "hra_test_admin_token_for_client"

// serve runs the API on a real database and a loopback HTTP server.
func serve(t *testing.T) string {
	t.Helper()
	env := testenv.New(t, testenv.Options{AdminToken: adminToken})
	srv := api.New(env.Logger, api.Config{}, env.DB, env.Payloads, nil, ops.New(env.DB, ops.Config{AllowPrivateTargets: true}))
	e := echo.New()
	httperr.New(env.Logger).Install(e)
	srv.Register(e)
	testenv.Go(t, "the API", srv.Run)
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	return hs.URL
}

func bearer(token string) client.ClientOption {
	return client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// TestGeneratedClientPullFlow drives a running server through the
// generated client only: carrier, merchant, poll endpoint, callback, pull
// (body byte for byte, signature verified) and acknowledgement.
func TestGeneratedClientPullFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := serve(t)
	admin, err := client.NewClientWithResponses(base, bearer(adminToken))
	require.NoError(t, err)

	carrier, err := admin.CarrierCreateWithResponse(ctx, client.CarrierCreate{Name: "sf"})
	require.NoError(t, err)
	require.NotNil(t, carrier.JSON201, "%s", carrier.Body)
	merchant, err := admin.MerchantCreateWithResponse(ctx, client.MerchantCreate{Name: "shop"})
	require.NoError(t, err)
	require.NotNil(t, merchant.JSON201, "%s", merchant.Body)

	m, err := client.NewClientWithResponses(base, bearer(merchant.JSON201.ApiKey))
	require.NoError(t, err)
	ep, err := m.EndpointCreateWithBodyWithResponse(ctx, "application/json", strings.NewReader(`{"type":"poll"}`))
	require.NoError(t, err)
	require.NotNil(t, ep.JSON201, "%s", ep.Body)
	require.EqualValues(t, "poll", ep.JSON201.Type)
	secret := *ep.JSON201.Secret

	c, err := client.NewClientWithResponses(base, bearer(carrier.JSON201.ApiKey))
	require.NoError(t, err)
	payload := "{ \"tracking_no\": \"G1\", \"status\": \"picked_up\" }"
	cb, err := c.CallbackCreateWithBodyWithResponse(ctx, &client.CallbackCreateParams{}, "application/json", strings.NewReader(payload))
	require.NoError(t, err)
	require.NotNil(t, cb.JSON202, "%s", cb.Body)

	limit, wait := 10, "5s"
	page, err := m.EndpointEventsPullWithResponse(ctx, ep.JSON201.Id, &client.EndpointEventsPullParams{Limit: &limit, Wait: &wait})
	require.NoError(t, err)
	require.NotNil(t, page.JSON200, "%s", page.Body)
	require.Len(t, page.JSON200.Items, 1)
	ev := page.JSON200.Items[0]
	require.Equal(t, payload, string(ev.Body))
	require.Equal(t, "G1", ev.OrderingKey)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", ev.Headers["Webhook-Id"], ev.Headers["Webhook-Timestamp"], ev.Body)
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)), ev.Headers["Webhook-Signature"])

	ack, err := m.EndpointEventsAckWithResponse(ctx, ep.JSON201.Id, client.EndpointEventsAckJSONRequestBody{Cursor: page.JSON200.NextCursor})
	require.NoError(t, err)
	require.NotNil(t, ack.JSON200, "%s", ack.Body)
	require.Equal(t, 1, ack.JSON200.Acknowledged)

	// Another merchant's endpoint is not found, as the error schema says.
	other, err := admin.MerchantCreateWithResponse(ctx, client.MerchantCreate{Name: "other"})
	require.NoError(t, err)
	o, err := client.NewClientWithResponses(base, bearer(other.JSON201.ApiKey))
	require.NoError(t, err)
	denied, err := o.EndpointEventsPullWithResponse(ctx, ep.JSON201.Id, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, denied.StatusCode())
	require.NotNil(t, denied.JSONDefault)
	require.Equal(t, "not_found", string(denied.JSONDefault.Error.Code))
}
