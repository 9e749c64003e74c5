// Package searchbench measures message search (GET /v1/messages) on a large
// history: it fills a database with messages and their deliveries' history
// in SQL, then times the product's searches through its HTTP API and saves
// their query plans. docs/benchmarks.md ("Search at 50 million messages")
// describes the method; cmd/hookrelay-searchbench runs it.
package searchbench

import (
	"fmt"
	"time"
)

// Shape is the data a fill writes: Messages callbacks spread evenly over the
// Days before End, received in id order.
type Shape struct {
	Messages int64
	Days     int
	End      time.Time
	// PayloadBytes is the approximate size of each (inline, JSON) payload.
	PayloadBytes int
	// PerKey is how many callbacks each tracking number gets, spread over
	// KeySpan (a parcel's life); keys at the window's ends have fewer.
	PerKey  int
	KeySpan time.Duration
	// Carriers, Merchants (two endpoints each) and the share of deliveries
	// that end dead (1 in DeadEvery) and of the newest messages still queued.
	Carriers  int
	Merchants int
	DeadEvery int64
	Pending   int64
}

// DefaultShape is the target: 50 million callbacks over 7 days.
func DefaultShape(end time.Time) Shape {
	return Shape{
		Messages: 50_000_000, Days: 7, End: end.UTC().Truncate(time.Minute),
		PayloadBytes: 400, PerKey: 7, KeySpan: 48 * time.Hour,
		Carriers: 5, Merchants: 50, DeadEvery: 200, Pending: 2000,
	}
}

// Start is the time of the first message.
func (s Shape) Start() time.Time { return s.End.Add(-time.Duration(s.Days) * 24 * time.Hour) }

// stepSeconds is the time between two messages.
func (s Shape) stepSeconds() float64 {
	return float64(s.Days) * 86400 / float64(s.Messages)
}

// keyLag is how many key slots separate two callbacks of one key: the key
// of message n is (n / PerKey) - (n % PerKey) * keyLag, so a key's callbacks
// come KeySpan / (PerKey-1) apart.
func (s Shape) keyLag() int64 {
	slotsPerSecond := 1 / (s.stepSeconds() * float64(s.PerKey))
	return int64(slotsPerSecond * s.KeySpan.Seconds() / float64(max(s.PerKey-1, 1)))
}

// keyOffset keeps key numbers positive (keys born before the window).
const keyOffset = 100_000_000

// keyNumber is the key of message n (0-based), as in the SQL of rowsSQL.
func (s Shape) keyNumber(n int64) int64 {
	p := int64(s.PerKey)
	return n/p - (n%p)*s.keyLag() + keyOffset
}

// carrierPrefixes start the tracking numbers of each carrier.
var carrierPrefixes = []string{"1Z", "JD", "TBA", "LX", "CP", "GM", "DP", "RR"}

// hashMul scatters key numbers over 32 bits (a bijection: odd multiplier).
const hashMul = 2654435761

// trackingNumber is the ordering key of key number k, as in rowsSQL.
func (s Shape) trackingNumber(k int64) string {
	h := (k * hashMul) % (1 << 32)
	return fmt.Sprintf("%s%010d", carrierPrefixes[k%int64(s.Carriers)], h)
}

// merchantOf is the merchant (1-based id) of key number k, as in rowsSQL:
// skewed, the first merchants get most of the traffic.
func (s Shape) merchantOf(k int64) int64 {
	h := (k * hashMul) % (1 << 32)
	f := float64(h) / (1 << 32)
	return 1 + int64(float64(s.Merchants)*f*f)
}

// endpointOf is the endpoint (1-based id) of key number k, as in rowsSQL.
func (s Shape) endpointOf(k int64) int64 {
	return (s.merchantOf(k)-1)*2 + (k/int64(s.Carriers))%2 + 1
}

// eventTypes are the callbacks of a parcel's life, in order.
var eventTypes = []string{"label_created", "picked_up", "in_transit", "arrived_at_hub",
	"in_transit", "out_for_delivery", "delivered", "delivered", "delivered", "delivered"}
