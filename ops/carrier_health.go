package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/ingest"
)

// Windows of a carrier's health.
const (
	HealthWindow = time.Hour       // counts and latency
	RateWindow   = 5 * time.Minute // rate
)

// CarrierHealth is how a carrier's callbacks went in the last HealthWindow,
// from the counts every API process adds to the carrier statistics every
// few seconds (ingest.Watch).
type CarrierHealth struct {
	CarrierID int64
	Accepted  int64
	// Refused counts the refused callbacks per reason (hookrelay.Reasons).
	Refused      map[string]int64
	RefusedTotal int64
	// PerSecond is the rate of its callbacks, accepted or refused, over the
	// last RateWindow.
	PerSecond float64
	// LastCallbackAt is its last callback within a day (zero: none).
	LastCallbackAt time.Time
	// P99 is the 99th percentile of the accepted callbacks' answer time:
	// the upper bound of its bucket (ingest.LatencyBounds; the last bound
	// means at least that). Zero without accepted callbacks.
	P99 time.Duration
}

// CarrierHealth returns the health of the carriers of ids (every carrier
// with callbacks when empty; carrier 0 is the refusals whose key named no
// carrier). Operators only.
func (s *Service) CarrierHealth(ctx context.Context, ids []int64) (map[int64]*CarrierHealth, error) {
	now := s.now()
	rows, err := s.db.CarrierStatsSince(ctx, now.Add(-HealthWindow), ids)
	if err != nil {
		return nil, err
	}
	last, err := s.db.CarrierLastCallbacks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64]*CarrierHealth{}
	get := func(id int64) *CarrierHealth {
		h := out[id]
		if h == nil {
			h = &CarrierHealth{CarrierID: id, Refused: map[string]int64{}, LastCallbackAt: last[id]}
			out[id] = h
		}
		return h
	}
	for _, id := range ids {
		get(id)
	}
	buckets := map[int64][]int64{}
	rateFrom := now.Add(-RateWindow)
	for _, r := range rows {
		h := get(r.CarrierID)
		h.Accepted += r.Accepted
		n := r.Accepted
		for reason, c := range r.Refused {
			h.Refused[reason] += c
			h.RefusedTotal += c
			n += c
		}
		if !r.Minute.Before(rateFrom.Truncate(time.Minute)) {
			h.PerSecond += float64(n) / RateWindow.Seconds()
		}
		b := buckets[r.CarrierID]
		for i, c := range r.Latency {
			if i >= len(b) {
				b = append(b, 0)
			}
			b[i] += c
		}
		buckets[r.CarrierID] = b
	}
	for id, b := range buckets {
		out[id].P99 = p99(b)
	}
	return out, nil
}

// p99 returns the upper bound of the bucket of the 99th percentile.
func p99(buckets []int64) time.Duration {
	var total int64
	for _, c := range buckets {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := (total*99 + 99) / 100 // ceil(0.99 total)
	var seen int64
	for i, c := range buckets {
		seen += c
		if seen >= want {
			i = min(i, len(ingest.LatencyBounds)-1)
			return time.Duration(ingest.LatencyBounds[i] * float64(time.Second))
		}
	}
	return time.Duration(ingest.LatencyBounds[len(ingest.LatencyBounds)-1] * float64(time.Second))
}

// CarrierHealthOf returns the health of carrier id, or hookrelay.ENOTFOUND.
// Operators only.
func (s *Service) CarrierHealthOf(ctx context.Context, id int64) (*CarrierHealth, error) {
	if _, err := s.Carrier(ctx, id); err != nil {
		return nil, err
	}
	hs, err := s.CarrierHealth(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	return hs[id], nil
}
