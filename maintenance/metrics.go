package maintenance

import "github.com/prometheus/client_golang/prometheus"

// metrics are the role's Prometheus series; every hookrelay_db_* gauge is set
// by the health sampler of the process holding the role.
type metrics struct {
	leader *prometheus.GaugeVec // no labels; a vec so tests read it uniformly

	tableBytes     *prometheus.GaugeVec
	indexBytes     *prometheus.GaugeVec
	liveTuples     *prometheus.GaugeVec
	deadTuples     *prometheus.GaugeVec
	deadRatio      *prometheus.GaugeVec
	lastVacuum     *prometheus.GaugeVec
	lastAutovacuum *prometheus.GaugeVec

	autovacuumOff     prometheus.Gauge
	connections       prometheus.Gauge
	maxConnections    prometheus.Gauge
	idleInTransaction prometheus.Gauge
	oldestXact        prometheus.Gauge
	longTransactions  prometheus.Gauge
	oldestXminAge     prometheus.Gauge
	preparedXacts     prometheus.Gauge
	slotsHoldingXmin  prometheus.Gauge
	slotXminAge       prometheus.Gauge

	partitions         *prometheus.GaugeVec
	partitionBytes     *prometheus.GaugeVec
	oldestPartitionAge *prometheus.GaugeVec

	vacuums        *prometheus.CounterVec
	analyzes       *prometheus.CounterVec
	vacuumSeconds  prometheus.Histogram
	reindexes      *prometheus.CounterVec
	brinRanges     prometheus.Counter
	sampleSeconds  *prometheus.GaugeVec
	sampleFailures *prometheus.CounterVec
	samples        *prometheus.CounterVec

	retentionBlocked    prometheus.Gauge
	retentionDropped    *prometheus.CounterVec
	retentionDiscarded  prometheus.Counter
	retentionObjects    prometheus.Counter
	retentionLastRun    prometheus.Gauge
	retentionFailures   prometheus.Counter
	partitionsCreated   prometheus.Counter
	pendingPayloadPurge prometheus.Gauge

	pullExpired     prometheus.Counter
	pullLag         *prometheus.GaugeVec // endpoint_id; at most maxLagSeries series
	pullPending     *prometheus.GaugeVec // endpoint_id; the same series
	pullLagMax      prometheus.Gauge
	pullPendingAll  prometheus.Gauge
	pullEndpointsAt prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	gv := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		leader: gv("hookrelay_maintenance_leader", "1 while this process holds the maintenance role."),

		tableBytes:     gv("hookrelay_db_table_bytes", "Size of a hot table (heap, TOAST, maps) in bytes.", "table"),
		indexBytes:     gv("hookrelay_db_index_bytes", "Size of a hot table's indexes in bytes.", "table"),
		liveTuples:     gv("hookrelay_db_live_tuples", "Live tuples of a hot table (statistics collector).", "table"),
		deadTuples:     gv("hookrelay_db_dead_tuples", "Dead tuples of a hot table awaiting vacuum.", "table"),
		deadRatio:      gv("hookrelay_db_dead_tuple_ratio", "dead / (live + dead) tuples of a hot table.", "table"),
		lastVacuum:     gv("hookrelay_db_last_vacuum_timestamp_seconds", "Unix time of the last manual VACUUM of a hot table (0: never).", "table"),
		lastAutovacuum: gv("hookrelay_db_last_autovacuum_timestamp_seconds", "Unix time of the last autovacuum of a hot table (0: never).", "table"),

		autovacuumOff:     g("hookrelay_db_autovacuum_off", "1 while the server runs without autovacuum: nothing vacuums TOAST, the catalogs or the open day of the history, nor guards against wraparound."),
		connections:       g("hookrelay_db_connections", "Client sessions in the PostgreSQL cluster."),
		maxConnections:    g("hookrelay_db_max_connections", "The server's max_connections."),
		idleInTransaction: g("hookrelay_db_idle_in_transaction_sessions", "Sessions idle inside an open transaction."),
		oldestXact:        g("hookrelay_db_oldest_xact_seconds", "Age of the oldest open transaction in the cluster."),
		longTransactions:  g("hookrelay_db_long_transactions", "Transactions older than the long-transaction threshold."),
		oldestXminAge:     g("hookrelay_db_oldest_xmin_age", "Age in transactions of the oldest snapshot (backend_xmin) held by a session."),
		preparedXacts:     g("hookrelay_db_prepared_xacts", "Prepared (two-phase) transactions left open."),
		slotsHoldingXmin:  g("hookrelay_db_replication_slots_holding_xmin", "Replication slots holding xmin or catalog_xmin."),
		slotXminAge:       g("hookrelay_db_replication_slot_xmin_age", "Largest xmin/catalog_xmin age of a replication slot, in transactions."),

		partitions:         gv("hookrelay_db_partitions", "Attached day partitions of a history table.", "table"),
		partitionBytes:     gv("hookrelay_db_partition_bytes", "Total size of a history table's partitions in bytes.", "table"),
		oldestPartitionAge: gv("hookrelay_db_oldest_partition_age_seconds", "Age of the start of the oldest day partition of a history table.", "table"),

		vacuums: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_db_vacuums_total",
			Help: "VACUUMs run by the maintenance role: of hot tables, and of the history's closed days (counted under their history table)."}, []string{"table"}),
		analyzes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_db_analyzes_total",
			Help: "ANALYZEs run by the maintenance role: of hot tables that had outgrown their statistics, and of the history's day partitions while they are small (counted under their history table)."}, []string{"table"}),
		vacuumSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookrelay_db_vacuum_seconds",
			Help: "Duration of the maintenance role's VACUUMs.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}),
		reindexes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_db_reindexes_total",
			Help: "Bloated hot-table indexes rebuilt (REINDEX CONCURRENTLY) by the maintenance role."}, []string{"index"}),
		brinRanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_db_brin_ranges_summarized_total",
			Help: "Block ranges of the history partitions' BRIN indexes summarized before stat samples."}),
		sampleSeconds: gv("hookrelay_db_sample_seconds", "Duration of the last health or stat sample's queries.", "sampler"),
		sampleFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_db_sample_failures_total",
			Help: "Failed health, stat, summarize or vacuum checks."}, []string{"sampler"}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_db_samples_total",
			Help: "Health samples taken and published (a stalled count while the maintenance role is held means its sampler is stuck)."}, []string{"sampler"}),

		retentionBlocked: g("hookrelay_retention_blocked_partitions", "Day partitions past retention whose drop is postponed because pending deliveries still reference them."),
		retentionDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookrelay_retention_dropped_partitions_total",
			Help: "Day partitions detached and dropped by retention."}, []string{"table"}),
		retentionDiscarded: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_retention_dead_letters_discarded_total",
			Help: "Dead letters discarded because their message passed retention."}),
		retentionObjects: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_retention_payload_objects_deleted_total",
			Help: "S3 payload objects deleted with their day."}),
		retentionLastRun: g("hookrelay_retention_last_run_timestamp_seconds", "Unix time of the last completed retention pass."),
		retentionFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_retention_failures_total",
			Help: "Retention steps that failed (retried on the next pass)."}),
		partitionsCreated: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_retention_partitions_created_total",
			Help: "Day partitions created ahead."}),
		pendingPayloadPurge: g("hookrelay_retention_pending_payload_days", "Dropped days whose S3 payload prefix is not deleted yet."),
		pullExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookrelay_poll_expired_total",
			Help: "Deliveries of poll endpoints not acknowledged within retention that became dead letters."}),
		pullLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookrelay_poll_endpoint_lag_seconds",
			Help: "Age of the oldest delivery a poll endpoint has not acknowledged (0: none), for the poll endpoints furthest behind (at most 50 series)."}, []string{"endpoint_id"}),
		pullPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookrelay_poll_endpoint_pending",
			Help: "Deliveries a poll endpoint has not acknowledged (counted up to 100,000), for the endpoints of hookrelay_poll_endpoint_lag_seconds."}, []string{"endpoint_id"}),
		pullLagMax:      g("hookrelay_poll_lag_max_seconds", "Age of the oldest delivery not acknowledged by any poll endpoint (0: none)."),
		pullPendingAll:  g("hookrelay_poll_pending", "Deliveries not acknowledged by poll endpoints, all together (each counted up to 100,000)."),
		pullEndpointsAt: g("hookrelay_poll_endpoints", "Poll endpoints (not deleted; counted up to 1,000)."),
	}
	reg.MustRegister(m.pullExpired, m.pullLag, m.pullPending, m.pullLagMax, m.pullPendingAll, m.pullEndpointsAt)
	reg.MustRegister(m.leader, m.tableBytes, m.indexBytes, m.liveTuples, m.deadTuples, m.deadRatio, m.lastVacuum,
		m.lastAutovacuum, m.autovacuumOff, m.connections, m.maxConnections, m.idleInTransaction, m.oldestXact, m.longTransactions,
		m.oldestXminAge, m.preparedXacts, m.slotsHoldingXmin, m.slotXminAge, m.partitions, m.partitionBytes,
		m.oldestPartitionAge, m.vacuums, m.analyzes, m.vacuumSeconds, m.reindexes, m.brinRanges, m.sampleSeconds, m.sampleFailures, m.samples, m.retentionBlocked,
		m.retentionDropped, m.retentionDiscarded, m.retentionObjects, m.retentionLastRun, m.retentionFailures,
		m.partitionsCreated, m.pendingPayloadPurge)
	m.leader.WithLabelValues().Set(0)
	return m
}

// resetHealth clears the health gauges when this process stops holding the
// role, so only the holder exports current values.
func (m *metrics) resetHealth() {
	for _, v := range []*prometheus.GaugeVec{m.tableBytes, m.indexBytes, m.liveTuples, m.deadTuples, m.deadRatio,
		m.lastVacuum, m.lastAutovacuum, m.partitions, m.partitionBytes, m.oldestPartitionAge, m.pullLag, m.pullPending} {
		v.Reset()
	}
	for _, g := range []prometheus.Gauge{m.autovacuumOff, m.connections, m.maxConnections, m.idleInTransaction, m.oldestXact,
		m.longTransactions, m.oldestXminAge, m.preparedXacts, m.slotsHoldingXmin, m.slotXminAge, m.retentionBlocked,
		m.pullLagMax, m.pullPendingAll, m.pullEndpointsAt} {
		g.Set(0)
	}
}
