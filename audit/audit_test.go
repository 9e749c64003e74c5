package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

type bundle struct {
	store *db.DB
	log   *audit.Log
	// sql runs statements on the test's database directly, as someone
	// with database rights would.
	sql *pgx.Conn
	// now is the log's clock; tests move it.
	mu  sync.Mutex
	now time.Time
}

func (b *bundle) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *bundle) setNow(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = t
}

func setup(t testing.TB) *bundle {
	t.Helper()
	url := dbtest.NewURL(t)
	b := &bundle{store: dbtest.Open(t, url, db.Config{}), now: time.Now()}
	b.log = audit.New(b.store, audit.Config{Now: b.clock})
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	b.sql = conn
	return b
}

func (b *bundle) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	_, err := b.sql.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func operator(name string) context.Context {
	return access.WithPrincipal(context.Background(), access.Principal{Kind: access.KindUser, Role: access.Operator,
		UserID: 7, SessionID: 9, Name: name, Addr: "192.0.2.1", UserAgent: "test"})
}

// record appends n entries acting on endpoints 1..n.
func (b *bundle) record(t testing.TB, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		require.NoError(t, b.log.Record(operator("ann@example.com"), audit.Entry{Action: "endpoint.update",
			TargetType: "endpoint", TargetID: audit.ID(int64(i)), Before: map[string]any{"url": "https://a.example"},
			After: map[string]any{"url": "https://b.example"}}))
	}
}

func verify(t testing.TB, b *bundle) audit.Report {
	t.Helper()
	rep, err := audit.Verify(context.Background(), b.store)
	require.NoError(t, err)
	return rep
}

// An untouched chain verifies, and each entry carries who, what, from where
// and the result.
func TestChainVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep := verify(t, b)
	require.True(t, rep.OK(), rep.Problem)
	require.Zero(t, rep.Count)

	b.record(t, 3)
	require.NoError(t, b.log.Record(context.Background(), audit.Entry{Action: "carrier.delete", TargetType: "carrier",
		TargetID: "4"}.Result(hookrelay.Errorf(hookrelay.ECONFLICT, "carrier has 3 undelivered callbacks"))))
	rep = verify(t, b)
	require.True(t, rep.OK(), rep.Problem)
	require.EqualValues(t, 4, rep.Count)
	require.EqualValues(t, 4, rep.Head.LastID)

	es, err := b.log.List(context.Background(), db.AuditFilter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, es, 4)
	first, last := es[0], es[3]
	require.Equal(t, "user", first.ActorKind)
	require.Equal(t, "operator", first.ActorRole)
	require.EqualValues(t, 7, first.ActorUserID)
	require.Equal(t, "ann@example.com", first.ActorName)
	require.Equal(t, "192.0.2.1", first.Addr)
	require.Equal(t, audit.ResultOK, first.Result)
	require.JSONEq(t, `{"url":"https://a.example"}`, first.Before)
	require.Equal(t, "system", last.ActorKind, "a context without a principal is the service itself")
	require.Equal(t, "conflict", last.Result)
	require.Equal(t, "carrier has 3 undelivered callbacks", last.Error)
	require.Equal(t, es[2].Hash, last.PrevHash)
}

