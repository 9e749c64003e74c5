package api

import "github.com/prometheus/client_golang/prometheus"

// metrics are the callback handler's Prometheus collectors (the intake
// pipeline's parts register their own: package ingest).
type metrics struct {
	requests      *prometheus.CounterVec
	callbacks     prometheus.Counter
	offloaded     prometheus.Counter
	announcements prometheus.Counter
	pullWakeups   prometheus.Counter
	pullWaiting   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_ingest_requests_total", Help: "Callback requests answered, by HTTP status code.",
		}, []string{"code"}),
		callbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_ingest_callbacks_total", Help: "Callbacks stored (duplicates not counted).",
		}),
		offloaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_ingest_offloaded_total", Help: "Callback payloads written to the S3 store.",
		}),
		// The announcer's (ingest.Announcer), registered whether or not
		// this process announces.
		announcements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_ingest_announcements_total", Help: "Announcements of stored callbacks sent to dispatchers (NOTIFY hookrelay_due; HOOKRELAY_NOTIFY).",
		}),
		pullWakeups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_pull_wakeups_total", Help: "Times a pull waiting for events (GET /v1/endpoints/{id}/events?wait=) was woken to look again.",
		}),
		pullWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookrelay_pull_waiting", Help: "Pulls waiting for events now (GET /v1/endpoints/{id}/events?wait=).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.callbacks, m.offloaded, m.announcements, m.pullWakeups, m.pullWaiting)
	}
	return m
}
