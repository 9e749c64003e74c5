package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndpointEd25519API: an ed25519 endpoint's answers carry its public key
// and never a private key; rotation gives a new public key; a PATCH to hmac
// answers the new HMAC secret once; an unknown scheme is a 400 naming the
// field. Every answer is checked against the OpenAPI document.
func TestEndpointEd25519API(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	ctx := t.Context()

	st, bad := b.call(t, http.MethodPost, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/h", "signature": "rsa"})
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid", errCode(bad))
	require.Contains(t, bad["error"].(map[string]any)["message"], "signature must be")

	ep := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/h", "signature": "ed25519"})
	id := ep["id"].(string)
	require.Equal(t, "ed25519", ep["signature"])
	require.Nil(t, ep["secret"], "no private key in the answer")
	pk1, _ := ep["public_key"].(string)
	require.True(t, strings.HasPrefix(pk1, "whpk_"), "%v", ep)
	secrets, err := b.DB.EndpointSecretsActive(ctx, id64(t, id))
	require.NoError(t, err)
	require.Len(t, secrets, 1)
	require.True(t, strings.HasPrefix(secrets[0].Secret, "whsk_"))
	require.Equal(t, pk1, secrets[0].PublicKey)

	st, got := b.call(t, http.MethodGet, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, pk1, got["public_key"])

	st, rot := b.call(t, http.MethodPost, "/v1/endpoints/"+id+"/rotate-secret", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", rot)
	require.Nil(t, rot["secret"])
	pk2, _ := rot["public_key"].(string)
	require.True(t, strings.HasPrefix(pk2, "whpk_"))
	require.NotEqual(t, pk1, pk2)
	_, got = b.call(t, http.MethodGet, "/v1/endpoints/"+id, w.M1Key, nil)
	require.Equal(t, pk2, got["public_key"])

	st, bad = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"signature": ""})
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid", errCode(bad))

	// The same scheme again changes nothing; the other one rotates.
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"signature": "ed25519"})
	require.Equal(t, http.StatusOK, st)
	require.Nil(t, got["secret"])
	require.Equal(t, pk2, got["public_key"])
	st, got = b.call(t, http.MethodPatch, "/v1/endpoints/"+id, w.M1Key, map[string]any{"signature": "hmac"})
	require.Equal(t, http.StatusOK, st, "%v", got)
	require.Equal(t, "hmac", got["signature"])
	require.Nil(t, got["public_key"])
	hm, _ := got["secret"].(string)
	require.True(t, strings.HasPrefix(hm, "whsec_"), "%v", got)
	secrets, err = b.DB.EndpointSecretsActive(ctx, id64(t, id))
	require.NoError(t, err)
	require.Len(t, secrets, 3, "both key pairs sign beside the new secret for the overlap")
	require.Equal(t, hm, secrets[0].Secret)
	require.Equal(t, pk2, secrets[1].PublicKey)

	// An hmac endpoint by default: a secret, no public key.
	def := b.mustCreate(t, "/v1/endpoints", w.M1Key, map[string]any{"url": "http://127.0.0.1:9/d"})
	require.Equal(t, "hmac", def["signature"])
	require.Nil(t, def["public_key"])
	require.True(t, strings.HasPrefix(def["secret"].(string), "whsec_"))
}
