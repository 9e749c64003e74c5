package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/web"
)

// startWeb mounts the dashboard under /ui/ on the shared router. It has no
// loop of its own. Its settings are read by loadConfig.
func startWeb(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	dash, err := web.New(ctx, web.Config{
		Logger:       s.logger.With("role", "web"),
		Store:        s.db,
		Operator:     webOperator{db: s.db},
		Pinger:       webPinger{pingerFor(s)},
		Presigner:    s.store,
		Queues:       s.cfg.Web.Queues,
		SecureCookie: s.cfg.Web.SecureCookie,
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dash.Mount(s.echo, "/ui")
	return nil, nil
}

// webOperator carries out the dashboard's operator actions through the db
// functions of the API work.
type webOperator struct {
	db *db.DB
}

func deadLetterFilter(f db.DeadLetterQuery) db.DeadLetterFilter {
	return db.DeadLetterFilter{EndpointID: f.EndpointID, CarrierID: f.CarrierID, MerchantID: f.MerchantID, Since: f.Since}
}

// RetryDeadLetters puts dead letters back into the queue: ids when given,
// else every one matching f.
func (o webOperator) RetryDeadLetters(ctx context.Context, ids []int64, f db.DeadLetterQuery) (int64, error) {
	if len(ids) == 0 {
		ids = nil
	}
	return o.db.DeadLetterRetry(ctx, ids, deadLetterFilter(f))
}

// DiscardDeadLetters deletes dead letters: ids when given, else every one
// matching f.
func (o webOperator) DiscardDeadLetters(ctx context.Context, ids []int64, f db.DeadLetterQuery) (int64, error) {
	if len(ids) == 0 {
		ids = nil
	}
	return o.db.DeadLetterDiscard(ctx, ids, deadLetterFilter(f))
}

// RetryDelivery makes a waiting delivery due now.
func (o webOperator) RetryDelivery(ctx context.Context, id int64) error {
	waiting, err := o.db.DeliveryRetryPending(ctx, id)
	if err != nil {
		return err
	}
	if !waiting {
		return hookrelay.Errorf(hookrelay.ECONFLICT,
			"the delivery is not waiting for a retry: it is due already, in flight, held behind an earlier delivery of its key or for a disabled endpoint, or finished")
	}
	return nil
}

// RotateSecret stores a new Standard Webhooks secret for the endpoint; the
// previous ones keep signing for db.SecretOverlap.
func (o webOperator) RotateSecret(ctx context.Context, endpointID int64) (string, error) {
	secret := hookrelay.NewSecret()
	if err := o.db.EndpointSecretRotate(ctx, endpointID, secret); err != nil {
		return "", err
	}
	return secret, nil
}

// webPinger sends the dashboard's test pings through the same pinger as the
// API (the dispatcher's sender when the dispatch role runs in this process).
type webPinger struct{ p ingest.Pinger }

func (w webPinger) PingEndpoint(ctx context.Context, endpointID int64) (web.PingResult, error) {
	r, err := w.p.PingEndpoint(ctx, endpointID)
	if err != nil {
		return web.PingResult{}, err
	}
	res := web.PingResult{StatusCode: r.StatusCode, Latency: time.Duration(r.LatencyMS) * time.Millisecond,
		Error: r.Error, ResponseExcerpt: r.ResponseExcerpt}
	if !r.Success && res.Error == "" {
		res.Error = fmt.Sprintf("HTTP %d", r.StatusCode)
	}
	return res, nil
}
