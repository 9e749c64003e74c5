package ops

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/adapter"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// MaxAdapterNote bounds an adapter version's note.
const MaxAdapterNote = 1024

// NewAdapter is a new version of a carrier's adapter.
type NewAdapter struct {
	Source string
	Note   string
}

// CreateAdapter stores a new, inactive version of the carrier's adapter.
// An empty source, or one that does not compile, is hookrelay.EINVALID
// naming the line. Operators only.
func (s *Service) CreateAdapter(ctx context.Context, carrierID int64, in NewAdapter) (created db.CarrierAdapter, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.adapter_create", TargetType: targetCarrier, TargetID: audit.ID(carrierID),
			After: map[string]any{"version": created.Version, "note": in.Note, "source": in.Source}}, err)
	}()
	if strings.TrimSpace(in.Source) == "" {
		return db.CarrierAdapter{}, hookrelay.Errorf(hookrelay.EINVALID, "source must not be empty")
	}
	if err := hookrelay.CheckText("note", in.Note, MaxAdapterNote); err != nil {
		return db.CarrierAdapter{}, err
	}
	if err := hookrelay.CheckText("source", in.Source, adapter.MaxSourceLength); err != nil {
		return db.CarrierAdapter{}, err
	}
	if _, err := adapter.Compile(in.Source, ingest.AdapterLimits); err != nil {
		var ce *adapter.CompileError
		if errors.As(err, &ce) {
			return db.CarrierAdapter{}, hookrelay.WrapError(hookrelay.EINVALID, "source does not compile: "+ce.Error(), err)
		}
		return db.CarrierAdapter{}, hookrelay.WrapError(hookrelay.EINVALID, "source does not compile: "+hookrelay.ErrorMessage(err), err)
	}
	return s.db.CarrierAdapterCreate(ctx, carrierID, in.Source, in.Note)
}

// AdapterList is a carrier's adapter versions, newest first, and the one
// its callbacks go through.
type AdapterList struct {
	Carrier  db.Carrier
	Versions []db.CarrierAdapter
}

// CarrierAdapters returns the carrier's adapter versions. Operators only.
func (s *Service) CarrierAdapters(ctx context.Context, carrierID int64) (AdapterList, error) {
	car, err := s.db.CarrierGet(ctx, carrierID)
	if err != nil {
		return AdapterList{}, err
	}
	vs, err := s.db.CarrierAdapterList(ctx, carrierID)
	if err != nil {
		return AdapterList{}, err
	}
	return AdapterList{Carrier: car, Versions: vs}, nil
}

// CarrierAdapter returns one version of the carrier's adapter with its
// source. Operators only.
func (s *Service) CarrierAdapter(ctx context.Context, carrierID int64, version int) (db.CarrierAdapter, error) {
	if _, err := s.db.CarrierGet(ctx, carrierID); err != nil {
		return db.CarrierAdapter{}, err
	}
	return s.db.CarrierAdapterGet(ctx, carrierID, version)
}

// ActivateAdapter makes version the adapter the carrier's callbacks go
// through from now on (rolling back is activating an older one); 0 turns
// adapters off. Operators only.
func (s *Service) ActivateAdapter(ctx context.Context, carrierID int64, version int) (car db.Carrier, err error) {
	// Deferred first, so it runs once the change is committed.
	defer s.refreshRoutesAfter(ctx, &err)
	var before int
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.adapter_activate", TargetType: targetCarrier, TargetID: audit.ID(carrierID),
			Before: map[string]any{"adapter_version": before}, After: map[string]any{"adapter_version": version}}, err)
	}()
	if cur, err := s.db.CarrierGet(ctx, carrierID); err == nil {
		before = cur.AdapterVersion
	}
	return s.db.CarrierAdapterActivate(ctx, carrierID, version)
}

// refreshRoutesAfter reloads the routing snapshot when the action whose
// error *err is succeeded, so that this process routes by the change at
// once (the others follow its notification or their reload).
func (s *Service) refreshRoutesAfter(ctx context.Context, err *error) {
	if *err == nil {
		_, _ = s.routes.Refresh(ctx)
	}
}

// SetAdapterOnFailure sets what the carrier's callbacks its adapter fails
// on become: db.AdapterRefuse or db.AdapterPark. Operators only.
func (s *Service) SetAdapterOnFailure(ctx context.Context, carrierID int64, mode string) (car db.Carrier, err error) {
	defer s.refreshRoutesAfter(ctx, &err)
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.adapter_on_failure", TargetType: targetCarrier, TargetID: audit.ID(carrierID),
			After: map[string]any{"adapter_on_failure": mode}}, err)
	}()
	if mode != db.AdapterRefuse && mode != db.AdapterPark {
		return db.Carrier{}, hookrelay.Errorf(hookrelay.EINVALID, "adapter_on_failure must be %q or %q", db.AdapterRefuse, db.AdapterPark)
	}
	return s.db.CarrierSetAdapterOnFailure(ctx, carrierID, mode)
}

// storedBody returns the original body of a stored callback, from the S3
// store when it was offloaded.
func (s *Service) storedBody(ctx context.Context, m db.StoredCallback) ([]byte, error) {
	if m.PayloadKey == "" {
		return m.Payload, nil
	}
	if s.cfg.Payloads == nil {
		return nil, hookrelay.Errorf(hookrelay.EUNAVAILABLE, "no payload store to read the offloaded body from")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	b, err := s.cfg.Payloads.Get(ctx, m.PayloadKey)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the payload store cannot be read; try again", err)
	}
	return b, nil
}
