package db

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DeliveryFailed is the state of a delivery gone from the queue without
// success (its endpoint was deleted): known only from its attempts.
const DeliveryFailed = "failed"

// MessageFilter selects messages received in [Since, Until); zero fields
// match everything.
type MessageFilter struct {
	Since, Until time.Time
	OrderingKey  string // exact
	CarrierID    int64
	EventType    string
	// EndpointID, State and MerchantID select the messages with a delivery
	// to that endpoint, in that state (pending | delivered | dead | failed),
	// to an endpoint of that merchant.
	EndpointID int64
	State      string
	MerchantID int64
}

// MessagePosition is a keyset position in a search, newest first by
// arrival: the next page holds the messages of lower id.
type MessagePosition struct {
	ID int64
}

// MessageSummary is a message as a search lists it: without its payload,
// with its deliveries (only those to the filter's merchant's endpoints when
// it names one).
type MessageSummary struct {
	ID          int64
	ReceivedAt  time.Time
	CarrierID   int64
	EventType   string
	OrderingKey string
	PayloadSize int
	Offloaded   bool
	Deliveries  []MessageDelivery
}

// MessageDelivery is one delivery of a message in whatever state it is.
type MessageDelivery struct {
	ID            int64
	EndpointID    int64
	State         string // pending | delivered | dead | failed
	Attempts      int
	LastStatus    int        // 0 when none was recorded
	NextAttemptAt *time.Time // pending and not parked: when it is due
	AttemptList   []Attempt  // MessageRead only
}

// MessageSearch returns up to limit messages matching f before position
// after (the zero position: from the newest), newest first by arrival (id).
// A search by endpoint, state or merchant reads candidates (see the query)
// a page at a time and keeps those with a matching delivery, until it has
// limit of them or the window has no more candidates.
func (db *DB) MessageSearch(ctx context.Context, f MessageFilter, after MessagePosition, limit int) ([]MessageSummary, error) {
	p := dbsqlc.MessageSearchParams{
		ByKey: f.OrderingKey != "", OrderingKey: f.OrderingKey, Lim: int32(limit),
		Since: f.Since, Until: f.Until, BeforeID: after.ID,
		CarrierID: optID(f.CarrierID), EventType: optText(f.EventType),
		Scoped:     f.EndpointID != 0 || f.State != "" || f.MerchantID != 0,
		EndpointID: optID(f.EndpointID), State: optText(f.State), MerchantID: optID(f.MerchantID),
	}
	if after.ID == 0 {
		p.BeforeID = math.MaxInt64
	}
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("search messages: %w", unavailable(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Each statement is planned for its own arguments (searchPlanning).
	if _, err := tx.Exec(ctx, searchPlanning); err != nil {
		return nil, fmt.Errorf("search messages: %w", unavailable(err))
	}
	q := dbsqlc.New(tx)
	var out []MessageSummary
	next := searchPage
	if !p.ByKey && (f.State == DeliveryPending || f.State == DeliveryDead || f.EndpointID != 0 || f.MerchantID != 0) {
		next = searchSetPage
	}
	for {
		page, read, last, err := next(ctx, q, p)
		if err != nil {
			return nil, fmt.Errorf("search messages: %w", unavailable(err))
		}
		dels, err := messageDeliveries(ctx, q, page, f.MerchantID)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			m.Deliveries = dels[m.ID]
			if !p.Scoped || f.matches(m.Deliveries) {
				out = append(out, m)
			}
			if len(out) == limit {
				return out, nil
			}
		}
		if read < int(p.Lim) {
			return out, nil
		}
		p.BeforeID = last
	}
}

// searchPlanning has a search's statements planned for their arguments at
// every call. Their filters are optional (NULL matches everything) and their
// sets (the page's ids) of any size, so a generic plan, which PostgreSQL
// adopts for a prepared statement after five calls when it looks no more
// costly than the custom ones, cannot drop the filters that were not given
// nor size the sets: one kept for a session read every message of a small
// table sequentially (TestMessageSearchByEndpointReadsItsAttempts). A
// search is an operator's query, rare beside its planning cost. LOCAL: it
// ends with the transaction, so no session (nor a pooler's server
// connection) keeps it.
const searchPlanning = "SET LOCAL plan_cache_mode = force_custom_plan"

// searchPage reads the next page of candidates by walking the window's
// messages newest first; read is how many rows it read, last the id to
// continue below.
func searchPage(ctx context.Context, q *dbsqlc.Queries, p dbsqlc.MessageSearchParams) (page []MessageSummary, read int, last int64, err error) {
	rows, err := q.MessageSearch(ctx, p)
	if err != nil {
		return nil, 0, 0, err
	}
	page = make([]MessageSummary, len(rows))
	for i, r := range rows {
		page[i] = MessageSummary{
			ID: r.ID, ReceivedAt: r.ReceivedAt, CarrierID: r.CarrierID, EventType: r.EventType,
			OrderingKey: r.OrderingKey, PayloadSize: int(r.PayloadSize), Offloaded: r.Offloaded,
		}
	}
	if len(rows) > 0 {
		last = rows[len(rows)-1].ID
	}
	return page, len(rows), last, nil
}

// searchSetPage reads the next page of candidates of a search by endpoint,
// merchant, or state pending or dead from the endpoints' attempts, the
// queue or the dead letters rather than from the window's messages (a rare
// endpoint or state would have the walk read millions of them), then the
// candidates' messages that match the other filters.
func searchSetPage(ctx context.Context, q *dbsqlc.Queries, p dbsqlc.MessageSearchParams) (page []MessageSummary, read int, last int64, err error) {
	cands, err := q.MessageCandidatesList(ctx, dbsqlc.MessageCandidatesListParams{
		State: p.State, Since: p.Since, Until: p.Until, BeforeID: p.BeforeID,
		EndpointID: p.EndpointID, MerchantID: p.MerchantID, Lim: p.Lim,
	})
	if err != nil || len(cands) == 0 {
		return nil, 0, 0, err
	}
	var sp dbsqlc.MessageSummariesListParams
	for i, c := range cands {
		if i > 0 && c.MessageID == cands[i-1].MessageID {
			continue // several deliveries of the message in that state
		}
		sp.IDs = append(sp.IDs, c.MessageID)
		sp.ReceivedAts = append(sp.ReceivedAts, c.MessageReceivedAt)
	}
	sp.CarrierID, sp.EventType = p.CarrierID, p.EventType
	rows, err := q.MessageSummariesList(ctx, sp)
	if err != nil {
		return nil, 0, 0, err
	}
	page = make([]MessageSummary, len(rows))
	for i, r := range rows {
		page[i] = MessageSummary{
			ID: r.ID, ReceivedAt: r.ReceivedAt, CarrierID: r.CarrierID, EventType: r.EventType,
			OrderingKey: r.OrderingKey, PayloadSize: int(r.PayloadSize), Offloaded: r.Offloaded,
		}
	}
	return page, len(cands), cands[len(cands)-1].MessageID, nil
}

// matches reports whether one of a message's deliveries (those to the
// filter's merchant's endpoints when it names one) is to the filter's
// endpoint and in its state.
func (f MessageFilter) matches(dels []MessageDelivery) bool {
	for _, d := range dels {
		if (f.EndpointID == 0 || d.EndpointID == f.EndpointID) && (f.State == "" || d.State == f.State) {
			return true
		}
	}
	return false
}

// messageDeliveries returns the deliveries of msgs by message id, only those
// to endpoints of merchantID when it is not 0.
func messageDeliveries(ctx context.Context, q *dbsqlc.Queries, msgs []MessageSummary, merchantID int64) (map[int64][]MessageDelivery, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	var p dbsqlc.MessageDeliveriesListParams
	for _, m := range msgs {
		p.IDs = append(p.IDs, m.ID)
		p.ReceivedAts = append(p.ReceivedAts, m.ReceivedAt)
		p.OrderingKeys = append(p.OrderingKeys, m.OrderingKey)
	}
	p.MerchantID = optID(merchantID)
	rows, err := q.MessageDeliveriesList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("deliveries of messages: %w", unavailable(err))
	}
	out := make(map[int64][]MessageDelivery, len(msgs))
	for _, r := range rows {
		d := MessageDelivery{
			ID: r.DeliveryID, EndpointID: r.EndpointID, State: r.State,
			Attempts: int(r.Attempts), LastStatus: int(r.LastStatus),
		}
		if !NeverDue(r.NextAttemptAt) {
			t := r.NextAttemptAt
			d.NextAttemptAt = &t
		}
		out[r.MessageID] = append(out[r.MessageID], d)
	}
	return out, nil
}

