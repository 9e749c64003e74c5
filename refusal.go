package hookrelay

import "errors"

// Reason is the stable code of why a callback was refused, as the refusal
// log and the carrier metrics name it. Its values never change.
type Reason string

// Reasons of refused callbacks. An error names its own with WithReason;
// one without gets the reason of its code (ReasonOf).
const (
	ReasonAuth               Reason = "auth"                 // missing, unknown or wrong kind of key
	ReasonSignature          Reason = "signature"            // a signature that does not verify
	ReasonAddress            Reason = "address"              // a client address the carrier does not allow
	ReasonDisabled           Reason = "disabled"             // a disabled carrier
	ReasonContentType        Reason = "content_type"         // not JSON
	ReasonTooLarge           Reason = "too_large"            // a body over the limit
	ReasonParse              Reason = "parse"                // not one valid JSON object
	ReasonMissingOrderingKey Reason = "missing_ordering_key" // no ordering key in header or body
	ReasonInvalidField       Reason = "invalid_field"        // a value hookrelay cannot store or send
	ReasonAdapterFailed      Reason = "adapter_failed"       // the carrier's adapter threw or returned no event shape
	ReasonAdapterLimit       Reason = "adapter_limit"        // the carrier's adapter went over one of its limits
	ReasonSchemaInvalid      Reason = "schema_invalid"       // the canonical event does not match its type's schema
	ReasonRateLimited        Reason = "rate_limited"         // over the carrier's rate (or too many failed keys)
	ReasonQuota              Reason = "quota"                // over the carrier's share of a saturated intake
	ReasonUnavailable        Reason = "unavailable"          // the database, the S3 store or memory cannot take it now
	ReasonForbidden          Reason = "forbidden"            // refused for another reason of access
	ReasonInternal           Reason = "internal"             // a failure of hookrelay's own
)

// Reasons lists every reason, in the order the dashboard shows them.
var Reasons = []Reason{
	ReasonAuth, ReasonSignature, ReasonAddress, ReasonDisabled, ReasonContentType, ReasonTooLarge,
	ReasonParse, ReasonMissingOrderingKey, ReasonInvalidField, ReasonAdapterFailed, ReasonAdapterLimit,
	ReasonSchemaInvalid, ReasonRateLimited, ReasonQuota,
	ReasonUnavailable, ReasonForbidden, ReasonInternal,
}

// ValidReason reports whether r is one of Reasons.
func ValidReason(r Reason) bool {
	for _, x := range Reasons {
		if x == r {
			return true
		}
	}
	return false
}

// reasoned attaches a reason to an error; everything else (code, message,
// Retry-After) is the wrapped error's.
type reasoned struct {
	err    error
	reason Reason
}

func (e *reasoned) Error() string { return e.err.Error() }
func (e *reasoned) Unwrap() error { return e.err }

// WithReason has err name the reason a callback refused with it is
// recorded under. Nil stays nil.
func WithReason(err error, r Reason) error {
	if err == nil {
		return nil
	}
	return &reasoned{err: err, reason: r}
}

// reasonOfCode is the reason of an error that names none.
var reasonOfCode = map[ErrorCode]Reason{
	EUNAUTHORIZED:  ReasonAuth,
	EBADSIGNATURE:  ReasonSignature,
	EFORBIDDEN:     ReasonForbidden,
	EUNSUPPORTED:   ReasonContentType,
	ETOOLARGE:      ReasonTooLarge,
	EINVALID:       ReasonInvalidField,
	EUNPROCESSABLE: ReasonAdapterFailed,
	ERATELIMIT:     ReasonRateLimited,
	EUNAVAILABLE:   ReasonUnavailable,
	ETIMEOUT:       ReasonUnavailable,
}

// ReasonOf returns the reason of a refusal: the one attached by WithReason
// nearest the top of err's chain, else the reason of its code
// (ReasonInternal for a code without one); "" for nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	var r *reasoned
	if errors.As(err, &r) {
		return r.reason
	}
	if r, ok := reasonOfCode[CodeOf(err)]; ok {
		return r
	}
	return ReasonInternal
}
