package ingest_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/ingest"
)

// benchValidator validates tracking.updated with the schema of
// docs/examples, as an event-type catalog would.
type benchValidator struct{ s *jsonschema.Schema }

func (v benchValidator) Validate(_ context.Context, eventType string, data []byte) (int, error) {
	if eventType != "tracking.updated" {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "unknown event type %q", eventType)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "%v", err)
	}
	if err := v.s.Validate(inst); err != nil {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "%v", err)
	}
	return 1, nil
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRouteAdapter is the CPU ingest spends reading one callback
// (ingest.Route: the routing values, the fan-out) of 1.2 KB with the
// carrier's adapter off, on (the 30-line adapter of adapter/testdata/bench
// and its envelope), and on with the event's schema check; one goroutine,
// so ns/op is CPU per callback. The database is read once, before the
// loop.
func BenchmarkRouteAdapter(b *testing.B) {
	body, err := os.ReadFile("../adapter/testdata/bench/callback.json")
	if err != nil {
		b.Fatal(err)
	}
	source, err := os.ReadFile("../adapter/testdata/bench/adapter.js")
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile("../docs/examples/tracking.updated.schema.json")
	if err != nil {
		b.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("tracking.updated.json", doc); err != nil {
		b.Fatal(err)
	}
	schema, err := c.Compile("tracking.updated.json")
	if err != nil {
		b.Fatal(err)
	}

	ctx := context.Background()
	store := dbtest.New(b)
	m, _ := dbtest.Merchant(b, store, &dbtest.MerchantOpts{Name: "HR-DEMO"})
	off, _ := dbtest.Carrier(b, store, &dbtest.CarrierOpts{Name: "off", OrderingKeyField: "waybill.no", MerchantField: "partner.code"})
	on, _ := dbtest.Carrier(b, store, &dbtest.CarrierOpts{Name: "on", OrderingKeyField: "waybill.no", MerchantField: "partner.code"})
	dbtest.Endpoint(b, store, &dbtest.EndpointOpts{MerchantID: m.ID})
	canon, _ := dbtest.Endpoint(b, store, &dbtest.EndpointOpts{MerchantID: m.ID})
	canonFields := db.EndpointFieldsOf(canon)
	canonFields.Format = db.FormatCanonical
	if _, err := store.EndpointUpdate(ctx, canon.ID, canonFields, ""); err != nil {
		b.Fatal(err)
	}
	a, err := store.CarrierAdapterCreate(ctx, on.ID, string(source), "bench")
	if err != nil {
		b.Fatal(err)
	}
	if on, err = store.CarrierAdapterActivate(ctx, on.ID, a.Version); err != nil {
		b.Fatal(err)
	}

	for _, c := range []struct {
		name      string
		carrier   db.Carrier
		validator ingest.EventValidator
		wantEPs   int
	}{
		{"off", off, nil, 1},
		{"on", on, nil, 2},
		{"on+schema", on, benchValidator{schema}, 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			routes := ingest.NewRoutes(store, time.Hour)
			routes.SetValidator(c.validator)
			snap, err := routes.Refresh(ctx)
			if err != nil {
				b.Fatal(err)
			}
			cb := ingest.Callback{Header: http.Header{}, Body: body, ReceivedAt: time.Now()}
			r, err := ingest.Route(ctx, snap, c.carrier, cb)
			if err != nil {
				b.Fatal(err)
			}
			if len(r.EndpointIDs) != c.wantEPs {
				b.Fatalf("%d endpoints, want %d", len(r.EndpointIDs), c.wantEPs)
			}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := ingest.Route(ctx, snap, c.carrier, cb); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine ns/op is wall time and counts the time
			// other processes ran; this is the process's own CPU (garbage
			// collection included).
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
