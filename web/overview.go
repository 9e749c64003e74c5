package web

import (
	"html/template"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

type series struct {
	Ingest, Delivered, ErrorRate, P50, P99 []point
}

// chartSeries turns the maintenance role's samples (one every ~10 s, each
// with counts over its window) into per-second rates and gauges.
func chartSeries(samples []db.StatSample) series {
	var s series
	for _, x := range samples {
		at := x.SampledAt
		s.Ingest = append(s.Ingest, point{at, x.Rate(x.Ingested)})
		s.Delivered = append(s.Delivered, point{at, x.Rate(x.Delivered)})
		s.ErrorRate = append(s.ErrorRate, point{at, x.ErrorRate})
		s.P50 = append(s.P50, point{at, x.E2EP50Ms})
		s.P99 = append(s.P99, point{at, x.E2EP99Ms})
	}
	return s
}

// backlogFreshness is how old a sample's backlog may be to be shown instead
// of counting the queue table.
const backlogFreshness = 30 * time.Second

type overviewData struct {
	Now                     time.Time
	BacklogSampled          bool // Backlog is from the newest sample
	Live                    db.Overview
	BacklogTotal            int64
	OldestPendingAge        time.Duration
	HasRates                bool
	Latest                  db.StatSample
	IngestPerSec            float64
	DeliveredPerSec         float64
	IngestedHour            int64 // callbacks received over the sampled last hour
	DeliveredHour           int64
	FailedHour              int64
	SampleCount             int
	BacklogChart            template.HTML
	IngestChart, DelivChart template.HTML
	LatencyChart, ErrChart  template.HTML
}

func (d *Dashboard) overview(c echo.Context) error {
	ctx := c.Request().Context()
	now := d.cfg.Now()
	from := now.Add(-time.Hour)
	samples, err := d.reads(c).StatSamplesSince(ctx, from)
	if err != nil {
		return err
	}
	// The backlog per queue comes from the newest sample when it is fresh
	// (the sampler counts it anyway), else from the queue table itself.
	var fresh *db.StatSample
	if n := len(samples); n > 0 && now.Sub(samples[n-1].SampledAt) < backlogFreshness &&
		len(samples[n-1].BacklogPerQueue) > 0 {
		fresh = &samples[n-1]
	}
	live, err := d.reads(c).OverviewGet(ctx, d.cfg.Queues, fresh == nil)
	if err != nil {
		return err
	}
	if fresh != nil {
		live.Backlog = fresh.BacklogPerQueue
	}
	s := chartSeries(samples)
	o := overviewData{Now: now, Live: live, SampleCount: len(samples), BacklogSampled: fresh != nil}
	for _, n := range live.Backlog {
		o.BacklogTotal += n
	}
	if !live.OldestPending.IsZero() {
		o.OldestPendingAge = now.Sub(live.OldestPending)
	}
	for _, x := range samples {
		o.IngestedHour += x.Ingested
		o.DeliveredHour += x.Delivered
		o.FailedHour += x.Failed
	}
	if len(samples) > 0 {
		o.HasRates = true
		o.Latest = samples[len(samples)-1]
		o.IngestPerSec = o.Latest.Rate(o.Latest.Ingested)
		o.DeliveredPerSec = o.Latest.Rate(o.Latest.Delivered)
	}
	o.BacklogChart = barChart("Pending deliveries per logical queue", live.Backlog)
	o.IngestChart = lineChart("Ingested callbacks per second, last hour", "/s", from, now, s.Ingest)
	o.DelivChart = lineChart("Delivered per second, last hour", "/s", from, now, s.Delivered)
	o.LatencyChart = lineChart("End-to-end p99 latency, last hour", "ms", from, now, s.P99)
	o.ErrChart = lineChart("Error rate (failed attempts / attempts), last hour", "ratio", from, now, s.ErrorRate)
	return d.render(c, http.StatusOK, "overview", view{Title: "Overview", Nav: "overview", Refresh: true, Data: o})
}
