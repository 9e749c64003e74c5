package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// `hookrelay audit verify` succeeds on an untouched log, printing the count
// (and with --print-head the head), and fails after an edit or a deletion
// made in the database, naming the first broken entry.
func TestAuditVerifyCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sql    string
		broken string
	}{
		{"untouched", "", ""},
		{"an entry edited", `UPDATE audit_log SET actor_name = 'someone else' WHERE id = 2`, "entry 2"},
		{"an entry deleted", `DELETE FROM audit_log WHERE id = 2`, "entry 2"},
		{"the newest deleted", `DELETE FROM audit_log WHERE id = 3`, "entry 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := dbtest.NewURL(t)
			store := dbtest.Open(t, url, db.Config{})
			log := cliAudit(store)
			for _, action := range []string{"merchant.create", "endpoint.create", "endpoint.update"} {
				require.NoError(t, log.Record(t.Context(), audit.Entry{Action: action, TargetType: "endpoint", TargetID: "1"}))
			}
			if tc.sql != "" {
				_, err := rawConn(t, url).Exec(t.Context(), tc.sql)
				require.NoError(t, err)
			}
			env := map[string]string{"DATABASE_URL": url, "HOOKRELAY_ENCRYPTION_KEY": dbtest.TestEncryptionKey}
			var out, errOut bytes.Buffer
			err := run(t.Context(), []string{"hookrelay", "audit", "verify", "--print-head"}, func(k string) string { return env[k] }, &out, &errOut)
			if tc.broken == "" {
				require.NoError(t, err, errOut.String())
				require.Contains(t, out.String(), "audit log intact: 3 entries verified (ids 1 to 3)")
				require.Contains(t, out.String(), "head: id=3 ")
				return
			}
			require.Error(t, err)
			require.ErrorContains(t, err, "audit log broken at "+tc.broken)
			require.Contains(t, out.String(), "audit log broken at "+tc.broken)
		})
	}
}

func TestAuditCommandUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.ErrorIs(t, run(t.Context(), []string{"hookrelay", "audit"}, func(string) string { return "" }, &out, &errOut), errUsage)
	require.ErrorIs(t, run(t.Context(), []string{"hookrelay", "audit", "check"}, func(string) string { return "" }, &out, &errOut), errUsage)
	require.NoError(t, run(t.Context(), []string{"hookrelay", "audit", "verify", "--help"}, func(string) string { return "" }, &out, &errOut))
	require.Contains(t, out.String(), "-print-head")
}
