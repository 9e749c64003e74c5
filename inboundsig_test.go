package hookrelay_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
)

// The known answers below were computed at authoring time, outside Go,
// with Python's hmac/hashlib (and the HMAC-SHA256 one again with
// `openssl dgst -sha256 -hmac`); the Standard Webhooks one is the example
// of the Standard Webhooks specification.
const (
	kaSecret = "it-is-a-secret-0123"
	kaBody   = `{"tracking_no":"SF1","status":"delivered"}`
)

func checked(t *testing.T, s hookrelay.InboundSignature) hookrelay.InboundSignature {
	t.Helper()
	require.NoError(t, s.Check())
	return s
}

func TestInboundSignatureKnownAnswers(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name  string
		sig   hookrelay.InboundSignature
		hdr   map[string]string
		query string
		body  string
	}{
		{"legacy: X-Signature sha256=<hex HMAC-SHA256 of the body>", hookrelay.LegacyInboundSignature(kaSecret),
			map[string]string{"X-Signature": "sha256=ee610dc0c417fd1538f893d3d001371f6f376036a6a5afb5f81d950233e663b3"}, "", kaBody},
		{"hmac sha256 hex, upper-case hex", hookrelay.InboundSignature{Scheme: "hmac", Secret: kaSecret},
			map[string]string{"X-Signature": "EE610DC0C417FD1538F893D3D001371F6F376036A6A5AFB5F81D950233E663B3"}, "", kaBody},
		{"hmac sha1 base64 in a header of its own", hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "sha1", Encoding: "base64", Header: "x-carrier-sign", Secret: kaSecret},
			map[string]string{"X-Carrier-Sign": "XKIT4I93zejdvo+sa0ae93Jblro="}, "", kaBody},
		{"hmac md5 hex", hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "md5", Secret: kaSecret},
			map[string]string{"X-Signature": "bfc29d7e9a76cd6e4d01a2e9893b4df2"}, "", kaBody},
		{"hmac sha256 of timestamp.body", hookrelay.InboundSignature{Scheme: "hmac", Message: "timestamp+body", TimestampHeader: "X-Timestamp", Secret: kaSecret},
			map[string]string{"X-Signature": "50054f3530ecbc560a9462b558c13a58758c7b9369f5b49e58e8cad8a779eb99", "X-Timestamp": "1700000000"}, "", kaBody},
		{"hmac in a query parameter", hookrelay.InboundSignature{Scheme: "hmac", Query: "sign", Secret: kaSecret},
			nil, "a=1&sign=ee610dc0c417fd1538f893d3d001371f6f376036a6a5afb5f81d950233e663b3", kaBody},
		{"digest md5 base64 of body+secret", hookrelay.InboundSignature{Scheme: "digest", Algorithm: "md5", Encoding: "base64", Header: "X-Sign", Secret: kaSecret},
			map[string]string{"X-Sign": "6FMD2N2Q9Tcneq22YHBnEw=="}, "", kaBody},
		{"digest sha1 hex of body+secret", hookrelay.InboundSignature{Scheme: "digest", Algorithm: "sha1", Secret: kaSecret},
			map[string]string{"X-Signature": "2f2acc124f2574b438abd6170eb5132f80c91c90"}, "", kaBody},
		{"standard webhooks", hookrelay.InboundSignature{Scheme: "standard-webhooks", Tolerance: 24 * time.Hour * 1, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			map[string]string{"Webhook-Id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "Webhook-Timestamp": "1614265330",
				"Webhook-Signature": "v1a,ignored v1,bm90IHRoaXMgb25l v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, "", `{"test": 2432232314}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := checked(t, tc.sig)
			at := now
			if s.Scheme == "standard-webhooks" {
				at = time.Unix(1614265330+60, 0)
			}
			h := http.Header{}
			for k, v := range tc.hdr {
				h.Set(k, v)
			}
			require.NoError(t, s.Verify(h, tc.query, []byte(tc.body), at))
			// Another body is refused, as a signature error.
			err := s.Verify(h, tc.query, []byte(tc.body+" "), at)
			require.Error(t, err)
			require.Equal(t, hookrelay.EBADSIGNATURE, hookrelay.CodeOf(err))
			require.ErrorIs(t, err, hookrelay.ErrSignatureInvalid)
			// No signature at all is refused as missing.
			err = s.Verify(http.Header{"Webhook-Timestamp": {h.Get("Webhook-Timestamp")}, "X-Timestamp": {h.Get("X-Timestamp")}}, "", []byte(tc.body), at)
			require.ErrorIs(t, err, hookrelay.ErrSignatureMissing, "%v", err)
		})
	}
}

