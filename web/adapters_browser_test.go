package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
)

// browserAdapter maps a fictional courier's callback to tracking.updated.
const browserAdapter = `const STATUS = {10: "picked_up", 30: "in_transit", 60: "delivered"};
function transform(cb) {
  const b = cb.body;
  return {
    type: "tracking.updated",
    ordering_key: b.waybill.no,
    data: {tracking_number: b.waybill.no, carrier: cb.carrier, status: STATUS[b.scan.code], status_text: b.scan.text, occurred_at: cb.received_at},
  };
}`

// The adapter page in a real browser: write a version in the editor, test
// it on a stored callback, save it, dry-run it over the stored callbacks,
// activate it; a callback then shows its event beside the original on the
// message page.
func TestAdapterPageBrowser(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	var carrier struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiDo(t, http.DefaultClient, http.MethodPost, f.URL+"/v1/carriers", testAdminToken,
		map[string]any{"name": "kestrel", "ordering_key_field": "waybill.no"}, &carrier).StatusCode)
	schema, err := os.ReadFile("../docs/examples/tracking.updated.schema.json")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, apiDo(t, http.DefaultClient, http.MethodPost, f.URL+"/v1/event-types", testAdminToken,
		map[string]any{"name": "tracking.updated", "schema": json.RawMessage(schema)}, nil).StatusCode)
	type sent struct {
		MessageID      string `json:"message_id"`
		AdapterVersion int    `json:"adapter_version"`
	}
	sendOne := func(waybill string, code int) sent {
		t.Helper()
		var out sent
		body := json.RawMessage(fmt.Sprintf(`{"waybill":{"no":%q},"scan":{"code":%d,"text":"派送中"}}`, waybill, code))
		require.Equal(t, http.StatusAccepted, apiDo(t, http.DefaultClient, http.MethodPost, f.URL+"/v1/callbacks", carrier.APIKey, body, &out).StatusCode)
		return out
	}
	send := func(waybill string, code int) string { return sendOne(waybill, code).MessageID }
	first := send("KX1", 10)
	send("KX2", 30)

	b := newBrowser(t)
	login(t, b, f.URL, testAdminToken, "#overview-cards")
	page := f.URL + "/ui/carriers/" + carrier.ID + "/adapters"
	browse(t, b,
		chromedp.Navigate(f.URL+"/ui/carriers/"+carrier.ID),
		chromedp.Click(chromedp.CSS("#carrier-adapters")),
		chromedp.WaitVisible(chromedp.CSS("#adapter-form")),
		chromedp.SetValue(chromedp.CSS("#adapter-source"), browserAdapter),
		chromedp.SetValue(chromedp.CSS("#adapter-sample"), first),
		chromedp.Click(chromedp.CSS("#adapter-test")),
		chromedp.WaitVisible(chromedp.CSS("#adapter-test-result")),
	)
	got := text(t, b, "#adapter-test-result")
	require.Contains(t, got, `"tracking.updated"`)
	require.Contains(t, got, `"picked_up"`)
	screenshot(t, b, "adapter-test")

	browse(t, b,
		chromedp.SetValue(chromedp.CSS("#adapter-note"), "first version"),
		chromedp.Click(chromedp.CSS("#adapter-save")),
		chromedp.WaitVisible(chromedp.CSS(`#adapter-versions tr[data-version="1"]`)),
		chromedp.Click(chromedp.CSS(`button.dry-run[data-version="1"]`)),
		chromedp.WaitVisible(chromedp.CSS("#dry-run-summary")),
	)
	require.Contains(t, text(t, b, "#dry-run-summary"), "2 callbacks: 2 events, 0 dropped, 0 failed")
	screenshot(t, b, "adapter-dry-run")

	browse(t, b,
		chromedp.Click(chromedp.CSS(`button.activate[data-version="1"]`)),
		chromedp.WaitVisible(chromedp.CSS("#active-badge")),
	)
	require.True(t, strings.HasPrefix(value(t, b, chromedp.Location()), page))

	// The dashboard's activation reaches the API's routing snapshot at its
	// next reload (the fixture runs no configuration LISTEN).
	var msg string
	testenv.Eventually(t, waitLimit, "a callback through the adapter", func() bool {
		s := sendOne("KX3", 60)
		msg = s.MessageID
		return s.AdapterVersion == 1
	})
	browse(t, b,
		chromedp.Navigate(f.URL+"/ui/messages/"+msg),
		chromedp.WaitVisible(chromedp.CSS("#event")),
	)
	require.Contains(t, text(t, b, "#event"), `"delivered"`)
	require.Contains(t, text(t, b, "#payload"), `"KX3"`)
	require.Contains(t, text(t, b, "#message-adapter"), "v1")
	screenshot(t, b, "message-event")
}
