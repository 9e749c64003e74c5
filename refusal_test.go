package hookrelay_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
)

// TestReasonOf: a reason attached to an error wins, however deep it is
// wrapped; an error without one gets its code's; the code, message and
// status stay the wrapped error's.
func TestReasonOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, hookrelay.Reason(""), hookrelay.ReasonOf(nil))
	require.Nil(t, hookrelay.WithReason(nil, hookrelay.ReasonParse))
	for code, want := range map[hookrelay.ErrorCode]hookrelay.Reason{
		hookrelay.EUNAUTHORIZED: hookrelay.ReasonAuth,
		hookrelay.EBADSIGNATURE: hookrelay.ReasonSignature,
		hookrelay.EUNSUPPORTED:  hookrelay.ReasonContentType,
		hookrelay.ETOOLARGE:     hookrelay.ReasonTooLarge,
		hookrelay.EINVALID:      hookrelay.ReasonInvalidField,
		hookrelay.ERATELIMIT:    hookrelay.ReasonRateLimited,
		hookrelay.EUNAVAILABLE:  hookrelay.ReasonUnavailable,
		hookrelay.EFORBIDDEN:    hookrelay.ReasonForbidden,
		hookrelay.EINTERNAL:     hookrelay.ReasonInternal,
	} {
		require.Equal(t, want, hookrelay.ReasonOf(hookrelay.Errorf(code, "x")), code)
	}
	require.Equal(t, hookrelay.ReasonInternal, hookrelay.ReasonOf(fmt.Errorf("plain")))

	err := hookrelay.WithReason(hookrelay.Errorf(hookrelay.EFORBIDDEN, "carrier disabled"), hookrelay.ReasonDisabled)
	wrapped := fmt.Errorf("layer: %w", err)
	require.Equal(t, hookrelay.ReasonDisabled, hookrelay.ReasonOf(wrapped))
	require.Equal(t, hookrelay.EFORBIDDEN, hookrelay.CodeOf(wrapped))
	require.Equal(t, 403, hookrelay.HTTPStatus(wrapped))
	require.Equal(t, "carrier disabled", hookrelay.ErrorMessage(wrapped))
	// The nearest reason wins.
	require.Equal(t, hookrelay.ReasonQuota, hookrelay.ReasonOf(hookrelay.WithReason(err, hookrelay.ReasonQuota)))
	for _, r := range hookrelay.Reasons {
		require.True(t, hookrelay.ValidReason(r))
	}
	require.False(t, hookrelay.ValidReason("nonsense"))
}
