package ops

import (
	"context"
	"net/http"

	"github.com/hookrelay/hookrelay/db"
)

// replaceUnreadable settles, for an update of an endpoint some of whose
// sealed values this process cannot open (u, nil when none), what happens
// to them. Headers or credentials the input does not give stay stored as
// they are, unread (f.KeepHeaders, f.KeepAuth), so the update loses nothing
// that the right key would open. Input that gives headers replaces the
// stored ones: it must then give each header whose value cannot be opened
// again (a value, or null to remove it), since merging cannot keep a value
// it cannot read; credentials given (or removed) replace them. A new
// signing secret comes from rotate-secret.
func replaceUnreadable(u *db.Unreadable, in EndpointInput, f *db.EndpointFields) error {
	if u == nil {
		return nil
	}
	if in.Headers != nil {
		given := make(map[string]bool, len(in.Headers))
		for name := range in.Headers {
			given[http.CanonicalHeaderKey(name)] = true
		}
		for _, name := range u.Headers {
			if !given[http.CanonicalHeaderKey(name)] {
				return fieldErrorf(fieldHeaders, "headers: the stored value of %q cannot be decrypted (%s): give it again, or null to remove it", name, u.Reason)
			}
		}
		f.KeepHeaders = false
	}
	if in.Auth != nil || in.RemoveAuth {
		f.KeepAuth = false
	}
	return nil
}

// resume clears the record of endpoint id's unreadable secrets after an
// update or a rotation that replaced every one of them, which makes its
// parked deliveries due at once rather than when each comes back. Best
// effort: otherwise the dispatcher clears it when it next loads the
// endpoint.
func (s *Service) resume(ctx context.Context, id int64) {
	_, _ = s.db.EndpointUnreadableClear(ctx, id)
}
