package api

import (
	"context"
	"crypto/sha256"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/httperr"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/internal/tracing"
	"github.com/hookrelay/hookrelay/storage"
)

// CallbackResponse is the answer to POST /v1/callbacks.
type CallbackResponse struct {
	MessageID  string `json:"message_id"`
	Deliveries int    `json:"deliveries"`
	Duplicate  bool   `json:"duplicate"`
	// AdapterVersion is the carrier's adapter version that ran on it
	// (omitted: none); EventType the type of the canonical event it made
	// (omitted: none, the adapter dropped it or failed).
	AdapterVersion int    `json:"adapter_version,omitempty"`
	EventType      string `json:"event_type,omitempty"`
	// Parked is the adapter's error when the carrier parks the callbacks
	// its adapter fails on: accepted, delivered to raw endpoints only, and
	// kept for an operator (GET /v1/carriers/{id}/parked).
	Parked string `json:"parked,omitempty"`
}

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = ingest.MaxIdempotencyKey

// callback answers POST /v1/callbacks. With a tracer that records
// (Config.Tracer, tracing.Records) it does so within a server span of its
// own that continues the carrier's trace when the request has a
// traceparent: the message stores the span's context (acceptCallback), the
// group commit links to it and it to the commit (ingest.Batcher.Submit).
// With the no-op tracer it makes no span, and reads and stores no
// traceparent: a callback costs what it would without tracing at all.
func (s *Server) callback(c echo.Context) error {
	var span trace.Span // nil unless tracing
	if s.tracing {
		span = s.startCallbackSpan(c)
		defer span.End()
	}
	resp, code, err := s.answerCallback(c)
	if span != nil {
		endCallbackSpan(span, resp, code, err)
	}
	return err
}

// answerCallback takes the callback and answers it; it returns the answer
// and its status code, or the error for the router's error handler.
func (s *Server) answerCallback(c echo.Context) (CallbackResponse, int, error) {
	resp, status, err := s.acceptCallback(c)
	code := status
	if err != nil {
		code = hookrelay.HTTPStatus(err)
	}
	s.metrics.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	if err != nil {
		return resp, code, err
	}
	return resp, code, c.JSON(status, resp)
}

