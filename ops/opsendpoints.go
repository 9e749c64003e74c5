package ops

import (
	"context"
	"slices"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// MaxOpsDescription bounds an ops endpoint's description.
const MaxOpsDescription = 500

// NewOpsEndpoint is an ops endpoint to create.
type NewOpsEndpoint struct {
	URL         string
	Events      []string // empty: every event type
	Description string
}

// CreateOpsEndpoint stores an operator's receiver of operational webhooks
// with a new Standard Webhooks secret (returned in it, shown once). Its URL
// passes the endpoints' URL policy (a refused one is a *FieldError of
// "url"); the stored URL is the normalised one.
func (s *Service) CreateOpsEndpoint(ctx context.Context, in NewOpsEndpoint) (out db.OpsEndpoint, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "ops_endpoint.create", TargetType: targetOpsEndpoint, TargetID: audit.ID(out.ID), After: out}, err)
	}()
	u, err := s.checkURL(ctx, in.URL)
	if err != nil {
		return db.OpsEndpoint{}, asField(fieldURL, err)
	}
	for i, ev := range in.Events {
		if !hookrelay.IsOpsEventType(ev) {
			return db.OpsEndpoint{}, hookrelay.Errorf(hookrelay.EINVALID, "events[%d]: unknown event type %q", i, ev)
		}
		if slices.Contains(in.Events[:i], ev) {
			return db.OpsEndpoint{}, hookrelay.Errorf(hookrelay.EINVALID, "events[%d]: %q named twice", i, ev)
		}
	}
	if len(in.Description) > MaxOpsDescription {
		return db.OpsEndpoint{}, hookrelay.Errorf(hookrelay.EINVALID, "description longer than %d characters", MaxOpsDescription)
	}
	if err := hookrelay.CheckText("description", in.Description, 0); err != nil {
		return db.OpsEndpoint{}, err
	}
	return s.db.OpsEndpointCreate(ctx, u, in.Events, in.Description, hookrelay.NewSecret())
}

// OpsEndpoints lists the ops endpoints.
func (s *Service) OpsEndpoints(ctx context.Context) ([]db.OpsEndpoint, error) {
	return s.db.OpsEndpointList(ctx)
}

// DeleteOpsEndpoint deletes ops endpoint id and the messages waiting for it.
func (s *Service) DeleteOpsEndpoint(ctx context.Context, id int64) error {
	ctx, done := s.unit(ctx)
	err := s.db.OpsEndpointDelete(ctx, id)
	return done(audit.Entry{Action: "ops_endpoint.delete", TargetType: targetOpsEndpoint, TargetID: audit.ID(id)}, err)
}