// An edit or a deletion made directly in the database is found, and the
// first entry it broke is named.
func TestChainDetectsTampering(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sql    string
		broken int64
	}{
		{"update an action", `UPDATE audit_log SET action = 'endpoint.read' WHERE id = 3`, 3},
		{"update an actor", `UPDATE audit_log SET actor_name = 'bob@example.com' WHERE id = 2`, 2},
		{"update after", `UPDATE audit_log SET after = '{"url":"https://c.example"}' WHERE id = 4`, 4},
		{"update the result", `UPDATE audit_log SET result = 'ok', error = '' WHERE id = 5`, 5},
		{"update and re-hash", `UPDATE audit_log SET target_id = '99', hash = sha256(hash) WHERE id = 2`, 2},
		{"delete one", `DELETE FROM audit_log WHERE id = 3`, 3},
		{"delete the first", `DELETE FROM audit_log WHERE id = 1`, 1},
		{"delete the newest", `DELETE FROM audit_log WHERE id = 5`, 5},
		{"delete the newest two", `DELETE FROM audit_log WHERE id >= 4`, 4},
		{"delete everything", `DELETE FROM audit_log`, 1},
		{"truncate", `TRUNCATE audit_log`, 1},
		{"reset the head", `UPDATE audit_head SET last_id = 3, hash = (SELECT hash FROM audit_log WHERE id = 3)`, 4},
		{"move the anchor", `UPDATE audit_head SET anchor_id = 2, anchor_hash = (SELECT hash FROM audit_log WHERE id = 2)`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.record(t, 4)
			require.NoError(t, b.log.Record(context.Background(), audit.Entry{Action: "login.failed"}.Result(
				hookrelay.Errorf(hookrelay.EUNAUTHORIZED, "bad token"))))
			require.True(t, verify(t, b).OK())
			b.exec(t, tc.sql)
			rep := verify(t, b)
			require.False(t, rep.OK(), "tampering not detected")
			require.Equal(t, tc.broken, rep.BrokenID, rep.Problem)
			require.NotEmpty(t, rep.Problem)
		})
	}
}

// Appends from many goroutines at once form one line: ids 1..n, each linked
// to the one before.
func TestConcurrentAppendsStayALine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- b.log.Record(operator(fmt.Sprint("worker", w)), audit.Entry{Action: "delivery.retry",
					TargetType: "delivery", TargetID: audit.ID(int64(w*100 + i + 1))})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rep := verify(t, b)
	require.True(t, rep.OK(), rep.Problem)
	require.EqualValues(t, workers*each, rep.Count)
	es, err := b.log.List(context.Background(), db.AuditFilter{}, 0, workers*each)
	require.NoError(t, err)
	for i, e := range es {
		require.EqualValues(t, i+1, e.ID)
		if i > 0 {
			require.Equal(t, es[i-1].Hash, e.PrevHash)
			require.False(t, e.At.Before(es[i-1].At), "time goes back along the chain")
		}
	}
}

// Dropping the days past retention leaves a chain that verifies from its
// anchor, recorded in an audit.pruned entry; tampering after it is still
// found.
func TestRetentionKeepsTheChainVerifiable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	today := time.Now().UTC()
	b.setNow(today.AddDate(0, 0, -10))
	b.record(t, 3)
	b.setNow(today.AddDate(0, 0, -5))
	b.record(t, 2)
	b.setNow(today)
	b.record(t, 1)

	p, err := b.log.Prune(ctx, today, 7*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{"audit_log_p" + today.AddDate(0, 0, -10).Format("20060102"),
		"audit_log_p" + today.AddDate(0, 0, -9).Format("20060102")}, p.Dropped)
	require.EqualValues(t, 3, p.ThroughID)

	rep := verify(t, b)
	require.True(t, rep.OK(), rep.Problem)
	require.EqualValues(t, 4, rep.Count, "entries 4, 5, 6 and the audit.pruned entry")
	require.EqualValues(t, 3, rep.Head.AnchorID)
	es, err := b.log.List(ctx, db.AuditFilter{Action: audit.ActionPruned}, 0, 10)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Contains(t, es[0].After, `"through_id":"3"`)

	// A second pass with nothing past retention changes nothing.
	p, err = b.log.Prune(ctx, today, 7*24*time.Hour)
	require.NoError(t, err)
	require.Empty(t, p.Dropped)
	require.True(t, verify(t, b).OK())

	// Deleting the oldest retained entry and moving the anchor over it, as
	// retention would, is found: the audit.pruned entry names the real one.
	b.exec(t, `DELETE FROM audit_log WHERE id = 4`)
	b.exec(t, `UPDATE audit_head SET anchor_id = 4, anchor_hash = (SELECT prev_hash FROM audit_log WHERE id = 5)`)
	rep = verify(t, b)
	require.False(t, rep.OK())
	require.EqualValues(t, 5, rep.BrokenID, rep.Problem)
}

