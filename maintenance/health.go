package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// healthLoop samples table and cluster health every HealthInterval into the
// hookrelay_db_* gauges and warns about long transactions.
func (mt *Maintainer) healthLoop(ctx context.Context) {
	warned := map[longXact]time.Time{} // when each long transaction was last logged
	var autovacuumWarned time.Time     // when autovacuum being off was last logged
	tick := time.NewTicker(mt.cfg.HealthInterval)
	defer tick.Stop()
	for {
		start := time.Now()
		h, err := mt.db.HealthSnapshotWith(ctx, db.HealthOptions{LongTransaction: mt.cfg.LongTransaction})
		switch {
		case err != nil && ctx.Err() == nil:
			mt.m.sampleFailures.WithLabelValues("health").Inc()
			mt.logger.Warn("maintenance: health sample failed", "error", err)
		case err == nil:
			mt.m.sampleSeconds.WithLabelValues("health").Set(time.Since(start).Seconds())
			mt.publishHealth(h)
			if err := mt.samplePullLag(ctx, mt.cfg.Now()); err != nil && ctx.Err() == nil {
				mt.m.sampleFailures.WithLabelValues("poll_lag").Inc()
				mt.logger.Warn("maintenance: poll endpoints' lag sample failed", "error", err)
			}
			mt.warnLongTransactions(ctx, h, warned)
			if h.Autovacuum {
				autovacuumWarned = time.Time{}
			} else if time.Since(autovacuumWarned) >= autovacuumRewarn {
				autovacuumWarned = time.Now()
				mt.logger.Warn("maintenance: the server runs with autovacuum off: nothing vacuums TOAST, the catalogs or the open day of the history, and nothing guards against transaction ID wraparound; turn it on (docs/operations/postgresql.md)")
			}
			mt.m.samples.WithLabelValues("health").Inc()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// autovacuumRewarn is how often autovacuum being off is logged again.
const autovacuumRewarn = time.Hour

// longXact identifies one transaction of one session.
type longXact struct {
	pid   int
	start time.Time
}

// warnLongTransactions logs each transaction older than the threshold when
// first seen and again every LongTransactionRewarn while it stays open; the
// first sighting is also a database.long_transaction operational webhook.
func (mt *Maintainer) warnLongTransactions(ctx context.Context, h db.Health, warned map[longXact]time.Time) {
	now := time.Now()
	seen := map[longXact]bool{}
	for _, s := range h.Sessions {
		if s.XactStart == nil || s.XactSeconds < h.LongTransactionSeconds {
			continue
		}
		k := longXact{pid: s.PID, start: *s.XactStart}
		seen[k] = true
		last, ok := warned[k]
		if ok && now.Sub(last) < mt.cfg.LongTransactionRewarn {
			continue
		}
		if !ok {
			lt := db.LongTransaction{PID: s.PID, Database: s.Database, User: s.Username,
				ApplicationName: s.ApplicationName, ClientAddr: s.ClientAddr, State: s.State,
				XactStart: *s.XactStart, XactSeconds: s.XactSeconds, XminAge: s.XminAge, SameDatabase: s.SameDatabase}
			if err := mt.db.OpsLongTransaction(ctx, lt); err != nil && ctx.Err() == nil {
				mt.logger.Warn("maintenance: reporting a long transaction to the ops endpoints failed", "error", err)
			}
		}
		warned[k] = now
		msg := "maintenance: long transaction holds back vacuum of this database's tables"
		if !s.SameDatabase {
			msg = "maintenance: long transaction in another database holds back vacuum of the shared catalogs"
		}
		mt.logger.Warn(msg, "pid", s.PID, "database", s.Database, "user", s.Username, "application_name", s.ApplicationName,
			"client_addr", s.ClientAddr, "state", s.State, "xact_age", time.Duration(s.XactSeconds*float64(time.Second)).Round(time.Second),
			"xmin_age", s.XminAge)
	}
	for k := range warned {
		if !seen[k] {
			delete(warned, k)
		}
	}
}

// publishHealth sets the hookrelay_db_* gauges from a snapshot.
func (mt *Maintainer) publishHealth(h db.Health) {
	m := mt.m
	for _, t := range h.Tables {
		m.tableBytes.WithLabelValues(t.Name).Set(float64(t.TableBytes))
		m.indexBytes.WithLabelValues(t.Name).Set(float64(t.IndexBytes))
		m.liveTuples.WithLabelValues(t.Name).Set(float64(t.Live))
		m.deadTuples.WithLabelValues(t.Name).Set(float64(t.Dead))
		m.deadRatio.WithLabelValues(t.Name).Set(t.DeadRatio)
		m.lastVacuum.WithLabelValues(t.Name).Set(unix(t.LastVacuum))
		m.lastAutovacuum.WithLabelValues(t.Name).Set(unix(t.LastAutovacuum))
	}
	off := 0.0
	if !h.Autovacuum {
		off = 1
	}
	m.autovacuumOff.Set(off)
	m.connections.Set(float64(h.Connections))
	m.maxConnections.Set(float64(h.MaxConnections))
	m.idleInTransaction.Set(float64(h.IdleInTransaction))
	m.oldestXact.Set(h.OldestXactSeconds)
	m.longTransactions.Set(float64(h.LongTransactions))
	m.oldestXminAge.Set(float64(h.OldestXminAge))
	m.preparedXacts.Set(float64(h.PreparedXacts))
	m.slotsHoldingXmin.Set(float64(len(h.ReplicationSlots)))
	slotAge := 0
	for _, s := range h.ReplicationSlots {
		slotAge = max(slotAge, s.XminAge, s.CatalogXminAge)
	}
	m.slotXminAge.Set(float64(slotAge))

	type agg struct {
		n      int
		bytes  int64
		oldest time.Time
	}
	per := map[string]*agg{"messages": {}, "delivery_attempts": {}, "idempotency_keys": {}}
	for _, p := range h.Partitions {
		a := per[p.Parent]
		if a == nil || !p.Attached {
			continue
		}
		a.n++
		a.bytes += p.Bytes
		if a.oldest.IsZero() || p.Day.Before(a.oldest) {
			a.oldest = p.Day
		}
	}
	now := mt.cfg.Now()
	for name, a := range per {
		m.partitions.WithLabelValues(name).Set(float64(a.n))
		m.partitionBytes.WithLabelValues(name).Set(float64(a.bytes))
		age := 0.0
		if !a.oldest.IsZero() {
			age = max(0, now.Sub(a.oldest).Seconds())
		}
		m.oldestPartitionAge.WithLabelValues(name).Set(age)
	}
}

func unix(t *time.Time) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Unix())
}
