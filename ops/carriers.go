package ops

import (
	"context"
	"net/netip"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
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
	// MaxAllowedCIDRs bounds a carrier's allowed source addresses.
	MaxAllowedCIDRs = 100
)

// parseCIDRs parses a carrier's allowed source addresses: CIDR prefixes or
// single addresses (a /32 or /128), IPv4 or IPv6. Errors name the entry.
func parseCIDRs(in []string) ([]netip.Prefix, error) {
	if len(in) > MaxAllowedCIDRs {
		return nil, invalidf("allowed_cidrs holds at most %d entries", MaxAllowedCIDRs)
	}
	var out []netip.Prefix
	for i, v := range in {
		v = strings.TrimSpace(v)
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil || a.Zone() != "" {
				return nil, invalidf("allowed_cidrs[%d] %q is not an address or CIDR prefix such as \"203.0.113.0/24\" or \"2001:db8::/32\"", i, v)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Addr().Is4In6() {
			return nil, invalidf("allowed_cidrs[%d] %q: write IPv4 prefixes in IPv4 form", i, v)
		}
		if m := p.Masked(); m != p {
			return nil, invalidf("allowed_cidrs[%d] %q has bits set after the prefix length; did you mean %q?", i, v, m.String())
		}
		out = append(out, p)
	}
	return out, nil
}

// NewCarrier is a carrier to create, as the operator gives it.
type NewCarrier struct {
	Name string
	// OrderingKeyField, EventTypeField and MerchantField are the dot paths
	// of the routing values in a callback's body ("" for none).
	OrderingKeyField string
	EventTypeField   string
	MerchantField    string
	// Signature declares how the carrier signs its callbacks (nil: not
	// signed, unless SigningSecret is set), secret included.
	Signature *hookrelay.InboundSignature
	// SigningSecret, when set without Signature, makes the carrier sign its
	// callbacks in the original scheme (X-Signature: sha256=<hex
	// HMAC-SHA256 of the body>).
	SigningSecret string
	// AllowedCIDRs are the source addresses its callbacks may come from
	// (addresses or CIDR prefixes, IPv4 or IPv6); empty: any.
	AllowedCIDRs []string
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
func (s *Service) CreateCarrier(ctx context.Context, in NewCarrier) (out CreatedCarrier, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.create", TargetType: targetCarrier, TargetID: audit.ID(out.Carrier.ID), After: out}, err)
	}()
	c := db.Carrier{Name: in.Name, OrderingKeyField: in.OrderingKeyField, EventTypeField: in.EventTypeField,
		MerchantField: in.MerchantField, RateLimitPerSec: in.RateLimitPerSec}
	switch {
	case in.Signature != nil && in.SigningSecret != "":
		return CreatedCarrier{}, invalidf("signing_secret and signature exclude each other: give the secret in signature.secret")
	case in.Signature != nil:
		c.Signature = *in.Signature
	case in.SigningSecret != "":
		if err := checkLegacySecret(in.SigningSecret); err != nil {
			return CreatedCarrier{}, err
		}
		c.Signature = hookrelay.LegacyInboundSignature(in.SigningSecret)
	}
	if c.AllowedCIDRs, err = parseCIDRs(in.AllowedCIDRs); err != nil {
		return CreatedCarrier{}, err
	}
	if err := checkCarrier(&c); err != nil {
		return CreatedCarrier{}, err
	}
	key := hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
	car, err := s.db.CarrierCreate(ctx, db.CarrierCreateParams{
		Name: c.Name, APIKeyHash: hookrelay.HashKey(key), APIKeyPrefix: hookrelay.KeyDisplayPrefix(key),
		OrderingKeyField: c.OrderingKeyField, EventTypeField: c.EventTypeField, MerchantField: c.MerchantField,
		Signature: c.Signature, AllowedCIDRs: c.AllowedCIDRs, RateLimitPerSec: c.RateLimitPerSec,
	})
	if err != nil {
		return CreatedCarrier{}, err
	}
	return CreatedCarrier{Carrier: car, Key: key}, nil
}

// checkLegacySecret checks a signing_secret.
func checkLegacySecret(secret string) error {
	if len(secret) < MinSigningSecret {
		return invalidf("signing_secret must be at least %d characters", MinSigningSecret)
	}
	return hookrelay.CheckText("signing_secret", secret, MaxCarrierSigningBytes)
}

// checkCarrier checks the fields of a carrier to create or update, and
// completes its signature's declaration (hookrelay.InboundSignature.Check).
// Field paths left empty get the defaults on create.
func checkCarrier(c *db.Carrier) error {
	if err := checkName(c.Name, "name"); err != nil {
		return err
	}
	// Sent as X-Hookrelay-Carrier with each of its deliveries.
	if err := hookrelay.CheckHeaderValue("name", c.Name); err != nil {
		return err
	}
	for _, f := range []struct{ v, name string }{{c.OrderingKeyField, "ordering_key_field"}, {c.EventTypeField, "event_type_field"}, {c.MerchantField, "merchant_field"}} {
		if err := checkFieldPath(f.v, f.name); err != nil {
			return err
		}
	}
	if c.RateLimitPerSec < 0 || c.RateLimitPerSec > MaxCarrierRateLimit {
		return invalidf("rate_limit_per_sec must be between 0 (unlimited) and %d", MaxCarrierRateLimit)
	}
	return c.Signature.Check()
}

// Carriers returns up to limit carriers with ids above afterID, by id.
// Operators only.
func (s *Service) Carriers(ctx context.Context, afterID int64, limit int) ([]db.Carrier, error) {
	return s.db.CarrierList(ctx, afterID, limit)
}
