package audit

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
)

// KindAnonymous is the actor of an attempt by someone not authenticated
// (a failed login): the entry keeps where it came from.
const KindAnonymous access.Kind = "anonymous"

// Result of an entry whose action succeeded.
const ResultOK = "ok"

// Actions the package itself records.
const (
	// ActionPruned: retention dropped day partitions of the log; After
	// names them and the last entry dropped (the chain's new anchor).
	ActionPruned = "audit.pruned"
)

// Entry is what an action records.
type Entry struct {
	// Action is "<target>.<verb>" ("endpoint.update", "message.read").
	Action     string
	TargetType string
	TargetID   string
	// Before and After are the target's configuration before and after
	// the action (nil: none), any JSON-encodable value; secrets are
	// redacted before it is stored (Redact).
	Before, After any
	// Err is the action's error (nil: it succeeded).
	Err error
	// Actor, when not nil, is who acted instead of the principal in the
	// context (a login, before the session exists; a failed login).
	Actor *access.Principal
}

// Result returns e with its Err set to err: the one-line form of a
// recording call.
func (e Entry) Result(err error) Entry {
	e.Err = err
	return e
}

// ID formats an id as a target id ("" for 0: none).
func ID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// Store is the audit log's database (*db.DB).
type Store interface {
	AuditAppend(ctx context.Context, e db.AuditEntry, chain db.AuditChain) error
	AuditEnsurePartitions(ctx context.Context, from time.Time, days int) (int, error)
	AuditPrune(ctx context.Context, before time.Time, record func(db.AuditPruned) db.AuditEntry, chain db.AuditChain) (db.AuditPruned, error)
	AuditHeadGet(ctx context.Context) (db.AuditHead, error)
	AuditList(ctx context.Context, f db.AuditFilter, afterID int64, limit int) ([]db.AuditEntry, error)
	AuditListDesc(ctx context.Context, f db.AuditFilter, beforeID int64, limit int) ([]db.AuditEntry, error)
}

// DefaultRetention is how long entries are kept by default
// (HOOKRELAY_AUDIT_RETENTION).
const DefaultRetention = 400 * 24 * time.Hour

// Config configures the log.
type Config struct {
	// SystemName names the actor of the actions of a context without a
	// principal (access.KindSystem). Default "system"; the command line
	// sets "cli".
	SystemName string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Log records entries into the audit log and reads them back.
type Log struct {
	store Store
	cfg   Config
	// ensuredDay is the last day (Unix days) whose partition, and the
	// next day's, Record made sure of.
	ensuredDay atomic.Int64
}

// New returns the audit log kept in store.
func New(store Store, cfg Config) *Log {
	cfg.SystemName = cmp.Or(cfg.SystemName, "system")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{store: store, cfg: cfg}
}

// recordTimeout bounds the write of one entry.
const recordTimeout = 30 * time.Second

// Limits of an entry's texts: longer ones are cut (a user agent, an error
// message) rather than failing the action.
const (
	// MaxText is the longest text of an entry (a name, an address, an
	// error message...).
	MaxText   = 1000
	maxConfig = 64 << 10
)

// Record appends e to the log, as done by the principal in ctx (or
// e.Actor), now. Its error is hookrelay.EUNAVAILABLE when the entry could
// not be written.
func (l *Log) Record(ctx context.Context, e Entry) error {
	// An action done is recorded even when its client has gone: the
	// write outlives the request's context (not its principal), bounded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	row, err := l.entry(ctx, e)
	if err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the action could not be recorded in the audit log", err)
	}
	if err := l.ensure(row.At); err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the action could not be recorded in the audit log", err)
	}
	if err := l.store.AuditAppend(ctx, row, Chain); err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the action could not be recorded in the audit log", err)
	}
	return nil
}

