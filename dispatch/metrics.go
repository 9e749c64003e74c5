package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"
)

// claimBuckets are the buckets of both claim histograms, so that a claim's
// round trip and its time in PostgreSQL compare bucket by bucket.
var claimBuckets = []float64{.0005, .001, .002, .003, .004, .005, .0075, .01, .015, .02, .03, .05, .1, .25, 1}

// metrics are the dispatcher's Prometheus collectors.
type metrics struct {
	claimSeconds     prometheus.Histogram
	claimWaitSeconds prometheus.Histogram
	claimServer      prometheus.Histogram
	claimed          prometheus.Counter
	wakeups          prometheus.Counter
	notifications    prometheus.Counter
	listening        prometheus.Gauge
	deliveries       *prometheus.CounterVec
	deliveryLatency  prometheus.Histogram
	e2eLatency       prometheus.Histogram
	inFlight         prometheus.Gauge
	queuesHeld       prometheus.Gauge
	ackBatchSize     prometheus.Histogram
	circuitOpen      prometheus.Gauge
	opsEventAttempts *prometheus.CounterVec
	// endpointsUnreadable counts the endpoints whose secrets this
	// dispatcher cannot open (their deliveries parked): set by
	// newUnreadableGauge, which reads the endpoint cache.
	endpointsUnreadable prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		claimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrelay_dispatch_claim_seconds",
			Help:    "Time of one claim statement on its connection (round trip and rows read; up to 50 rows across the held queues), without the wait for a pool connection.",
			Buckets: claimBuckets,
		}),
		claimServer: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hookrelay_dispatch_claim_server_seconds",
			Help: "PostgreSQL's own time for a claim that leased rows (locks, plan and execution, to its last row); " +
				"hookrelay_dispatch_claim_seconds less this is time spent waiting to run and on the network.",
			Buckets: claimBuckets,
		}),
		claimWaitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrelay_dispatch_claim_wait_seconds",
			Help:    "Time a claim waited for a pool connection.",
			Buckets: []float64{.0001, .0005, .001, .002, .005, .01, .02, .05, .1, .25, 1},
		}),
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_dispatch_claimed_total",
			Help: "Deliveries leased by claims.",
		}),
		wakeups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_dispatch_wakeups_total",
			Help: "Idle pauses between claims cut short because rows may be due: an API (of this process or, by NOTIFY, of another) stored callbacks, or queues were gained.",
		}),
		notifications: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_dispatch_notifications_total",
			Help: "Announcements of stored callbacks received from other processes' APIs (PostgreSQL NOTIFY on hookrelay_due).",
		}),
		listening: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookrelay_dispatch_listening",
			Help: "1 while the dispatcher's LISTEN session for other processes' announcements is connected; 0 means it finds their callbacks by polling (within HOOKRELAY_DISPATCH_IDLE_POLL).",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_deliveries_total",
			Help: "Delivery attempts by outcome (success, failed, timeout, conn_error, gone, throttled, refused, dead, held, unreadable: released without an attempt because the endpoint's secrets cannot be decrypted).",
		}, []string{"outcome"}),
		deliveryLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrelay_delivery_latency_seconds",
			Help:    "HTTP time of one delivery attempt.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		e2eLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrelay_e2e_latency_seconds",
			Help:    "From the callback's receipt to its successful delivery.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 22),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookrelay_dispatch_in_flight",
			Help: "Deliveries being sent now.",
		}),
		queuesHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookrelay_queues_held",
			Help: "Logical queues this process holds.",
		}),
		ackBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookrelay_ack_batch_size",
			Help:    "Results acknowledged per ack transaction.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200},
		}),
		circuitOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookrelay_circuit_open",
			Help: "Endpoints whose circuit is open or half-open.",
		}),
		opsEventAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookrelay_ops_webhook_attempts_total",
			Help: "Attempts to deliver operational webhooks by result: delivered, retried (it will be tried again), dropped (out of attempts, given up).",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.claimSeconds, m.claimServer, m.claimWaitSeconds, m.claimed, m.wakeups, m.notifications, m.listening, m.deliveries, m.deliveryLatency, m.e2eLatency,
			m.inFlight, m.queuesHeld, m.ackBatchSize, m.circuitOpen, m.opsEventAttempts)
	}
	return m
}

// newUnreadableGauge sets m.endpointsUnreadable to read count and registers
// it with reg (when not nil).
func (m *metrics) newUnreadableGauge(reg prometheus.Registerer, count func() int) {
	m.endpointsUnreadable = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hookrelay_endpoints_unreadable",
		Help: "Endpoints whose signing secret, a custom header value or credentials this dispatcher cannot decrypt with the keys it holds, of those whose deliveries it saw lately: their deliveries are parked (no attempt spent) until the values are replaced or the key is back.",
	}, func() float64 { return float64(count()) })
	if reg != nil {
		reg.MustRegister(m.endpointsUnreadable)
	}
}