// MessageRecord is everything known about one message: the message with its
// payload, and each of its deliveries with its attempts.
type MessageRecord struct {
	Message
	DeliveryList []MessageDelivery
}

// messageAttempts is how many attempts of each delivery MessageRead returns.
const messageAttempts = 200

// MessageRead returns message id with its deliveries and each one's first
// attempts; receivedAt (optional) narrows the look-up to one day partition.
// With merchantID not 0 only the deliveries to that merchant's endpoints
// are returned, and a message with none is hookrelay.ENOTFOUND, as is one
// that does not exist. The API's message and the dashboard's message page
// both read through here.
func (db *DB) MessageRead(ctx context.Context, id int64, receivedAt *time.Time, merchantID int64) (MessageRecord, error) {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return MessageRecord{}, fmt.Errorf("read message: %w", unavailable(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := dbsqlc.New(tx)
	r, err := q.MessageLookup(ctx, dbsqlc.MessageLookupParams{ID: id, ReceivedAt: receivedAt})
	if err != nil {
		return MessageRecord{}, notFound(unavailableUnlessNoRows(err), "message")
	}
	rec := MessageRecord{Message: messageFrom(r)}
	dels, err := messageDeliveries(ctx, q, []MessageSummary{{ID: r.ID, ReceivedAt: r.ReceivedAt, OrderingKey: r.OrderingKey}}, merchantID)
	if err != nil {
		return MessageRecord{}, err
	}
	rec.DeliveryList = dels[r.ID]
	if merchantID != 0 && len(rec.DeliveryList) == 0 {
		return MessageRecord{}, notFound(pgx.ErrNoRows, "message")
	}
	for i := range rec.DeliveryList {
		if rec.DeliveryList[i].AttemptList, err = attemptsOf(ctx, q, rec.DeliveryList[i].ID, messageAttempts); err != nil {
			return MessageRecord{}, err
		}
	}
	return rec, nil
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