// The export's filters: time, actor, action (exact or a prefix ending with
// a dot), target; pages follow the chain.
func TestListFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-time.Hour)
	for i, e := range []struct {
		actor  string
		action string
		target string
	}{
		{"ann", "endpoint.update", "1"}, {"bob", "endpoint.delete", "2"}, {"ann", "carrier.rotate_key", "1"},
		{"bob", "message.read", "77"}, {"ann", "endpoint.update", "2"},
	} {
		b.setNow(start.Add(time.Duration(i) * time.Minute))
		typ := strings.Split(e.action, ".")[0]
		require.NoError(t, b.log.Record(operator(e.actor), audit.Entry{Action: e.action, TargetType: typ, TargetID: e.target}))
	}
	ids := func(f db.AuditFilter, after int64, limit int) []int64 {
		es, err := b.log.List(ctx, f, after, limit)
		require.NoError(t, err)
		var out []int64
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	require.Equal(t, []int64{1, 3, 5}, ids(db.AuditFilter{Actor: "ann"}, 0, 10))
	require.Equal(t, []int64{1, 2, 3, 4, 5}, ids(db.AuditFilter{Actor: "user"}, 0, 10), "an actor kind")
	require.Equal(t, []int64{1, 5}, ids(db.AuditFilter{Action: "endpoint.update"}, 0, 10))
	require.Equal(t, []int64{1, 2, 5}, ids(db.AuditFilter{Action: "endpoint."}, 0, 10))
	require.Empty(t, ids(db.AuditFilter{Action: "endpoint"}, 0, 10), "a prefix ends with a dot")
	require.Equal(t, []int64{2, 5}, ids(db.AuditFilter{TargetType: "endpoint", TargetID: "2"}, 0, 10))
	require.Equal(t, []int64{2, 3}, ids(db.AuditFilter{Since: start.Add(time.Minute), Until: start.Add(3 * time.Minute)}, 0, 10))
	require.Equal(t, []int64{3, 4}, ids(db.AuditFilter{}, 2, 2), "a page after a cursor")
	newest, err := b.log.ListNewest(ctx, db.AuditFilter{Actor: "ann"}, 5, 10)
	require.NoError(t, err)
	require.Len(t, newest, 2)
	require.EqualValues(t, 3, newest[0].ID)
}

