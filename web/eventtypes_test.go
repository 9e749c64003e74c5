package web_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// trackingSchemaText is the tracking.updated schema of docs/examples.
func trackingSchemaText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../docs/examples/tracking.updated.schema.json")
	require.NoError(t, err)
	return string(raw)
}

const trackingExampleText = `[{"tracking_number": "SF7700112233", "carrier": "sf", "status": "delivered",
  "status_text": "已签收，签收人：前台", "occurred_at": "2026-12-04T18:02:00+08:00"}]`

// createTrackingUpdated puts tracking.updated with one example in the
// catalog.
func createTrackingUpdated(t *testing.T, store *db.DB) {
	t.Helper()
	_, err := store.EventTypeCreate(context.Background(), db.EventTypeCreateParams{
		Name: "tracking.updated", Description: "A parcel's tracking status changed.",
		Schema: json.RawMessage(trackingSchemaText(t)), Examples: json.RawMessage(trackingExampleText),
	})
	require.NoError(t, err)
}

// TestWebEventTypes: the operator creates, edits and deprecates event types
// through the dashboard's forms, refusals shown at their fields; a merchant
// reads the catalog on the portal's Events page and cannot reach the
// operator's pages.
func TestWebEventTypes(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	ui := newUIClient(t, f.URL)
	csrf := ui.login(testAdminToken)

	r, page := ui.do("GET", "/ui/event-types", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	require.Contains(t, page, "No event types yet.")
	r, page = ui.do("GET", "/ui/event-types/new", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	require.Contains(t, page, `id="event-type-form"`)

	// Refusals come back with the form, at their field, what was typed
	// kept.
	for _, tc := range []struct {
		name, schema, examples, field, want string
	}{
		{"not JSON", `{"type":`, "[]", "schema-error", "schema is not valid JSON"},
		{"not compiling", `{"type": 12}`, "[]", "schema-error", "schema does not compile"},
		{"example", trackingSchemaText(t), `[{"carrier": "sf"}]`, "examples-error", "examples[0] does not match the schema"},
	} {
		r, page = ui.do("POST", "/ui/event-types", url.Values{"csrf": {csrf}, "name": {"tracking.updated"},
			"schema": {tc.schema}, "examples": {tc.examples}})
		require.Equal(t, http.StatusBadRequest, r.StatusCode, tc.name)
		require.Contains(t, page, `id="`+tc.field+`"`, tc.name)
		require.Contains(t, html.UnescapeString(page), tc.want, tc.name)
		require.Contains(t, page, `value="tracking.updated"`, tc.name)
	}
	r, page = ui.do("POST", "/ui/event-types", url.Values{"csrf": {csrf}, "name": {"Tracking Updated"}, "schema": {`{}`}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, page, `id="name-error"`)

	// Created, then edited: a new schema is version 2.
	r, page = ui.do("POST", "/ui/event-types", url.Values{"csrf": {csrf}, "name": {"tracking.updated"},
		"description": {"A parcel's tracking status changed."}, "schema": {trackingSchemaText(t)}, "examples": {trackingExampleText}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, page)
	require.Equal(t, "/ui/event-types/tracking.updated?done=eventtype-created", r.Header.Get("Location"))
	r, page = ui.do("GET", "/ui/event-types/tracking.updated", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	require.Contains(t, page, "version 1")
	require.Contains(t, page, "SF7700112233")

	v2 := strings.Replace(trackingSchemaText(t), `"waybill_image": {`, `"eta": {"type": "string", "format": "date-time"}, "waybill_image": {`, 1)
	r, page = ui.do("POST", "/ui/event-types/tracking.updated", url.Values{"csrf": {csrf}, "description": {"Tracking moved."},
		"schema": {v2}, "examples": {`[{"status": "nope"}]`}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, page, `id="examples-error"`)
	r, page = ui.do("POST", "/ui/event-types/tracking.updated", url.Values{"csrf": {csrf}, "description": {"Tracking moved."},
		"schema": {v2}, "examples": {trackingExampleText}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, page)
	got, err := f.store.EventTypeGet(context.Background(), "tracking.updated", 0)
	require.NoError(t, err)
	require.Equal(t, 2, got.CurrentVersion)
	require.Equal(t, "Tracking moved.", got.Description)

	// Deprecated from the list, with a note.
	r, page = ui.do("POST", "/ui/event-types/tracking.updated/deprecate", url.Values{"csrf": {csrf}, "deprecation_note": {"Use parcel.moved."}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, page)
	r, page = ui.do("GET", "/ui/event-types", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	require.Contains(t, page, "deprecated")
	require.Contains(t, page, "Use parcel.moved.")

	// The merchant's catalog.
	_, key := dbtest.Merchant(t, f.store, &dbtest.MerchantOpts{Name: "Acme Parcels"})
	mui := newUIClient(t, f.URL)
	mui.login(key)
	r, page = mui.do("GET", "/ui/m/events", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, page)
	require.Contains(t, page, `id="event-tracking.updated"`)
	require.Contains(t, page, "Tracking moved.")
	require.Contains(t, page, "SF7700112233", "the example")
	require.Contains(t, page, "&#34;eta&#34;", "the current schema")
	require.Contains(t, page, "Use parcel.moved.")
	r, _ = mui.do("GET", "/ui/event-types", nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode)
}
