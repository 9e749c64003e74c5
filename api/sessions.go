package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

// SessionJSON is a live dashboard session as GET /v1/sessions shows it.
type SessionJSON struct {
	ID         ID            `json:"id"`
	Kind       string        `json:"kind"` // admin | merchant | user
	MerchantID *ID           `json:"merchant_id"`
	UserID     *ID           `json:"user_id,omitempty"` // kind user
	CreatedAt  time.Time     `json:"created_at"`
	LastSeenAt time.Time     `json:"last_seen_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
	Client     SessionClient `json:"client"`
	// Portal: opened by a portal link; ReadOnly: may look, not change.
	Portal   bool `json:"portal"`
	ReadOnly bool `json:"read_only"`
}

// SessionClient is where a session logged in from.
type SessionClient struct {
	Address   string `json:"address"`
	UserAgent string `json:"user_agent"`
}

func sessionJSON(v db.LoginSessionRecord) SessionJSON {
	out := SessionJSON{ID: ID(v.ID), Kind: v.Kind, CreatedAt: v.CreatedAt, LastSeenAt: v.LastSeenAt,
		ExpiresAt: v.ExpiresAt, Client: SessionClient{Address: v.ClientAddr, UserAgent: v.UserAgent},
		Portal: v.Portal, ReadOnly: v.ReadOnly}
	if v.MerchantID != 0 {
		m := ID(v.MerchantID)
		out.MerchantID = &m
	}
	if v.UserID != 0 {
		u := ID(v.UserID)
		out.UserID = &u
	}
	return out
}

func (s *Server) listSessions(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.ops.Sessions(c.Request().Context(), cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, sessionJSON, func(r db.LoginSessionRecord) cursor { return cursor{ID: r.ID} }))
}

// revokeSession ends a dashboard session at once: 204, or 404 for an
// unknown or expired one.
func (s *Server) revokeSession(c echo.Context) error {
	id, err := pathID(c, "session")
	if err != nil {
		return err
	}
	if err := s.ops.RevokeSession(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
