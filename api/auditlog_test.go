package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/ops"
)

// exportLines reads GET /v1/audit-log?query as JSON lines.
func (b *bundle) exportLines(t *testing.T, query url.Values, token string) (int, []audit.JSONEntry) {
	t.Helper()
	resp := b.do(t, http.MethodGet, "/v1/audit-log?"+query.Encode(), token, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	var out []audit.JSONEntry
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e audit.JSONEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		out = append(out, e)
	}
	require.NoError(t, sc.Err())
	return resp.StatusCode, out
}

// The API's changes are in the audit log, which the admin exports as JSON
// lines with filters and a cursor; secrets are redacted; merchants may not
// export it.
func TestAuditLogExport(t *testing.T) {
	t.Parallel()
	b := setup(t, config{Ops: ops.Config{AllowPrivateTargets: true}})
	m := b.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "Audited"})
	mid, key := m["id"].(string), m["api_key"].(string)
	st, rot := b.call(t, http.MethodPost, "/v1/merchants/"+mid+"/rotate-key", adminToken, nil)
	require.Equal(t, http.StatusOK, st, "%v", rot)
	newKey := rot["api_key"].(string)
	ep := b.mustCreate(t, "/v1/endpoints", newKey, map[string]any{"url": "http://127.0.0.1:9/hook"})
	st, _ = b.call(t, http.MethodPatch, "/v1/endpoints/"+ep["id"].(string), newKey, map[string]any{"description": "audited"})
	require.Equal(t, http.StatusOK, st)

	st, all := b.exportLines(t, url.Values{}, adminToken)
	require.Equal(t, http.StatusOK, st)
	var actions []string
	for i, e := range all {
		actions = append(actions, e.Action)
		if i > 0 {
			require.Equal(t, all[i-1].Hash, e.PrevHash, "the lines follow the chain")
		}
	}
	require.Equal(t, []string{"merchant.create", "merchant.rotate_key", "endpoint.create", "endpoint.update", "audit_log.export"}, actions)
	for _, e := range all {
		for _, secret := range []string{key, newKey, ep["secret"].(string)} {
			require.NotContains(t, string(e.After), secret, "%s shows a secret", e.Action)
			require.NotContains(t, string(e.Before), secret, "%s shows a secret", e.Action)
		}
	}
	require.Contains(t, string(all[3].Before), `"Description":""`)
	require.Contains(t, string(all[3].After), `"Description":"audited"`)

	_, got := b.exportLines(t, url.Values{"action": {"endpoint."}}, adminToken)
	require.Len(t, got, 2)
	_, got = b.exportLines(t, url.Values{"target_type": {"merchant"}, "target_id": {mid}}, adminToken)
	require.Len(t, got, 2)
	_, got = b.exportLines(t, url.Values{"cursor": {all[1].ID}, "limit": {"2"}}, adminToken)
	require.Len(t, got, 2)
	require.Equal(t, all[2].ID, got[0].ID)
	_, got = b.exportLines(t, url.Values{"since": {all[2].At.Format("2006-01-02T15:04:05.999999999Z07:00")}, "action": {"merchant."}}, adminToken)
	require.Empty(t, got)

	st, _ = b.exportLines(t, url.Values{}, newKey)
	require.Equal(t, http.StatusForbidden, st, "merchants may not export the audit log")
	for _, q := range []url.Values{{"colour": {"red"}}, {"limit": {"0"}}, {"since": {"yesterday"}}, {"cursor": {"x"}}} {
		st, _ = b.exportLines(t, q, adminToken)
		require.Equal(t, http.StatusBadRequest, st, "%v", q)
	}
}