func (s *Server) acceptCallback(c echo.Context) (_ CallbackResponse, _ int, err error) {
	req := c.Request()
	ctx := req.Context()
	carrier := principalOf(c).carrier
	if err := s.admitCarrier(req, &carrier); err != nil {
		return CallbackResponse{}, 0, err
	}
	if ok, wait := s.limits.Allow(carrier.ID, carrier.RateLimitPerSec); !ok {
		return CallbackResponse{}, 0, httperr.WithRetryAfter(hookrelay.Errorf(hookrelay.ERATELIMIT,
			"carrier over its rate limit of %d callbacks/s", carrier.RateLimitPerSec), wait)
	}
	if !isJSON(req.Header.Get("Content-Type")) && !s.adapted(ctx, carrier.ID) {
		// A carrier with an adapter may send any body: the adapter reads it.
		return CallbackResponse{}, 0, hookrelay.Errorf(hookrelay.EUNSUPPORTED, "Content-Type must be application/json")
	}
	var rb ingest.Body
	if err := s.bodies.Read(req, s.cfg.MaxBodyBytes, &rb); err != nil {
		if code := hookrelay.CodeOf(err); code == hookrelay.EUNAVAILABLE || code == hookrelay.ETOOLARGE {
			// The rest of the body is not wanted: without this the server
			// would wait for up to 256 KiB more of it before answering.
			c.Response().Header().Set("Connection", "close")
		}
		return CallbackResponse{}, 0, err
	}
	// Until the batch answered: the batcher reads msg.Payload, which is
	// body, until then.
	defer rb.Free()
	body := rb.Bytes()
	// Before the Free above: a refusal keeps an excerpt of the body.
	defer func() { err = s.watch.WithBody(carrier.ID, err, body) }()
	if err := verifyCallback(req, &carrier, body); err != nil {
		return CallbackResponse{}, 0, err
	}
	idem := req.Header.Get("Idempotency-Key")
	if err := hookrelay.CheckText("Idempotency-Key", idem, maxIdempotencyKey); err != nil {
		return CallbackResponse{}, 0, err
	}
	// The snapshot first: its endpoints' content filters name more paths
	// to read in the one pass over the body.
	snap, err := s.routes.Snapshot(ctx)
	if err != nil {
		return CallbackResponse{}, 0, err
	}
	received := time.Now()
	routed, err := ingest.Route(ctx, snap, carrier, ingest.Callback{Header: req.Header, Body: body, ReceivedAt: received})
	if err != nil {
		return CallbackResponse{}, 0, err
	}
	orderingKey, eventType, merchantRef := routed.OrderingKey, routed.EventType, routed.MerchantRef

	sum := sha256.Sum256(body)
	msg := db.NewMessage{
		ReceivedAt: received, CarrierID: carrier.ID, EventType: eventType, OrderingKey: orderingKey,
		MerchantRef: merchantRef, Queue: hookrelay.QueueFor(orderingKey, s.cfg.Queues),
		IdempotencyKey: idem, PayloadSize: len(body), PayloadSHA256: sum[:],
		EndpointIDs: routed.EndpointIDs, AdapterVersion: routed.Adapter.Version,
		CanonicalType: routed.CanonicalType, CanonicalEvent: routed.CanonicalEvent, AdapterError: routed.Parked,
	}
	msg.Unordered = snap.Orderings(msg.EndpointIDs)
	if s.tracing {
		msg.Traceparent = tracing.Traceparent(trace.SpanContextFromContext(ctx))
	}
	if len(body) > s.cfg.OffloadBytes {
		err := s.offload(ctx, &msg, body)
		if err != nil {
			// The store may still be reading it after giving up.
			rb.Lend()
			return CallbackResponse{}, 0, err
		}
		// The store has its copy.
		rb.Free()
	} else {
		msg.Payload = body
	}
	stored, err := s.batcher.Submit(ctx, msg)
	if err != nil {
		// The object stays: after a lost commit acknowledgement a row may
		// name it. Retention removes it with its day otherwise.
		return CallbackResponse{}, 0, err
	}
	if msg.PayloadKey != "" && stored.Duplicate {
		// Certainly unreferenced: the first message has its own object.
		s.dropOrphan(msg.PayloadKey)
	}
	status := http.StatusAccepted
	if stored.Duplicate {
		status = http.StatusOK
	} else {
		s.metrics.callbacks.Inc()
	}
	return CallbackResponse{MessageID: strconv.FormatInt(stored.ID, 10), Deliveries: stored.Deliveries, Duplicate: stored.Duplicate,
		AdapterVersion: routed.Adapter.Version, EventType: routed.CanonicalType, Parked: routed.Parked}, status, nil
}

// adapted reports whether the carrier has an active adapter.
func (s *Server) adapted(ctx context.Context, carrierID int64) bool {
	snap, err := s.routes.Snapshot(ctx)
	if err != nil {
		return false
	}
	v, _, _ := snap.Adapter(carrierID)
	return v != 0
}

// offload writes the payload to the S3 store under the message's own id
// (reserved from messages_id_seq first) before any row exists.
func (s *Server) offload(ctx context.Context, msg *db.NewMessage, body []byte) error {
	ids, err := s.db.MessageIDsReserve(ctx, 1)
	if err != nil {
		return err
	}
	msg.ID = ids[0]
	key := storage.PayloadKey(msg.ReceivedAt, strconv.FormatInt(msg.ID, 10))
	putCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := s.payloads.Put(putCtx, key, body); err != nil {
		return httperr.WithRetryAfter(hookrelay.WrapError(hookrelay.EUNAVAILABLE, "payload store unavailable; retry later", err), 5)
	}
	s.metrics.offloaded.Inc()
	msg.PayloadKey = key
	return nil
}

// dropOrphan deletes an offloaded payload no message refers to (best
// effort: retention removes the day's objects anyway).
func (s *Server) dropOrphan(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.payloads.Delete(ctx, key); err != nil {
		s.logger.Warn("could not delete an unreferenced payload object", "key", key, "error", err)
	}
}

// isJSON reports whether a Content-Type names JSON (application/json or
// application/<something>+json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// readBody reads at most limit bytes of a small JSON body (an API request's,
// not a callback's); more is ETOOLARGE. Its buffer grows with what arrives:
// a declared Content-Length is only used to refuse early.
func readBody(req *http.Request, limit int) ([]byte, error) {
	tooLarge := func() error { return hookrelay.Errorf(hookrelay.ETOOLARGE, "body larger than %d bytes", limit) }
	if req.ContentLength > int64(limit) {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, int64(limit)+1))
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINVALID, "could not read the body", err)
	}
	if len(body) > limit {
		return nil, tooLarge()
	}
	return body, nil
}
