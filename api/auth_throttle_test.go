package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/throttle"
)

// A valid key forgives none of its address's failed authentications: with
// a valid key used between the guesses (each time the wait is over), the
// 6th…8th wrong key from one address is each followed by a wait (429 with
// Retry-After) that grows, as without the valid key. (A success used to
// clear the count: a key holder got 5 guesses per wait, forever.)
func TestAuthThrottleNotResetByAValidKey(t *testing.T) {
	t.Parallel()
	cfg := privateOK()
	cfg.Throttle = throttle.New(throttle.Config{Base: 200 * time.Millisecond})
	b := setup(t, cfg)
	w := b.world(t)
	const wrong = "hrm_wrong_key_0000000000000000"
	get := func(token string) *http.Response {
		t.Helper()
		resp := b.do(t, http.MethodGet, "/v1/endpoints", token, nil)
		resp.Body.Close()
		return resp
	}
	for i := range throttle.DefaultFree {
		require.Equal(t, http.StatusUnauthorized, get(wrong).StatusCode, "failure %d", i+1)
	}
	for guess := throttle.DefaultFree + 1; guess <= 8; guess++ {
		resp := get(w.M1Key)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "before guess %d: the address waits, whatever its key", guess)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		testenv.Eventually(t, 30*time.Second, "the valid key let in after the wait", func() bool {
			return get(w.M1Key).StatusCode == http.StatusOK
		})
		require.Equal(t, http.StatusUnauthorized, get(wrong).StatusCode, "guess %d is tried", guess)
		resp = get(wrong)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "after guess %d the address waits again: the valid key cleared nothing", guess)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
}
