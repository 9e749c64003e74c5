package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/eventtype"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// trackingSchema is the tracking.updated schema of docs/examples, decoded.
func trackingSchema(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../docs/examples/tracking.updated.schema.json")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

func trackingExample() map[string]any {
	return map[string]any{
		"tracking_number": "SF1428730215364", "carrier": "sf", "status": "in_transit",
		"status_text": "快件已到达【深圳转运中心】", "occurred_at": "2026-12-04T09:41:27+08:00",
		"location": map[string]any{"city": "Shenzhen", "country": "CN"},
	}
}

func TestEventTypeLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	schema := trackingSchema(t)

	created := b.mustCreate(t, "/v1/event-types", adminToken, map[string]any{
		"name": "tracking.updated", "description": "A parcel's tracking status changed.",
		"schema": schema, "examples": []any{trackingExample()},
	})
	require.Equal(t, "tracking.updated", created["name"])
	require.EqualValues(t, 1, created["version"])
	require.EqualValues(t, 1, created["current_version"])
	require.Equal(t, false, created["deprecated"])
	require.Len(t, created["examples"], 1)
	require.Equal(t, schema["$id"], created["schema"].(map[string]any)["$id"])

	// Refusals: each a 400 (409 for a name taken) whose message says why.
	badExample := trackingExample()
	badExample["status"] = "teleported"
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"invalid schema", map[string]any{"name": "parcel.weighed", "schema": map[string]any{"type": 12}}, 400, "schema does not compile"},
		{"remote ref", map[string]any{"name": "parcel.weighed", "schema": map[string]any{"$ref": "https://example.com/parcel.json"}}, 400, "self-contained"},
		{"no schema", map[string]any{"name": "parcel.weighed"}, 400, "schema"},
		{"example not matching", map[string]any{"name": "parcel.weighed", "schema": schema, "examples": []any{trackingExample(), badExample}}, 400, "examples[1]"},
		{"bad name", map[string]any{"name": "Parcel Weighed", "schema": schema}, 400, "name"},
		{"name taken", map[string]any{"name": "tracking.updated", "schema": schema}, 409, "exists"},
	} {
		st, out := b.call(t, http.MethodPost, "/v1/event-types", adminToken, tc.body)
		require.Equal(t, tc.status, st, "%s: %v", tc.name, out)
		require.Contains(t, errMessage(out), tc.want, tc.name)
	}
	st, out := b.call(t, http.MethodPost, "/v1/event-types", adminToken, map[string]any{
		"name": "parcel.weighed", "schema": schema, "examples": []any{badExample},
	})
	require.Equal(t, http.StatusBadRequest, st)
	require.Contains(t, errMessage(out), "/status", "the example's failing path is named")

	// Merchants read the catalog; they do not write it.
	st, out = b.call(t, http.MethodGet, "/v1/event-types", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Len(t, out["items"], 1)
	item := out["items"].([]any)[0].(map[string]any)
	require.Equal(t, "tracking.updated", item["name"])
	require.Len(t, item["examples"], 1)
	st, out = b.call(t, http.MethodGet, "/v1/event-types/tracking.updated", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Len(t, out["versions"], 1)
	st, out = b.call(t, http.MethodPost, "/v1/event-types", w.M1Key, map[string]any{"name": "parcel.weighed", "schema": schema})
	require.Equal(t, http.StatusForbidden, st)
	require.Equal(t, "forbidden", errCode(out))
	st, _ = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", w.M1Key, map[string]any{"deprecated": true})
	require.Equal(t, http.StatusForbidden, st)
	st, _ = b.call(t, http.MethodGet, "/v1/event-types", w.CarrierKey, nil)
	require.Equal(t, http.StatusForbidden, st)

	// A new schema makes version 2; version 1 stays readable.
	v2 := trackingSchema(t)
	v2["properties"].(map[string]any)["eta"] = map[string]any{"type": "string", "format": "date-time"}
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"schema": v2})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.EqualValues(t, 2, out["version"])
	require.EqualValues(t, 2, out["current_version"])
	require.Len(t, out["examples"], 1, "the examples carry over")
	require.Len(t, out["versions"], 2)
	require.Contains(t, out["schema"].(map[string]any)["properties"], "eta")
	st, out = b.call(t, http.MethodGet, "/v1/event-types/tracking.updated?version=1", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.EqualValues(t, 1, out["version"])
	require.EqualValues(t, 2, out["current_version"])
	require.NotContains(t, out["schema"].(map[string]any)["properties"], "eta")
	st, _ = b.call(t, http.MethodGet, "/v1/event-types/tracking.updated?version=3", w.M1Key, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, _ = b.call(t, http.MethodGet, "/v1/event-types/parcel.teleported", w.M1Key, nil)
	require.Equal(t, http.StatusNotFound, st)

	// The same schema again, or a description, makes no version; examples
	// that do not match the current schema are refused.
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"schema": v2, "description": "Tracking moved."})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.EqualValues(t, 2, out["version"])
	require.Equal(t, "Tracking moved.", out["description"])
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"examples": []any{badExample}})
	require.Equal(t, http.StatusBadRequest, st)
	require.Contains(t, errMessage(out), "examples[0]")
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"examples": []any{trackingExample(), trackingExample()}})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.EqualValues(t, 3, out["version"], "new examples make a version")

	// Deprecation: marked, with its note; its events still validate.
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{
		"deprecated": true, "deprecation_note": "Use tracking.changed.",
	})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, true, out["deprecated"])
	require.NotNil(t, out["deprecated_at"])
	require.Equal(t, "Use tracking.changed.", out["deprecation_note"])
	data, err := json.Marshal(trackingExample())
	require.NoError(t, err)
	v, err := b.Server.EventTypes().Validate(t.Context(), "tracking.updated", data)
	require.NoError(t, err)
	require.Equal(t, 3, v)
	st, out = b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"deprecated": false})
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, false, out["deprecated"])
	require.Equal(t, "", out["deprecation_note"])
}

// A catalog of another process (a TTL too long to matter) follows a
// change made through the API, by the configuration announcement.
func TestEventTypeCatalogFollowsAPIChange(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	b.mustCreate(t, "/v1/event-types", adminToken, map[string]any{"name": "tracking.updated", "schema": trackingSchema(t)})
	other := eventtype.NewCatalog(b.DB, eventtype.Config{TTL: time.Hour})
	testenv.Go(t, "the other catalog's watch", func(ctx context.Context) error { other.Watch(ctx); return nil })
	data, err := json.Marshal(trackingExample())
	require.NoError(t, err)
	v, err := other.Validate(t.Context(), "tracking.updated", data)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	v2 := trackingSchema(t)
	v2["required"] = append(v2["required"].([]any), "eta")
	v2["properties"].(map[string]any)["eta"] = map[string]any{"type": "string", "format": "date-time"}
	st, out := b.call(t, http.MethodPatch, "/v1/event-types/tracking.updated", adminToken, map[string]any{"schema": v2})
	require.Equal(t, http.StatusOK, st, "%v", out)

	var last error
	testenv.Eventually(t, 10*time.Second, "the other catalog at version 2", func() bool {
		v, last = other.Validate(t.Context(), "tracking.updated", data)
		return v == 2
	})
	require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(last))
	require.True(t, strings.Contains(hookrelay.ErrorMessage(last), "eta"), hookrelay.ErrorMessage(last))
}