func TestInboundSignatureTimestampWindow(t *testing.T) {
	s := checked(t, hookrelay.InboundSignature{Scheme: "hmac", Message: "timestamp+body", TimestampHeader: "X-Timestamp", Tolerance: time.Minute, Secret: kaSecret})
	sign := func(ts string) http.Header {
		mac := hmac.New(sha256.New, []byte(kaSecret))
		mac.Write([]byte(ts + "." + kaBody))
		return http.Header{"X-Signature": {hex.EncodeToString(mac.Sum(nil))}, "X-Timestamp": {ts}}
	}
	now := time.Unix(1700000000, 0)
	require.NoError(t, s.Verify(sign("1700000060"), "", []byte(kaBody), now), "60 s ahead is within")
	require.NoError(t, s.Verify(sign("1699999940"), "", []byte(kaBody), now), "60 s behind is within")
	for _, ts := range []string{"1700000061", "1699999939", "1"} {
		err := s.Verify(sign(ts), "", []byte(kaBody), now)
		require.ErrorIs(t, err, hookrelay.ErrTimestampStale, ts)
		require.Equal(t, hookrelay.EBADSIGNATURE, hookrelay.CodeOf(err))
		require.Contains(t, hookrelay.ErrorMessage(err), "outside the tolerance of 1m0s")
	}
	h := sign("1700000000")
	h.Del("X-Timestamp")
	require.ErrorIs(t, s.Verify(h, "", []byte(kaBody), now), hookrelay.ErrTimestampMissing)
	h.Set("X-Timestamp", "yesterday")
	require.ErrorIs(t, s.Verify(h, "", []byte(kaBody), now), hookrelay.ErrTimestampMissing)

	// Standard Webhooks: the default tolerance of 5 minutes.
	sw := checked(t, hookrelay.InboundSignature{Scheme: "standard-webhooks", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	require.Equal(t, 5*time.Minute, sw.Tolerance)
	swh := http.Header{"Webhook-Id": {"msg_p5jXN8AQM9LWM0D4loKWxJek"}, "Webhook-Timestamp": {"1614265330"},
		"Webhook-Signature": {"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}}
	body := []byte(`{"test": 2432232314}`)
	require.NoError(t, sw.Verify(swh, "", body, time.Unix(1614265330+300, 0)))
	require.ErrorIs(t, sw.Verify(swh, "", body, time.Unix(1614265330+301, 0)), hookrelay.ErrTimestampStale)
}

func TestInboundSignaturePrefixAndMessages(t *testing.T) {
	s := checked(t, hookrelay.LegacyInboundSignature(kaSecret))
	body := []byte(kaBody)
	now := time.Now()
	err := s.Verify(http.Header{"X-Signature": {"ee610dc0c417fd1538f893d3d001371f6f376036a6a5afb5f81d950233e663b3"}}, "", body, now)
	require.ErrorIs(t, err, hookrelay.ErrSignatureInvalid)
	require.Equal(t, `invalid signature in the X-Signature header: it must start with "sha256=" (want sha256=<hex HMAC-SHA256 of the body>)`, hookrelay.ErrorMessage(err))
	err = s.Verify(http.Header{}, "", body, now)
	require.Equal(t, "missing signature: send the X-Signature header with sha256=<hex HMAC-SHA256 of the body>", hookrelay.ErrorMessage(err))
	for _, bad := range []string{"sha256=zz", "sha256=00ff", "sha256=" + strings.Repeat("a", 200)} {
		require.ErrorIs(t, s.Verify(http.Header{"X-Signature": {bad}}, "", body, now), hookrelay.ErrSignatureInvalid, bad)
	}
	q := checked(t, hookrelay.InboundSignature{Scheme: "hmac", Query: "sign", Secret: kaSecret})
	require.Equal(t, "missing signature: send the query parameter sign with <hex HMAC-SHA256 of the body>",
		hookrelay.ErrorMessage(q.Verify(http.Header{"X-Signature": {"ee61"}}, "sig=1", body, now)))
}

func TestInboundSignatureCheck(t *testing.T) {
	for _, tc := range []struct {
		sig  hookrelay.InboundSignature
		want string
	}{
		{hookrelay.InboundSignature{Scheme: "rsa"}, "signature.scheme must be one of none, hmac, digest, standard-webhooks"},
		{hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "sha512", Secret: kaSecret}, "signature.algorithm must be one of sha256, sha1, md5"},
		{hookrelay.InboundSignature{Scheme: "hmac", Message: "body+secret", Secret: kaSecret}, "signature.message must be body or timestamp+body for scheme hmac"},
		{hookrelay.InboundSignature{Scheme: "digest", Message: "body", Secret: kaSecret}, "signature.message must be body+secret for scheme digest"},
		{hookrelay.InboundSignature{Scheme: "hmac", Encoding: "base32", Secret: kaSecret}, "signature.encoding must be hex or base64"},
		{hookrelay.InboundSignature{Scheme: "hmac", Header: "X Sig", Secret: kaSecret}, "signature.header must be an HTTP header name of at most 100 characters"},
		{hookrelay.InboundSignature{Scheme: "hmac", Header: "X-Sig", Query: "sign", Secret: kaSecret}, "signature.header and signature.query exclude each other: the signature is in one place"},
		{hookrelay.InboundSignature{Scheme: "hmac", Message: "timestamp+body", Secret: kaSecret}, "signature.timestamp_header is required with message timestamp+body"},
		{hookrelay.InboundSignature{Scheme: "hmac", Tolerance: time.Minute, Secret: kaSecret}, "signature.tolerance applies only with signature.timestamp_header"},
		{hookrelay.InboundSignature{Scheme: "hmac", TimestampHeader: "X-Ts", Tolerance: 48 * time.Hour, Secret: kaSecret}, "signature.tolerance must be between 1s and 24h0m0s"},
		{hookrelay.InboundSignature{Scheme: "hmac", Secret: "short"}, "signature.secret is required for scheme hmac: at least 16 characters"},
		{hookrelay.InboundSignature{Scheme: "standard-webhooks", Secret: kaSecret}, "signature.secret is required for scheme standard-webhooks, in the form whsec_<base64>"},
		{hookrelay.InboundSignature{Scheme: "standard-webhooks", Secret: "whsec_c2hvcnQ="}, "signature.secret must be whsec_ followed by the base64 of 16 to 1024 bytes"},
		{hookrelay.InboundSignature{Scheme: "standard-webhooks", Header: "X-Sig", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "signature.header does not apply to scheme standard-webhooks (its headers are webhook-id, webhook-timestamp and webhook-signature)"},
		{hookrelay.InboundSignature{Scheme: "none", Secret: kaSecret}, "signature.secret must be empty for scheme none"},
		{hookrelay.InboundSignature{Scheme: "none", Header: "X-Sig"}, "signature.header does not apply to scheme none"},
	} {
		err := tc.sig.Check()
		require.Error(t, err, tc.want)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err))
		require.Equal(t, tc.want, hookrelay.ErrorMessage(err))
	}
	// The defaults.
	s := checked(t, hookrelay.InboundSignature{Scheme: "hmac", TimestampHeader: "x-ts", Secret: kaSecret})
	require.Equal(t, hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "sha256", Message: "body", Encoding: "hex",
		Header: "X-Signature", TimestampHeader: "X-Ts", Tolerance: 5 * time.Minute, Secret: kaSecret}, stripped(s))
}

// stripped is s without the fields Check derives.
func stripped(s hookrelay.InboundSignature) hookrelay.InboundSignature {
	var out hookrelay.InboundSignature
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &out)
	out.Secret = s.Secret
	return out
}

