package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/testenv"
)

// A successful login forgives none of its address's failed logins: with
// the right token logging in between the guesses (each time the wait is
// over), the 6th and 7th wrong token from one address are each followed by
// a longer wait (429 with Retry-After), as without the successes.
func TestLoginThrottleNotResetByASuccess(t *testing.T) {
	t.Parallel()
	f := startWebFixture(t, fixtureOpts{})
	one := loginFrom(t, f.URL, "127.0.0.1")
	const wrong = "hra_wrong_token_000000000000"
	for i := range 5 {
		st, _ := tryLogin(t, f.URL, one, wrong)
		require.Equal(t, http.StatusUnauthorized, st, "failure %d", i+1)
	}
	for _, g := range []struct {
		guess int
		wait  string // Retry-After after it
	}{{6, "2"}, {7, "4"}} {
		testenv.Eventually(t, 30*time.Second, "the right token logs in after the wait", func() bool {
			st, _ := tryLogin(t, f.URL, one, testAdminToken)
			return st == http.StatusSeeOther
		})
		st, _ := tryLogin(t, f.URL, one, wrong)
		require.Equal(t, http.StatusUnauthorized, st, "guess %d is tried", g.guess)
		st, resp := tryLogin(t, f.URL, one, wrong)
		require.Equal(t, http.StatusTooManyRequests, st, "after guess %d the address waits again: the login cleared nothing", g.guess)
		require.Equal(t, g.wait, resp.Header.Get("Retry-After"))
	}
}
