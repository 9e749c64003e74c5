package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// verifiedV1a reports whether r's webhook-signature holds a v1a entry that
// verifies with publicKey ("whpk_" + base64), as a receiver checks it:
// ed25519 over "<webhook-id>.<webhook-timestamp>.<body>".
func verifiedV1a(r changeReq, publicKey string) bool {
	pk, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(publicKey, "whpk_"))
	if err != nil || len(pk) != ed25519.PublicKeySize {
		return false
	}
	signed := []byte(r.header.Get("webhook-id") + "." + r.header.Get("webhook-timestamp") + "." + string(r.body))
	for _, entry := range strings.Fields(r.header.Get("webhook-signature")) {
		if sig, ok := strings.CutPrefix(entry, "v1a,"); ok {
			if raw, err := base64.StdEncoding.DecodeString(sig); err == nil && ed25519.Verify(pk, signed, raw) {
				return true
			}
		}
	}
	return false
}

// TestEd25519SignaturesReachReceiver: an endpoint created with "signature":
// "ed25519" delivers to a real loopback receiver that verifies v1a with the
// public key the API showed; after a rotation both key pairs sign for the
// overlap; a switch to hmac sends v1 beside the v1a entries. The private
// keys are nowhere in the database in clear text.
func TestEd25519SignaturesReachReceiver(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	s := startServe(t, map[string]string{"DATABASE_URL": url})
	sink := newChangeSink(t)
	var carrier, merchant struct {
		APIKey string `json:"api_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/carriers", restAdmin,
		map[string]any{"name": "acme", "ordering_key_field": "tracking_no", "event_type_field": "status"}, &carrier))
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/merchants", restAdmin, map[string]any{"name": "shop"}, &merchant))
	var ep struct {
		ID        string `json:"id"`
		Secret    string `json:"secret"`
		PublicKey string `json:"public_key"`
	}
	require.Equal(t, http.StatusCreated, apiCall(t, "POST", s.URL+"/v1/endpoints", merchant.APIKey,
		map[string]any{"url": sink.URL + "/hook", "signature": "ed25519"}, &ep))
	require.Empty(t, ep.Secret)
	require.True(t, strings.HasPrefix(ep.PublicKey, "whpk_"))

	r := sendAndWait(t, s, sink, carrier.APIKey, "TN-1")
	require.True(t, verifiedV1a(r, ep.PublicKey), "v1a verifies with the API's public key: %q", r.header.Get("webhook-signature"))
	require.Len(t, strings.Fields(r.header.Get("webhook-signature")), 1)
	require.False(t, verifiedV1a(changeReq{header: r.header, body: append(r.body, ' ')}, ep.PublicKey), "the check can fail")

	var rot struct {
		PublicKey string `json:"public_key"`
		Secret    string `json:"secret"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "POST", s.URL+"/v1/endpoints/"+ep.ID+"/rotate-secret", merchant.APIKey, nil, &rot))
	require.Empty(t, rot.Secret)
	require.NotEqual(t, ep.PublicKey, rot.PublicKey)
	r = sendAndWait(t, s, sink, carrier.APIKey, "TN-2")
	require.True(t, verifiedV1a(r, rot.PublicKey), "the new key signs")
	require.True(t, verifiedV1a(r, ep.PublicKey), "the old key signs during the overlap")

	// The public key is stored in clear (it is public): the check below
	// can fail.
	require.NotEmpty(t, clearTextHits(t, url, []string{strings.TrimPrefix(rot.PublicKey, "whpk_")}))

	var sw struct {
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusOK, apiCall(t, "PATCH", s.URL+"/v1/endpoints/"+ep.ID, merchant.APIKey, map[string]any{"signature": "hmac"}, &sw))
	require.True(t, strings.HasPrefix(sw.Secret, "whsec_"))
	r = sendAndWait(t, s, sink, carrier.APIKey, "TN-3")
	require.True(t, signedWith(r, sw.Secret), "v1 with the new HMAC secret")
	require.True(t, verifiedV1a(r, rot.PublicKey), "v1a still, for the overlap")

	// Every private key, in its stored form and its base64 alone, is absent.
	store := dbtest.Open(t, url, db.Config{})
	id, err := strconv.ParseInt(ep.ID, 10, 64)
	require.NoError(t, err)
	secrets, err := store.EndpointSecretsActive(t.Context(), id)
	require.NoError(t, err)
	var needles []string
	for _, sec := range secrets {
		if sec.PublicKey != "" {
			needles = append(needles, sec.Secret, strings.TrimPrefix(sec.Secret, "whsk_"))
		}
	}
	require.Len(t, needles, 4, "two private keys")
	require.Empty(t, clearTextHits(t, url, append(needles, secretNeedles(sw.Secret)...)))
}
