package load

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func postSigned(t *testing.T, s *Sink, n int, key []byte, body []byte, corrupt bool, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.EndpointURL(n), bytes.NewReader(body))
	require.NoError(t, err)
	sig := Sign(key, "msg_1", "1700000000", body)
	if corrupt {
		sig = Sign(key, "msg_2", "1700000000", body)
	}
	req.Header.Set("webhook-id", "msg_1")
	req.Header.Set("webhook-timestamp", "1700000000")
	req.Header.Set("webhook-signature", "v1,bm90aGluZw== "+sig)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestSinkVerifiesSignaturesAndRecords(t *testing.T) {
	t.Parallel()
	s, err := StartSink(SinkConfig{})
	require.NoError(t, err)
	defer s.Close()
	key := []byte("0123456789abcdef0123456789abcdef")
	require.NoError(t, s.SetSecret(4, "whsec_"+base64.StdEncoding.EncodeToString(key)))
	require.Error(t, s.SetSecret(5, "nope"))
	l := NewLedger(10, func(int) []int { return []int{4} })
	s.SetLedger(7, l)

	body := buildPayload(7, 3, 1, "m1", 1200, string(bytes.Repeat([]byte("x"), 2000)))
	require.Len(t, body, 1200)
	require.Equal(t, http.StatusUnauthorized, postSigned(t, s, 4, key, body, true))
	require.Equal(t, http.StatusUnauthorized, postSigned(t, s, 9, key, body, false), "unknown endpoint has no secret")
	require.Equal(t, http.StatusNoContent, postSigned(t, s, 4, key, body, false))
	other := buildPayload(8, 3, 1, "m1", 100, "xxxx")
	require.Equal(t, http.StatusBadRequest, postSigned(t, s, 4, key, other, false), "unknown phase")

	st := s.Stats()
	require.EqualValues(t, 4, st.Received)
	require.EqualValues(t, 2, st.BadSignature)
	require.EqualValues(t, 1, st.BadPayload)
	l.Acked(3, 1, l.LastDelivery())
	a := l.Analyze()
	require.Equal(t, 1, a.Delivered)
	require.Zero(t, a.Lost)
}

func TestSinkInjectsFailures(t *testing.T) {
	t.Parallel()
	s, err := StartSink(SinkConfig{FailureRate: 1})
	require.NoError(t, err)
	defer s.Close()
	key := []byte("k")
	require.NoError(t, s.SetSecret(0, "whsec_"+base64.StdEncoding.EncodeToString(key)))
	l := NewLedger(1, func(int) []int { return []int{0} })
	s.SetLedger(1, l)
	require.Equal(t, http.StatusInternalServerError, postSigned(t, s, 0, key, buildPayload(1, 0, 1, "m", 10, ""), false))
	_, delivered := l.Progress()
	require.Zero(t, delivered)
}

func TestSinkFailsFirstAttemptsOnly(t *testing.T) {
	t.Parallel()
	s, err := StartSink(SinkConfig{})
	require.NoError(t, err)
	defer s.Close()
	key := []byte("k")
	require.NoError(t, s.SetSecret(0, "whsec_"+base64.StdEncoding.EncodeToString(key)))
	l := NewLedger(1, func(int) []int { return []int{0} })
	s.SetLedger(1, l)
	body := buildPayload(1, 0, 1, "m", 10, "")
	s.SetFirstAttemptFailureRate(1)
	require.Equal(t, http.StatusInternalServerError, postSigned(t, s, 0, key, body, false, "X-Hookrelay-Attempt", "1"))
	require.Equal(t, http.StatusNoContent, postSigned(t, s, 0, key, body, false, "X-Hookrelay-Attempt", "2"), "retries are answered")
	s.SetFirstAttemptFailureRate(0)
	require.Equal(t, http.StatusNoContent, postSigned(t, s, 0, key, body, false, "X-Hookrelay-Attempt", "1"))
}

func TestParseStatTicks(t *testing.T) {
	t.Parallel()
	// comm with a space and parentheses; utime=11 stime=22 cutime=33 cstime=44
	line := []byte("123 (post gres) (x)) S 1 123 123 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 100 1000 10")
	n, err := parseStatTicks(line, false)
	require.NoError(t, err)
	require.EqualValues(t, 33, n)
	n, err = parseStatTicks(line, true)
	require.NoError(t, err)
	require.EqualValues(t, 110, n)
	_, err = parseStatTicks([]byte("garbage"), false)
	require.Error(t, err)

	self, err := ProcCPU(os.Getpid(), false)
	require.NoError(t, err)
	require.GreaterOrEqual(t, self, int64(0))
	require.Positive(t, ClockTicks())
}
