package db

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// farFuture is how a timestamptz 'infinity' reads into a time.Time: parked
// rows have visible_at = 'infinity' (docs/architecture.md), and pgx alone
// refuses to scan it into a time.Time. Anything at or past it is "never".
var farFuture = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)

// NeverDue reports whether a visible_at read from the queue is 'infinity':
// the row is parked (behind an earlier row of its chain, or held).
func NeverDue(visibleAt time.Time) bool { return !visibleAt.Before(farFuture) }

// farPast is how '-infinity' reads (a released queue lease's expires_at).
var farPast = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// infinityTimeCodec is pgx's timestamptz codec, except that it scans the
// infinities into a time.Time as farFuture and farPast instead of failing.
// Registered on every connection of the pool (Open), so no query has to
// remember which of its columns can hold them.
type infinityTimeCodec struct{ pgtype.TimestamptzCodec }

func (c *infinityTimeCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*time.Time); ok {
		if inner := c.TimestamptzCodec.PlanScan(m, oid, format, &pgtype.Timestamptz{}); inner != nil {
			return infinityTimeScan{inner}
		}
	}
	return c.TimestamptzCodec.PlanScan(m, oid, format, target)
}

type infinityTimeScan struct{ inner pgtype.ScanPlan }

func (p infinityTimeScan) Scan(src []byte, dst any) error {
	var ts pgtype.Timestamptz
	if err := p.inner.Scan(src, &ts); err != nil {
		return err
	}
	t := dst.(*time.Time)
	switch {
	case !ts.Valid:
		return errors.New("cannot scan NULL into *time.Time")
	case ts.InfinityModifier == pgtype.Infinity:
		*t = farFuture
	case ts.InfinityModifier == pgtype.NegativeInfinity:
		*t = farPast
	default:
		*t = ts.Time
	}
	return nil
}

// registerInfinityTime installs infinityTimeCodec on a connection's type map.
func registerInfinityTime(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &infinityTimeCodec{}})
}
