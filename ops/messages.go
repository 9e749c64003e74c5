package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// UnkeyedSearchWindow is the longest window a message search may cover
// without an ordering key: a day partition's worth of history. A search
// by key reads one index entry per match on each day, and may cover any
// window.
const UnkeyedSearchWindow = 24 * time.Hour

// DefaultSearchWindow is the window of a search that names neither end:
// the last 24 hours.
const DefaultSearchWindow = 24 * time.Hour

// MaxSearchLimit bounds the messages of one search page.
const MaxSearchLimit = 1000

// MessageStates are the delivery states a search may select.
var MessageStates = []string{db.DeliveryPending, db.DeliveryDelivered, db.DeliveryDead, db.DeliveryFailed}

// MessageReader reads messages (*db.DB).
type MessageReader interface {
	MessageSearch(ctx context.Context, f db.MessageFilter, after db.MessagePosition, limit int) ([]db.MessageSummary, error)
	MessageRead(ctx context.Context, id int64, receivedAt *time.Time, merchantID int64) (db.MessageRecord, error)
}

// SearchWindow resolves a search's window from the ends given (nil: not
// given) at now: until defaults to now, since to DefaultSearchWindow before
// until. It refuses an inverted window, and one longer than
// UnkeyedSearchWindow when keyed is false.
func SearchWindow(since, until *time.Time, keyed bool, now time.Time) (time.Time, time.Time, error) {
	u := now
	if until != nil {
		u = *until
	}
	s := u.Add(-DefaultSearchWindow)
	if since != nil {
		s = *since
	}
	if s.After(u) {
		return s, u, hookrelay.Errorf(hookrelay.EINVALID, "since is after until")
	}
	if !keyed && u.Sub(s) > UnkeyedSearchWindow {
		return s, u, hookrelay.Errorf(hookrelay.EINVALID,
			"a search without ordering_key may cover at most 24 hours (one day partition); narrow since/until or give ordering_key")
	}
	return s, u, nil
}

// SearchMessages returns up to limit messages matching f (whose window
// SearchWindow resolved) before position after, newest first, as a sees
// them: the operator every message; a merchant only those with a delivery
// to one of its endpoints, and only those deliveries. Its text filters
// pass the check of every stored text (CheckSearchText).
func SearchMessages(ctx context.Context, r MessageReader, a Actor, f db.MessageFilter, after db.MessagePosition, limit int) ([]db.MessageSummary, error) {
	if limit < 1 || limit > MaxSearchLimit {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "limit must be between 1 and %d", MaxSearchLimit)
	}
	if err := CheckSearchText(f); err != nil {
		return nil, err
	}
	if f.State != "" && !validState(f.State) {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "status must be pending, delivered, dead or failed")
	}
	if f.OrderingKey == "" && f.Until.Sub(f.Since) > UnkeyedSearchWindow {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "a search without ordering_key may cover at most 24 hours")
	}
	f.MerchantID = a.MerchantID
	if len(a.Merchants) > 1 {
		return nil, hookrelay.Errorf(hookrelay.EFORBIDDEN,
			"your scope names several merchants: message search needs a scope of one merchant")
	}
	if len(a.Merchants) == 1 {
		f.MerchantID = a.Merchants[0]
	}
	return r.MessageSearch(ctx, f, after, limit)
}

// ReadMessage returns message id (receivedAt, when known, narrows the
// look-up) with its deliveries and their attempts, if a may see it: a
// merchant's view holds only its own deliveries, and a message with none
// is "not found".
func ReadMessage(ctx context.Context, r MessageReader, a Actor, id int64, receivedAt *time.Time) (db.MessageRecord, error) {
	if a.MerchantID != 0 || len(a.Merchants) == 0 {
		return r.MessageRead(ctx, id, receivedAt, a.MerchantID)
	}
	// An operator scoped to merchants sees the message as each of them
	// does: the first whose deliveries it has (scopes are short lists).
	for _, m := range a.Merchants {
		rec, err := r.MessageRead(ctx, id, receivedAt, m)
		if hookrelay.CodeOf(err) != hookrelay.ENOTFOUND {
			return rec, err
		}
	}
	return db.MessageRecord{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "message not found")
}

// errScopeMerchants refuses a listing across merchants to an operator
// scoped to several: name one of them.
var errScopeMerchants = hookrelay.Errorf(hookrelay.EINVALID,
	"your scope names several merchants: list one merchant at a time (merchant_id)")

// CheckSearchText checks the text filters of a search as every text that
// reaches the database is checked (hookrelay.CheckText), naming the API's
// parameter: a value PostgreSQL cannot take as text (invalid UTF-8, NUL)
// would fail the search's statement, and one longer than a callback may
// carry (1024 bytes) can match nothing. EINVALID, never a failed query.
func CheckSearchText(f db.MessageFilter) error {
	for _, p := range []struct{ name, value string }{
		{"ordering_key", f.OrderingKey}, {"event_type", f.EventType}, {"status", f.State},
	} {
		if err := hookrelay.CheckText(p.name, p.value, maxOrderingKey); err != nil {
			return err
		}
	}
	return nil
}

func validState(s string) bool {
	for _, v := range MessageStates {
		if v == s {
			return true
		}
	}
	return false
}

// Messages is SearchMessages on the service's database.
func (s *Service) Messages(ctx context.Context, a Actor, f db.MessageFilter, after db.MessagePosition, limit int) ([]db.MessageSummary, error) {
	return SearchMessages(ctx, s.db, a, f, after, limit)
}

// Message is ReadMessageFrom the service's database.
func (s *Service) Message(ctx context.Context, a Actor, id int64, receivedAt *time.Time) (db.MessageRecord, error) {
	return s.ReadMessageFrom(ctx, s.db, a, id, receivedAt)
}

// ReadMessageFrom is ReadMessage on r (the database, or a replica of it),
// recorded in the audit log as message.read (who looked at which message's
// body; a look-up that found nothing too). The body is returned only once
// the read is recorded.
func (s *Service) ReadMessageFrom(ctx context.Context, r MessageReader, a Actor, id int64, receivedAt *time.Time) (db.MessageRecord, error) {
	m, err := ReadMessage(ctx, r, a, id, receivedAt)
	if err = s.record(ctx, audit.Entry{Action: "message.read", TargetType: targetMessage, TargetID: audit.ID(id)}, err); err != nil {
		return db.MessageRecord{}, err
	}
	return m, nil
}