func TestInboundSignatureJSONNeverHoldsTheSecret(t *testing.T) {
	s := checked(t, hookrelay.InboundSignature{Scheme: "hmac", TimestampHeader: "X-Ts", Secret: kaSecret})
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(b), kaSecret)
	require.JSONEq(t, `{"scheme":"hmac","algorithm":"sha256","message":"body","encoding":"hex","header":"X-Signature","timestamp_header":"X-Ts","tolerance":"5m0s"}`, string(b))
	var in hookrelay.InboundSignature
	require.EqualError(t, json.Unmarshal([]byte(`{"scheme":"hmac","algoritm":"md5"}`), &in), `signature: unknown field "algoritm"`)
	require.EqualError(t, json.Unmarshal([]byte(`{"scheme":"hmac","tolerance":"soon"}`), &in), `signature.tolerance must be a positive duration such as "5m"`)
	require.NoError(t, json.Unmarshal([]byte(`{"scheme":"hmac","secret":"`+kaSecret+`"}`), &in))
	require.Equal(t, kaSecret, in.Secret)
}

// BenchmarkInboundVerify is the cost of checking one signed callback of
// 1.2 KB (the usual size of a courier's callback).
func BenchmarkInboundVerify(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1200)
	now := time.Now()
	ts := now.Unix()
	for _, tc := range []struct {
		name string
		sig  hookrelay.InboundSignature
	}{
		{"hmac-sha256-hex", hookrelay.LegacyInboundSignature(kaSecret)},
		{"hmac-sha1-base64-timestamp", hookrelay.InboundSignature{Scheme: "hmac", Algorithm: "sha1", Encoding: "base64", Message: "timestamp+body", TimestampHeader: "X-Timestamp", Secret: kaSecret}},
		{"digest-md5-query", hookrelay.InboundSignature{Scheme: "digest", Algorithm: "md5", Query: "sign", Secret: kaSecret}},
		{"standard-webhooks", hookrelay.InboundSignature{Scheme: "standard-webhooks", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
	} {
		s := tc.sig
		if err := s.Check(); err != nil {
			b.Fatal(err)
		}
		h, query := signFor(b, s, body, ts)
		if err := s.Verify(h, query, body, now); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Verify(h, query, body, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// signFor signs body as the declaration s of the benchmark expects,
// computed here independently of the package.
func signFor(b *testing.B, s hookrelay.InboundSignature, body []byte, ts int64) (http.Header, string) {
	b.Helper()
	tss := strconv.FormatInt(ts, 10)
	switch s.Scheme {
	case "standard-webhooks":
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s.Secret, "whsec_"))
		if err != nil {
			b.Fatal(err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("msg_1." + tss + "."))
		mac.Write(body)
		return http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {tss},
			"Webhook-Signature": {"v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}}, ""
	case "digest":
		h := md5.New()
		h.Write(body)
		h.Write([]byte(s.Secret))
		return http.Header{}, "sign=" + hex.EncodeToString(h.Sum(nil))
	}
	if s.Algorithm == "sha1" {
		mac := hmac.New(sha1.New, []byte(s.Secret))
		mac.Write([]byte(tss + "."))
		mac.Write(body)
		return http.Header{"X-Signature": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}, "X-Timestamp": {tss}}, ""
	}
	mac := hmac.New(sha256.New, []byte(s.Secret))
	mac.Write(body)
	return http.Header{"X-Signature": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}}, ""
}

// FuzzInboundVerify: the original scheme's check never panics, accepts
// exactly the HMAC-SHA256 of the body under the secret, and refuses it once
// the body changes.
func FuzzInboundVerify(f *testing.F) {
	f.Add("sha256=00", "secret-0123456789", []byte(`{"tracking_no":"SF1"}`))
	f.Add("", "s", []byte(nil))
	f.Add("sha256=zz", "ключ", []byte("{}"))
	f.Add(" sha256=ABCDEF ", "k", []byte("x"))
	f.Fuzz(func(t *testing.T, header, secret string, body []byte) {
		secret += "-padded-to-16-chars"
		s := hookrelay.LegacyInboundSignature(secret)
		if err := s.Check(); err != nil {
			return // not valid UTF-8: refused when declared
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := mac.Sum(nil)
		now := time.Now()
		if err := s.Verify(http.Header{"X-Signature": {header}}, "", body, now); err == nil {
			h, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
			got, derr := hex.DecodeString(h)
			if !ok || derr != nil || !hmac.Equal(got, want) {
				t.Fatalf("accepted a wrong signature %q", header)
			}
		} else if !errors.Is(err, hookrelay.ErrSignatureInvalid) && !errors.Is(err, hookrelay.ErrSignatureMissing) {
			t.Fatalf("refusal of another kind: %v", err)
		}
		good := http.Header{"X-Signature": {"sha256=" + hex.EncodeToString(want)}}
		if err := s.Verify(good, "", body, now); err != nil {
			t.Fatalf("refused the right signature: %v", err)
		}
		tampered := append(append([]byte(nil), body...), '!')
		if err := s.Verify(good, "", tampered, now); err == nil {
			t.Fatal("accepted the signature of another body")
		}
	})
}