// ensure makes sure the day partitions of at and of the day after exist,
// once a day per process (the maintenance role makes them days ahead; this
// covers a command line or a log without one).
func (l *Log) ensure(at time.Time) error {
	day := at.UTC().Unix() / 86400
	if l.ensuredDay.Load() >= day {
		return nil
	}
	// On a context of its own, outside the caller's unit of work: a day
	// table made is committed at once, and its lock on audit_log is not
	// held while the unit waits for the chain's head.
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := l.store.AuditEnsurePartitions(ctx, at, 1); err != nil {
		return err
	}
	l.ensuredDay.Store(day)
	return nil
}

// entry builds the row of e.
func (l *Log) entry(ctx context.Context, e Entry) (db.AuditEntry, error) {
	p, ok := access.FromContext(ctx)
	if e.Actor != nil {
		p, ok = *e.Actor, true
	}
	if !ok || p.Kind == "" {
		p = access.Principal{Kind: access.KindSystem, Name: l.cfg.SystemName}
	}
	row := db.AuditEntry{
		At: l.cfg.Now(), ActorKind: string(p.Kind), ActorRole: p.Role.String(), ActorUserID: p.UserID,
		ActorTokenID: p.TokenID, ActorSessionID: p.SessionID, ActorMerchantID: p.MerchantID,
		ActorCarrierID: p.CarrierID, ActorName: text(p.Name), Addr: text(p.Addr), UserAgent: text(p.UserAgent),
		Action: text(e.Action), TargetType: text(e.TargetType), TargetID: text(e.TargetID), Result: ResultOK,
	}
	if e.Err != nil {
		row.Result = string(hookrelay.CodeOf(e.Err))
		row.Error = text(hookrelay.ErrorMessage(e.Err))
	}
	var err error
	if row.Before, err = config(e.Before); err != nil {
		return row, err
	}
	if row.After, err = config(e.After); err != nil {
		return row, err
	}
	return row, nil
}

// config is v as stored: redacted JSON, replaced by a note when too long.
func config(v any) (string, error) {
	s, err := Redact(v)
	if err != nil {
		return "", err
	}
	if len(s) > maxConfig {
		return `{"truncated":true}`, nil
	}
	return s, nil
}

// text is s as an entry keeps it: valid UTF-8 without NUL, at most MaxText
// bytes.
func text(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= MaxText {
		return s
	}
	for i := MaxText; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return ""
}

// Prune drops the day partitions whose whole day is older than retention
// at now, and appends an audit.pruned entry naming the last entry they
// held, the chain's new anchor, in the same transaction.
func (l *Log) Prune(ctx context.Context, now time.Time, retention time.Duration) (db.AuditPruned, error) {
	if retention <= 0 {
		return db.AuditPruned{}, errors.New("audit retention must be positive")
	}
	if _, err := l.store.AuditEnsurePartitions(ctx, now, 3); err != nil {
		return db.AuditPruned{}, err
	}
	record := func(p db.AuditPruned) db.AuditEntry {
		after, _ := json.Marshal(pruned{Partitions: p.Dropped, ThroughID: ID(p.ThroughID), ThroughHash: hex.EncodeToString(p.ThroughHash)})
		return db.AuditEntry{At: now, ActorKind: string(access.KindSystem), ActorName: "maintenance",
			Action: ActionPruned, TargetType: "audit_log", TargetID: ID(p.ThroughID), After: string(after), Result: ResultOK}
	}
	return l.store.AuditPrune(ctx, now.Add(-retention), record, Chain)
}

// List returns up to limit entries matching f with ids above afterID, in
// chain order.
func (l *Log) List(ctx context.Context, f db.AuditFilter, afterID int64, limit int) ([]db.AuditEntry, error) {
	return l.store.AuditList(ctx, f, afterID, limit)
}

// ListNewest returns up to limit entries matching f with ids below
// beforeID (0: from the newest), newest first.
func (l *Log) ListNewest(ctx context.Context, f db.AuditFilter, beforeID int64, limit int) ([]db.AuditEntry, error) {
	return l.store.AuditListDesc(ctx, f, beforeID, limit)
}
