package eventtype_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/eventtype"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// trackingSchema is the schema of tracking.updated that the docs ship.
func trackingSchema(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../docs/examples/tracking.updated.schema.json")
	require.NoError(t, err)
	return b
}

// trackingEvent is a tracking.updated event of ~600 bytes.
func trackingEvent(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/tracking.updated.json")
	require.NoError(t, err)
	return b
}

// setup returns a database with tracking.updated (version 1) in its
// catalog.
func setup(t testing.TB) *db.DB {
	t.Helper()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{})
	_, err := store.EventTypeCreate(t.Context(), db.EventTypeCreateParams{
		Name: "tracking.updated", Schema: trackingSchema(t), Examples: json.RawMessage("[" + string(trackingEvent(t)) + "]"),
	})
	require.NoError(t, err)
	return store
}

func TestValidate(t *testing.T) {
	t.Parallel()
	store := setup(t)
	ctx := t.Context()
	c := eventtype.NewCatalog(store, eventtype.Config{})
	ok := trackingEvent(t)

	v, err := c.Validate(ctx, "tracking.updated", ok)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	for _, tc := range []struct {
		name, typ, data string
		want            []string
	}{
		{"enum", "tracking.updated", strings.Replace(string(ok), `"out_for_delivery"`, `"lost_in_space"`, 1), []string{"/status", "enum", "version 1"}},
		{"format", "tracking.updated", strings.Replace(string(ok), `"2026-12-04T09:41:27+08:00"`, `"04/12/2026 09:41"`, 1), []string{"/occurred_at", "format", "date-time"}},
		{"nested pattern", "tracking.updated", strings.Replace(string(ok), `"CN"`, `"cn"`, 1), []string{"/location/country", "pattern"}},
		{"required", "tracking.updated", `{"carrier": "sf", "status": "delivered", "occurred_at": "2026-12-04T09:41:27Z"}`, []string{"at /", "required", "tracking_number"}},
		{"extra field", "tracking.updated", strings.Replace(string(ok), `"carrier": "sf"`, `"carrier": "sf", "weight": 3`, 1), []string{"additionalProperties", "weight"}},
		{"not JSON", "tracking.updated", `{"tracking_number": `, []string{"not valid JSON"}},
		{"unknown type", "parcel.teleported", string(ok), []string{`unknown event type "parcel.teleported"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Validate(ctx, tc.typ, []byte(tc.data))
			require.Error(t, err)
			require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
			msg := hookrelay.ErrorMessage(err)
			t.Log(msg)
			require.LessOrEqual(t, len(msg), eventtype.MaxErrorLength, msg)
			require.NotContains(t, msg, "\n")
			for _, w := range tc.want {
				require.Contains(t, msg, w)
			}
		})
	}

	// A deprecated type still validates (and says so through Lookup).
	_, err = store.EventTypeUpdate(ctx, "tracking.updated", func(cur db.EventType) (db.EventTypeChange, error) {
		now := time.Now()
		return db.EventTypeChange{Description: cur.Description, DeprecatedAt: &now, DeprecationNote: "use tracking.changed"}, nil
	})
	require.NoError(t, err)
	require.NoError(t, c.Refresh(ctx))
	v, err = c.Validate(ctx, "tracking.updated", ok)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	info, found, err := c.Lookup(ctx, "tracking.updated")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, eventtype.Info{Version: 1, Deprecated: true}, info)
}

// A Catalog of another process follows a change through the configuration
// announcement alone (its TTL is too long to matter).
func TestCatalogFollowsAnnouncedChange(t *testing.T) {
	t.Parallel()
	store := setup(t)
	c := eventtype.NewCatalog(store, eventtype.Config{TTL: time.Hour})
	testenv.Go(t, "the catalog's watch", func(ctx context.Context) error { c.Watch(ctx); return nil })
	ok := trackingEvent(t)
	v, err := c.Validate(t.Context(), "tracking.updated", ok)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	// Version 2 requires a field the event lacks.
	var schema map[string]any
	require.NoError(t, json.Unmarshal(trackingSchema(t), &schema))
	schema["required"] = append(schema["required"].([]any), "status_code")
	schema["properties"].(map[string]any)["status_code"] = map[string]any{"type": "integer"}
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	_, err = store.EventTypeUpdate(t.Context(), "tracking.updated", func(cur db.EventType) (db.EventTypeChange, error) {
		return db.EventTypeChange{Description: cur.Description, NewVersion: true, Schema: raw, Examples: json.RawMessage("[]")}, nil
	})
	require.NoError(t, err)
	testenv.Eventually(t, 10*time.Second, "the catalog at version 2", func() bool {
		v, err := c.Validate(t.Context(), "tracking.updated", ok)
		return v == 2 && err != nil && strings.Contains(hookrelay.ErrorMessage(err), "status_code")
	})
}

func TestCompile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"not an object", `[1]`, "must be a JSON object"},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"bad keyword value", `{"type": 12}`, "does not compile"},
		{"bad pattern", `{"type": "string", "pattern": "("}`, "does not compile"},
		{"remote ref", `{"$ref": "https://example.com/schemas/parcel.json"}`, "self-contained"},
		{"too large", `{"description": "` + strings.Repeat("x", eventtype.MaxSchemaBytes) + `"}`, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eventtype.Compile([]byte(tc.schema))
			require.Error(t, err)
			require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
			t.Log(hookrelay.ErrorMessage(err))
			require.Contains(t, hookrelay.ErrorMessage(err), tc.want)
		})
	}
	// Local references and draft-07 schemas compile.
	_, err := eventtype.Compile([]byte(`{"$defs": {"n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}}}`))
	require.NoError(t, err)
	_, err = eventtype.Compile([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "integer"}}}`))
	require.NoError(t, err)
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"tracking.updated", "order", "parcel.status-changed", "a.b_c.d9"} {
		require.NoError(t, eventtype.CheckName(ok), ok)
	}
	for _, bad := range []string{"", "Tracking.updated", "tracking..updated", ".tracking", "tracking.", "1tracking", "tracking updated", strings.Repeat("a", 129)} {
		require.Error(t, eventtype.CheckName(bad), bad)
	}
}

// BenchmarkValidate validates a ~600-byte tracking.updated event against
// the schema of docs/examples.
func BenchmarkValidate(b *testing.B) {
	store := setup(b)
	c := eventtype.NewCatalog(store, eventtype.Config{TTL: time.Hour})
	ctx := context.Background()
	data := trackingEvent(b)
	if _, err := c.Validate(ctx, "tracking.updated", data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Validate(ctx, "tracking.updated", data); err != nil {
			b.Fatal(err)
		}
	}
}

// Without announcements (no LISTEN, as behind PgBouncer), Run finds a
// change by the configuration version within its TTL.
func TestCatalogFollowsChangeByTTL(t *testing.T) {
	t.Parallel()
	store := setup(t)
	c := eventtype.NewCatalog(store, eventtype.Config{TTL: 50 * time.Millisecond})
	testenv.Go(t, "the catalog's refresher", func(ctx context.Context) error { c.Run(ctx); return nil })
	_, found, err := c.Lookup(t.Context(), "tracking.updated")
	require.NoError(t, err)
	require.True(t, found)
	_, err = store.EventTypeCreate(t.Context(), db.EventTypeCreateParams{
		Name: "parcel.returned", Schema: json.RawMessage(`{"type": "object", "required": ["tracking_number"]}`), Examples: json.RawMessage(`[]`),
	})
	require.NoError(t, err)
	testenv.Eventually(t, 10*time.Second, "the new type in the catalog", func() bool {
		v, err := c.Validate(t.Context(), "parcel.returned", []byte(`{"tracking_number": "YT1"}`))
		return err == nil && v == 1
	})
}
