package ops

import (
	"context"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Bounds of a carrier's and a merchant's fields (the API's documented
// limits).
const (
	MaxName                = 200
	MaxFieldPath           = 200
	MaxCarrierRateLimit    = 1_000_000
	MinSigningSecret       = 16
	MaxCarrierSigningBytes = 1024
)

// NewCarrier is a carrier to create, as the operator gives it.
type NewCarrier struct {
	Name string
	// OrderingKeyField, EventTypeField and MerchantField are the dot paths
	// of the routing values in a callback's body ("" for none).
	OrderingKeyField string
	EventTypeField   string
	MerchantField    string
	// SigningSecret, when set, makes the carrier sign its callbacks
	// (X-Signature).
	SigningSecret string
	// RateLimitPerSec bounds its callbacks per second and process; 0 is no
	// limit.
	RateLimitPerSec int
}

// CreatedCarrier is a carrier just created, with its API key (shown once;
// only its hash is kept).
type CreatedCarrier struct {
	Carrier db.Carrier
	Key     string
}

// checkName checks the name of a carrier or merchant.
func checkName(name, what string) error {
	if strings.TrimSpace(name) == "" {
		return invalidf("%s is required", what)
	}
	if len(name) > MaxName {
		return invalidf("%s longer than %d characters", what, MaxName)
	}
	return hookrelay.CheckText(what, name, 0)
}

// checkFieldPath checks a carrier's dot path ("" passes).
func checkFieldPath(p, what string) error {
	if p == "" {
		return nil
	}
	if len(p) > MaxFieldPath || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
		return invalidf("%s must be a dot path such as \"shipment.tracking_no\"", what)
	}
	return hookrelay.CheckText(what, p, 0)
}

// CreateCarrier checks in and creates the carrier with a new API key.
// Operators only.
func (s *Service) CreateCarrier(ctx context.Context, in NewCarrier) (CreatedCarrier, error) {
	if err := checkName(in.Name, "name"); err != nil {
		return CreatedCarrier{}, err
	}
	// Sent as X-Hookrelay-Carrier with each of its deliveries.
	if err := hookrelay.CheckHeaderValue("name", in.Name); err != nil {
		return CreatedCarrier{}, err
	}
	for _, f := range []struct{ v, name string }{{in.OrderingKeyField, "ordering_key_field"}, {in.EventTypeField, "event_type_field"}, {in.MerchantField, "merchant_field"}} {
		if err := checkFieldPath(f.v, f.name); err != nil {
			return CreatedCarrier{}, err
		}
	}
	if in.RateLimitPerSec < 0 || in.RateLimitPerSec > MaxCarrierRateLimit {
		return CreatedCarrier{}, invalidf("rate_limit_per_sec must be between 0 (unlimited) and %d", MaxCarrierRateLimit)
	}
	if len(in.SigningSecret) > 0 && len(in.SigningSecret) < MinSigningSecret {
		return CreatedCarrier{}, invalidf("signing_secret must be at least %d characters", MinSigningSecret)
	}
	if err := hookrelay.CheckText("signing_secret", in.SigningSecret, MaxCarrierSigningBytes); err != nil {
		return CreatedCarrier{}, err
	}
	key := hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
	car, err := s.db.CarrierCreate(ctx, db.CarrierCreateParams{
		Name: in.Name, APIKeyHash: hookrelay.HashKey(key), APIKeyPrefix: hookrelay.KeyDisplayPrefix(key),
		OrderingKeyField: in.OrderingKeyField, EventTypeField: in.EventTypeField, MerchantField: in.MerchantField,
		SigningSecret: in.SigningSecret, RateLimitPerSec: in.RateLimitPerSec,
	})
	if err != nil {
		return CreatedCarrier{}, err
	}
	return CreatedCarrier{Carrier: car, Key: key}, nil
}

// Carriers returns up to limit carriers with ids above afterID, by id.
// Operators only.
func (s *Service) Carriers(ctx context.Context, afterID int64, limit int) ([]db.Carrier, error) {
	return s.db.CarrierList(ctx, afterID, limit)
}