// Secrets never reach the log: by field name, and every custom header's
// value.
func TestRedact(t *testing.T) {
	t.Parallel()
	type sig struct {
		Scheme string `json:"scheme"`
		Header string `json:"header"`
		Secret string `json:"secret"`
	}
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, ""},
		{"plain", map[string]any{"url": "https://x.example", "max_in_flight": 10}, `{"max_in_flight":10,"url":"https://x.example"}`},
		{"signature", map[string]any{"signature": sig{"hmac", "X-Sig", "s3cr3t-value-1234"}},
			`{"signature":{"scheme":"hmac","header":"X-Sig","secret":"[redacted]"}}`},
		{"raw JSON with spaces and escapes", json.RawMessage(` { "na\u006de" : "a\"b" , "pass\u0077ord" : [ 1 , { } ] , "headers" : { "X-A" : { "b" : 1 } } , "auth" : { } } `),
			`{"na\u006de":"a\"b","pass\u0077ord":"[redacted]","headers":{"X-A":"[redacted]"},"auth":{}}`},
		{"empty secret stays visible", map[string]any{"secret": ""}, `{"secret":""}`},
		{"keys", map[string]any{"Key": "mk_abc", "APIKeyHash": "aGFzaA==", "APIKeyPrefix": "mk_ab", "api_key": "ck_x", "public_key": "whpk_y"},
			`{"APIKeyHash":"[redacted]","APIKeyPrefix":"mk_ab","Key":"[redacted]","api_key":"[redacted]","public_key":"whpk_y"}`},
		{"headers", map[string]any{"Headers": map[string]string{"X-Api-Token": "t", "X-Tenant": "acme"}},
			`{"Headers":{"X-Api-Token":"[redacted]","X-Tenant":"[redacted]"}}`},
		{"auth and passwords", map[string]any{"auth": map[string]string{"type": "basic", "password": "p"}, "password_hash": "x", "totp_secret": "y", "token": "z"},
			`{"auth":"[redacted]","password_hash":"[redacted]","token":"[redacted]","totp_secret":"[redacted]"}`},
		{"nested in lists", []any{map[string]any{"secret": "a"}, map[string]any{"name": "b"}}, `[{"secret":"[redacted]"},{"name":"b"}]`},
		{"big numbers stay exact", map[string]any{"id": int64(9007199254740993)}, `{"id":9007199254740993}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := audit.Redact(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// Record's cost: one entry appended (a transaction holding the chain's
// head) on the test database.
func BenchmarkRecord(b *testing.B) {
	bb := setup(b)
	ctx := operator("bench@example.com")
	e := audit.Entry{Action: "endpoint.update", TargetType: "endpoint", TargetID: "1",
		Before: map[string]any{"url": "https://a.example", "max_in_flight": 10}, After: map[string]any{"url": "https://b.example", "max_in_flight": 20}}
	require.NoError(b, bb.log.Record(ctx, e))
	b.ResetTimer()
	for b.Loop() {
		if err := bb.log.Record(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// The append hashes each entry in PostgreSQL; Verify checks it with Sum.
// The two agree on every field's bytes: empty fields, lengths on each side
// of a varint's byte boundaries, multi-byte text, JSON kept as written, and
// a time that went back along the chain (moved up to the head's).
func TestAppendHashIsSum(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := b.store.AuditEnsurePartitions(ctx, now.Add(-time.Hour), 1)
	require.NoError(t, err)
	base := db.AuditEntry{At: now, ActorKind: "user", ActorRole: "owner", ActorUserID: 1 << 40, ActorTokenID: 2,
		ActorSessionID: 3, ActorMerchantID: 4, ActorCarrierID: 5, ActorName: "顺丰 operator", Addr: "[2001:db8::1]:443",
		UserAgent: "Mozilla/5.0", Action: "endpoint.update", TargetType: "endpoint", TargetID: "9",
		Before: `{"url": "https://a.example/回调",  "n":1}`, After: `{"url":"https://b.example"}`, Result: "ok"}
	var want []db.AuditEntry
	for _, n := range []int{0, 1, 127, 128, 129, 16383, 16384, 16385, 1<<21 - 1, 1 << 21} {
		e := base
		e.Error = strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		e.At = e.At.Add(time.Duration(len(want)) * time.Microsecond)
		want = append(want, e)
	}
	empty := db.AuditEntry{At: now.Add(-time.Minute), ActorKind: "system", Action: "audit.pruned", Result: "ok"}
	want = append(want, empty)
	for _, e := range want {
		require.NoError(t, b.store.AuditAppend(ctx, e, audit.Chain))
	}
	got, err := b.store.AuditList(ctx, db.AuditFilter{}, 0, 100)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range got {
		e := &got[i]
		require.Equal(t, want[i].Error, e.Error)
		require.Equal(t, want[i].Before, e.Before, "JSON is kept byte for byte, as it was hashed")
		require.Equal(t, audit.Sum(e), e.Hash, "entry %d (error of %d bytes): the database's hash is Sum", e.ID, len(e.Error))
	}
	last := got[len(got)-1]
	require.Equal(t, got[len(got)-2].At, last.At, "a time before the head's is moved up to it")
	rep := verify(t, b)
	require.True(t, rep.OK(), rep.Problem)
	require.EqualValues(t, len(want), rep.Count)
}
