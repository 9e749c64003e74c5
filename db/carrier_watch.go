package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// CarrierRefusal is one row of the refusal log: a callback refused to a
// carrier, or (Dropped > 0) the count of those of one reason and minute
// beyond the log's caps, without an excerpt.
type CarrierRefusal struct {
	ID          int64
	CarrierID   int64 // 0: the carrier is not known (a key that authenticates nobody)
	ReceivedAt  time.Time
	Status      int
	Reason      string
	Message     string
	Headers     map[string]string // without credentials
	BodyExcerpt string            // the start of the body, text-safe
	BodySize    int               // the whole body's bytes read
	Dropped     int
}

// CarrierRefusalInsertMany appends refusals to the log in one statement.
func (db *DB) CarrierRefusalInsertMany(ctx context.Context, rs []CarrierRefusal) error {
	p := dbsqlc.CarrierRefusalInsertManyParams{}
	for _, r := range rs {
		h, err := json.Marshal(r.Headers)
		if err != nil {
			return fmt.Errorf("insert refusals: %w", err)
		}
		if r.Headers == nil {
			h = []byte("{}")
		}
		p.CarrierIDs = append(p.CarrierIDs, r.CarrierID)
		p.ReceivedAts = append(p.ReceivedAts, r.ReceivedAt)
		p.Statuses = append(p.Statuses, int16(r.Status))
		p.Reasons = append(p.Reasons, r.Reason)
		p.Messages = append(p.Messages, r.Message)
		p.Headers = append(p.Headers, h)
		p.BodyExcerpts = append(p.BodyExcerpts, r.BodyExcerpt)
		p.BodySizes = append(p.BodySizes, int32(r.BodySize))
		p.Dropped = append(p.Dropped, int32(r.Dropped))
	}
	if _, err := db.q.CarrierRefusalInsertMany(ctx, p); err != nil {
		return fmt.Errorf("insert refusals: %w", unavailable(err))
	}
	return nil
}

// CarrierRefusalFilter selects a carrier's refusals: received in [Since,
// Until), of Reason ("" for all), below the keyset (BeforeAt, BeforeID),
// newest first.
type CarrierRefusalFilter struct {
	CarrierID    int64
	Reason       string
	Since, Until time.Time
	BeforeAt     time.Time
	BeforeID     int64
	Limit        int
}

// CarrierRefusals returns the refusals of f.
func (db *DB) CarrierRefusals(ctx context.Context, f CarrierRefusalFilter) ([]CarrierRefusal, error) {
	rows, err := db.q.CarrierRefusalList(ctx, dbsqlc.CarrierRefusalListParams{
		CarrierID: f.CarrierID, Since: f.Since, Until: f.Until, Reason: f.Reason,
		BeforeAt: f.BeforeAt, BeforeID: f.BeforeID, Lim: int32(f.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list refusals: %w", unavailable(err))
	}
	out := make([]CarrierRefusal, len(rows))
	for i, r := range rows {
		out[i] = CarrierRefusal{
			ID: r.ID, CarrierID: r.CarrierID, ReceivedAt: r.ReceivedAt, Status: int(r.Status), Reason: r.Reason,
			Message: r.Message, BodyExcerpt: r.BodyExcerpt, BodySize: int(r.BodySize), Dropped: int(r.Dropped),
		}
		if err := json.Unmarshal(r.Headers, &out[i].Headers); err != nil {
			return nil, fmt.Errorf("refusal %d headers: %w", r.ID, err)
		}
	}
	return out, nil
}

// CarrierStat is what the API processes counted of one carrier's callbacks
// in one minute.
type CarrierStat struct {
	CarrierID int64
	Minute    time.Time
	Accepted  int64
	Refused   map[string]int64 // per reason
	// Latency counts the answers per latency bucket (bounds of the
	// caller's; the last bucket has none).
	Latency []int64
	LastAt  time.Time
}

// CarrierStatsAdd adds counts to the rows of their carrier and minute.
func (db *DB) CarrierStatsAdd(ctx context.Context, stats []CarrierStat) error {
	var p dbsqlc.CarrierStatsAddParams
	for _, s := range stats {
		refused, err := json.Marshal(s.Refused)
		if err != nil {
			return fmt.Errorf("add carrier stats: %w", err)
		}
		if s.Refused == nil {
			refused = []byte("{}")
		}
		lat := make([]string, len(s.Latency))
		for i, n := range s.Latency {
			lat[i] = strconv.FormatInt(n, 10)
		}
		p.CarrierIDs = append(p.CarrierIDs, s.CarrierID)
		p.Minutes = append(p.Minutes, s.Minute)
		p.Accepted = append(p.Accepted, s.Accepted)
		p.Refused = append(p.Refused, refused)
		p.Latencies = append(p.Latencies, "{"+strings.Join(lat, ",")+"}")
		p.LastAts = append(p.LastAts, s.LastAt)
	}
	if err := db.q.CarrierStatsAdd(ctx, p); err != nil {
		return fmt.Errorf("add carrier stats: %w", unavailable(err))
	}
	return nil
}

// CarrierStatsSince returns the rows of carrierIDs (all carriers when
// empty) from the minute of since on, by carrier and minute.
func (db *DB) CarrierStatsSince(ctx context.Context, since time.Time, carrierIDs []int64) ([]CarrierStat, error) {
	if carrierIDs == nil {
		carrierIDs = []int64{}
	}
	rows, err := db.q.CarrierStatsSince(ctx, dbsqlc.CarrierStatsSinceParams{Since: since, CarrierIDs: carrierIDs})
	if err != nil {
		return nil, fmt.Errorf("carrier stats: %w", unavailable(err))
	}
	out := make([]CarrierStat, len(rows))
	for i, r := range rows {
		out[i] = CarrierStat{CarrierID: r.CarrierID, Minute: r.Minute, Accepted: r.Accepted, Latency: r.Latency, LastAt: r.LastAt}
		if err := json.Unmarshal(r.Refused, &out[i].Refused); err != nil {
			return nil, fmt.Errorf("carrier stats: %w", err)
		}
	}
	return out, nil
}

// CarrierStatsTrim deletes the rows of minutes before before.
func (db *DB) CarrierStatsTrim(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.q.CarrierStatsTrim(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("trim carrier stats: %w", unavailable(err))
	}
	return n, nil
}

// CarrierLastCallbacks returns each carrier's last callback, accepted or
// refused, within the statistics kept (a day).
func (db *DB) CarrierLastCallbacks(ctx context.Context) (map[int64]time.Time, error) {
	rows, err := db.q.CarrierStatsLastCallbacks(ctx)
	if err != nil {
		return nil, fmt.Errorf("carrier last callbacks: %w", unavailable(err))
	}
	out := make(map[int64]time.Time, len(rows))
	for _, r := range rows {
		out[r.CarrierID] = r.LastAt
	}
	return out, nil
}
