package dbtest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

var factorySeq atomic.Int64

func nextName(kind string) string {
	return fmt.Sprintf("%s-%d", kind, factorySeq.Add(1))
}

// CarrierOpts are the fields of a test carrier; zero values get defaults.
type CarrierOpts struct {
	Name             string // default "carrier-N"
	APIKey           string // default a new hrc_ key
	OrderingKeyField string // default tracking_no
	EventTypeField   string // default status
	MerchantField    string // default merchant_id
	SigningSecret    string
	RateLimitPerSec  int
}

// Carrier inserts a carrier and returns it with its API key.
func Carrier(t testing.TB, store *db.DB, opts *CarrierOpts) (db.Carrier, string) {
	t.Helper()
	if opts == nil {
		opts = &CarrierOpts{}
	}
	o := *opts
	if o.Name == "" {
		o.Name = nextName("carrier")
	}
	if o.APIKey == "" {
		o.APIKey = hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
	}
	c, err := store.CarrierCreate(context.Background(), db.CarrierCreateParams{
		Name: o.Name, APIKeyHash: hookrelay.HashKey(o.APIKey), APIKeyPrefix: hookrelay.KeyDisplayPrefix(o.APIKey),
		OrderingKeyField: o.OrderingKeyField, EventTypeField: o.EventTypeField, MerchantField: o.MerchantField,
		SigningSecret: o.SigningSecret, RateLimitPerSec: o.RateLimitPerSec,
	})
	if err != nil {
		t.Fatalf("dbtest.Carrier: %v", err)
	}
	return c, o.APIKey
}

// MerchantOpts are the fields of a test merchant; zero values get defaults.
type MerchantOpts struct {
	Name   string // default "merchant-N"
	APIKey string // default a new hrm_ key
}

// Merchant inserts a merchant and returns it with its API key.
func Merchant(t testing.TB, store *db.DB, opts *MerchantOpts) (db.Merchant, string) {
	t.Helper()
	if opts == nil {
		opts = &MerchantOpts{}
	}
	o := *opts
	if o.Name == "" {
		o.Name = nextName("merchant")
	}
	if o.APIKey == "" {
		o.APIKey = hookrelay.NewKey(hookrelay.MerchantKeyPrefix)
	}
	m, err := store.MerchantCreate(context.Background(), o.Name, hookrelay.HashKey(o.APIKey), hookrelay.KeyDisplayPrefix(o.APIKey))
	if err != nil {
		t.Fatalf("dbtest.Merchant: %v", err)
	}
	return m, o.APIKey
}

// EndpointOpts are the fields of a test endpoint; zero values get defaults.
type EndpointOpts struct {
	MerchantID      int64  // default a new merchant
	URL             string // default http://127.0.0.1:9/hook
	Description     string
	CarrierIDs      []int64
	EventTypes      []string
	MaxInFlight     int // default 10
	RateLimitPerSec int
	PayloadMode     string // default inline
	RetrySchedule   []time.Duration
	Timeout         time.Duration    // default 15 s
	Secret          string           // default a new whsec_ secret
	Disabled        bool             // create, then disable
	Ordering        string           // default key
	Type            string           // default push; poll takes no URL
	Batch           db.EndpointBatch // default none
}

// Endpoint inserts an endpoint with its secret and returns it with the secret.
func Endpoint(t testing.TB, store *db.DB, opts *EndpointOpts) (db.Endpoint, string) {
	t.Helper()
	if opts == nil {
		opts = &EndpointOpts{}
	}
	o := *opts
	if o.MerchantID == 0 {
		m, _ := Merchant(t, store, nil)
		o.MerchantID = m.ID
	}
	if o.URL == "" && o.Type != db.EndpointPoll {
		o.URL = "http://127.0.0.1:9/hook"
	}
	if o.Secret == "" {
		o.Secret = hookrelay.NewSecret()
	}
	ctx := context.Background()
	ep, err := store.EndpointCreate(ctx, o.MerchantID, db.EndpointFields{
		URL: o.URL, Description: o.Description, CarrierIDs: o.CarrierIDs, EventTypes: o.EventTypes,
		MaxInFlight: o.MaxInFlight, RateLimitPerSec: o.RateLimitPerSec, PayloadMode: o.PayloadMode,
		RetrySchedule: o.RetrySchedule, Timeout: o.Timeout, Ordering: o.Ordering, Type: o.Type,
		Batch: o.Batch,
	}, o.Secret)
	if err != nil {
		t.Fatalf("dbtest.Endpoint: %v", err)
	}
	if o.Disabled {
		if ep, err = store.EndpointDisable(ctx, ep.ID, "test"); err != nil {
			t.Fatalf("dbtest.Endpoint: disable: %v", err)
		}
	}
	return ep, o.Secret
}

// MessageOpts are the fields of a test message; zero values get defaults.
type MessageOpts struct {
	CarrierID      int64   // default a new carrier
	EndpointIDs    []int64 // one delivery each (none by default)
	OrderingKey    string  // default "key-N"
	EventType      string  // default "delivered"
	MerchantRef    string
	Queues         int    // logical queue count for hookrelay.QueueFor; default 32
	Payload        []byte // default {"tracking_no": OrderingKey, "status": EventType}
	PayloadKey     string // offloaded payload: the object key (Payload then only sizes it)
	IdempotencyKey string
	ReceivedAt     time.Time // default now
	// Unordered, parallel to EndpointIDs, stores those deliveries unordered
	// (as ingest does for an endpoint whose ordering is "none"); nil: all
	// ordered.
	Unordered []bool
}

// Message inserts a message and its deliveries exactly as ingest does
// (db.MessageInsertMany) and returns what was stored.
func Message(t testing.TB, store *db.DB, opts *MessageOpts) db.StoredMessage {
	t.Helper()
	if opts == nil {
		opts = &MessageOpts{}
	}
	o := *opts
	if o.CarrierID == 0 {
		c, _ := Carrier(t, store, nil)
		o.CarrierID = c.ID
	}
	if o.OrderingKey == "" {
		o.OrderingKey = nextName("key")
	}
	if o.EventType == "" {
		o.EventType = "delivered"
	}
	if o.Queues == 0 {
		o.Queues = hookrelay.DefaultQueues
	}
	if o.Payload == nil {
		o.Payload = fmt.Appendf(nil, `{"tracking_no":%q,"status":%q}`, o.OrderingKey, o.EventType)
	}
	sum := sha256.Sum256(o.Payload)
	m := db.NewMessage{
		ReceivedAt: o.ReceivedAt, CarrierID: o.CarrierID, EventType: o.EventType, OrderingKey: o.OrderingKey,
		MerchantRef: o.MerchantRef, Queue: hookrelay.QueueFor(o.OrderingKey, o.Queues),
		IdempotencyKey: o.IdempotencyKey, Payload: o.Payload, PayloadSize: len(o.Payload),
		PayloadSHA256: sum[:], EndpointIDs: o.EndpointIDs, Unordered: o.Unordered,
	}
	if o.PayloadKey != "" {
		m.Payload, m.PayloadKey = nil, o.PayloadKey
	}
	res, err := store.MessageInsertMany(context.Background(), []db.NewMessage{m})
	if err != nil {
		t.Fatalf("dbtest.Message: %v", err)
	}
	return res[0]
}
