package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/adapter"
)

// examplesDir holds the worked examples of docs/adapters.md: per courier
// its adapter.js, a sample callback (callback.json or callback.form) and
// the event.json the adapter makes of it.
const examplesDir = "../docs/examples/adapters"

// trackingSchema compiles docs/examples/tracking.updated.schema.json
// (JSON Schema 2020-12, formats asserted).
func trackingSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/examples/tracking.updated.schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource("tracking.updated.schema.json", doc))
	sch, err := c.Compile("tracking.updated.schema.json")
	require.NoError(t, err)
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	return sch.Validate(inst)
}

// TestWorkedExamples runs each worked example's adapter on its sample
// callback: the event is the one the docs show, and its data passes the
// tracking.updated schema.
func TestWorkedExamples(t *testing.T) {
	t.Parallel()
	sch := trackingSchema(t)
	dirs, err := filepath.Glob(filepath.Join(examplesDir, "*", "adapter.js"))
	require.NoError(t, err)
	require.Len(t, dirs, 3)
	for _, path := range dirs {
		dir := filepath.Dir(path)
		carrier := filepath.Base(dir)
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			p, err := adapter.Compile(string(src), adapter.Limits{})
			require.NoError(t, err)

			in := adapter.Input{Carrier: carrier, ReceivedAt: time.Date(2026, 12, 4, 8, 16, 0, 0, time.UTC), Headers: http.Header{}}
			if body, err := os.ReadFile(filepath.Join(dir, "callback.json")); err == nil {
				in.Body = body
				in.Headers.Set("Content-Type", "application/json")
			} else {
				in.Body, err = os.ReadFile(filepath.Join(dir, "callback.form"))
				require.NoError(t, err)
				in.Headers.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			ev, drop, err := p.Run(context.Background(), in)
			require.NoError(t, err)
			require.False(t, drop)
			require.NoError(t, validate(t, sch, ev.Data), "%s", ev.Data)

			wantText, err := os.ReadFile(filepath.Join(dir, "event.json"))
			require.NoError(t, err)
			var want struct {
				Type        string          `json:"type"`
				OrderingKey string          `json:"ordering_key"`
				Merchant    string          `json:"merchant"`
				OccurredAt  time.Time       `json:"occurred_at"`
				Data        json.RawMessage `json:"data"`
			}
			require.NoError(t, json.Unmarshal(wantText, &want))
			require.Equal(t, want.Type, ev.Type)
			require.Equal(t, want.OrderingKey, ev.OrderingKey)
			require.Equal(t, want.Merchant, ev.Merchant)
			require.True(t, want.OccurredAt.Equal(ev.OccurredAt), "occurred_at %v, want %v", ev.OccurredAt, want.OccurredAt)
			require.JSONEq(t, string(want.Data), string(ev.Data))
			require.Less(t, len(ev.Data), 1024, "the event stays small (no image)")
		})
	}
}

// TestTrackingSchemaRefuses: the schema the examples are checked with does
// refuse what it should, so TestWorkedExamples checks something.
func TestTrackingSchemaRefuses(t *testing.T) {
	t.Parallel()
	sch := trackingSchema(t)
	const ok = `{"tracking_number":"T1","carrier":"c","status":"delivered","occurred_at":"2026-12-04T08:15:00+08:00"}`
	require.NoError(t, validate(t, sch, []byte(ok)))
	for _, bad := range []string{
		`{"tracking_number":"T1","carrier":"c","status":"lost","occurred_at":"2026-12-04T08:15:00+08:00"}`,
		`{"tracking_number":"T1","carrier":"c","status":"delivered","occurred_at":"2026-12-04 08:15:00"}`,
		`{"tracking_number":"T1","carrier":"c","status":"delivered","occurred_at":"2026-12-04T08:15:00Z","waybill_image":"iVBOR"}`,
		`{"tracking_number":"T1","carrier":"c","status":"delivered","occurred_at":"2026-12-04T08:15:00Z","extra":1}`,
		`{"tracking_number":"T1","carrier":"c","status":"delivered"}`,
	} {
		require.Error(t, validate(t, sch, []byte(bad)), bad)
	}
}
