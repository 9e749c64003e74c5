package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// UserJSON is a user as the API shows it.
type UserJSON struct {
	ID            ID           `json:"id"`
	Email         string       `json:"email"`
	Name          string       `json:"name"`
	Role          string       `json:"role"`
	Scope         access.Scope `json:"scope"`
	AuthSource    string       `json:"auth_source"` // password | sso
	TOTP          bool         `json:"totp"`        // enrolled in TOTP
	Active        bool         `json:"active"`
	DeactivatedAt *time.Time   `json:"deactivated_at"`
	LastLoginAt   *time.Time   `json:"last_login_at"`
	CreatedAt     time.Time    `json:"created_at"`
}

func userJSON(u db.User) UserJSON {
	return UserJSON{ID: ID(u.ID), Email: u.Email, Name: u.Name, Role: u.Role.String(), Scope: u.Scope,
		AuthSource: u.AuthSource, TOTP: u.TOTPSecret != "", Active: u.Active(), DeactivatedAt: u.DeactivatedAt,
		LastLoginAt: u.LastLoginAt, CreatedAt: u.CreatedAt}
}

// who is the principal of the request (its context has it too).
func who(c echo.Context) access.Principal { return principalOf(c).who }

func (s *Server) listUsers(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.ops.Users(c.Request().Context(), who(c), cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, userJSON, func(u db.User) cursor { return cursor{ID: u.ID} }))
}

type inviteRequest struct {
	Email string       `json:"email"`
	Role  string       `json:"role"`
	Scope access.Scope `json:"scope"`
}

// inviteUser makes a single-use invitation link, on the address this
// request came to (the dashboard shares it).
func (s *Server) inviteUser(c echo.Context) error {
	var req inviteRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	role, err := access.ParseRole(req.Role)
	if err != nil {
		return invalidf("role must be one of viewer, support, operator, admin, owner")
	}
	inv, err := s.ops.InviteUser(c.Request().Context(), who(c), ops.InviteInput{Email: req.Email, Role: role, Scope: req.Scope})
	if err != nil {
		return err
	}
	u := url.URL{Scheme: c.Scheme(), Host: c.Request().Host, Path: ops.InvitePath, RawQuery: url.Values{"token": {inv.Token}}.Encode()}
	return c.JSON(http.StatusCreated, map[string]any{"invite_url": u.String(), "expires_at": inv.ExpiresAt})
}

type userPatchRequest struct {
	Role  *string       `json:"role"`
	Scope *access.Scope `json:"scope"`
	Name  *string       `json:"name"`
}

func (s *Server) patchUser(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	var req userPatchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	p := ops.UserPatch{Scope: req.Scope, Name: req.Name}
	if req.Role != nil {
		r, err := access.ParseRole(*req.Role)
		if err != nil {
			return invalidf("role must be one of viewer, support, operator, admin, owner")
		}
		p.Role = &r
	}
	u, err := s.ops.UpdateUser(c.Request().Context(), who(c), id, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

// deactivateUser ends the user's sessions and tokens at once.
func (s *Server) deactivateUser(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	u, err := s.ops.DeactivateUser(c.Request().Context(), who(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

func (s *Server) reactivateUser(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	u, err := s.ops.ReactivateUser(c.Request().Context(), who(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userJSON(u))
}

// resetUser makes a single-use password reset link for an existing
// password user, on the address this request came to (the dashboard
// shares it).
func (s *Server) resetUser(c echo.Context) error {
	id, err := pathID(c, "user")
	if err != nil {
		return err
	}
	inv, err := s.ops.ResetUser(c.Request().Context(), who(c), id)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: c.Scheme(), Host: c.Request().Host, Path: ops.ResetPath, RawQuery: url.Values{"token": {inv.Token}}.Encode()}
	return c.JSON(http.StatusCreated, map[string]any{"reset_url": u.String(), "expires_at": inv.ExpiresAt})
}

// TokenJSON is an API token as the API shows it (never the token itself,
// but once, at creation: Token).
type TokenJSON struct {
	ID         ID           `json:"id"`
	Name       string       `json:"name"`
	Prefix     string       `json:"prefix"`
	UserID     *ID          `json:"user_id"` // null: a service token
	UserEmail  string       `json:"user_email,omitempty"`
	Service    bool         `json:"service"`
	Role       string       `json:"role"`
	Scope      access.Scope `json:"scope"`
	CreatedAt  time.Time    `json:"created_at"`
	ExpiresAt  *time.Time   `json:"expires_at"`
	LastUsedAt *time.Time   `json:"last_used_at"`
	Token      string       `json:"token,omitempty"`
}

func tokenJSON(t db.APIToken) TokenJSON {
	out := TokenJSON{ID: ID(t.ID), Name: t.Name, Prefix: t.Prefix, UserEmail: t.UserEmail, Service: t.UserID == 0,
		Role: t.Role.String(), Scope: t.Scope, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt}
	if t.UserID != 0 {
		id := ID(t.UserID)
		out.UserID = &id
	}
	return out
}

func (s *Server) listTokens(c echo.Context) error {
	limit, cur, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.ops.Tokens(c.Request().Context(), who(c), cur.ID, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page(rows, limit, tokenJSON, func(t db.APIToken) cursor { return cursor{ID: t.ID} }))
}

type tokenRequest struct {
	Name      string       `json:"name"`
	Role      string       `json:"role"`
	Scope     access.Scope `json:"scope"`
	ExpiresIn *string      `json:"expires_in"`
	ExpiresAt *time.Time   `json:"expires_at"`
	Service   bool         `json:"service"`
}

// createToken creates an API token: 201 with the token, shown this once.
func (s *Server) createToken(c echo.Context) error {
	var req tokenRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	role, err := access.ParseRole(req.Role)
	if err != nil {
		return invalidf("role must be one of viewer, support, operator, admin, owner")
	}
	in := ops.TokenInput{Name: req.Name, Role: role, Scope: req.Scope, ExpiresAt: req.ExpiresAt, Service: req.Service}
	if req.ExpiresIn != nil {
		if req.ExpiresAt != nil {
			return invalidf("give expires_in or expires_at, not both")
		}
		d, err := time.ParseDuration(*req.ExpiresIn)
		if err != nil || d <= 0 {
			return invalidf("expires_in must be a positive duration, such as \"720h\"")
		}
		at := time.Now().Add(d).UTC().Truncate(time.Second)
		in.ExpiresAt = &at
	}
	t, err := s.ops.CreateToken(c.Request().Context(), who(c), in)
	if err != nil {
		return err
	}
	out := tokenJSON(t.APIToken)
	out.Token = t.Token
	return c.JSON(http.StatusCreated, out)
}

// revokeToken revokes a token at once: 204.
func (s *Server) revokeToken(c echo.Context) error {
	id, err := pathID(c, "API token")
	if err != nil {
		return err
	}
	if err := s.ops.RevokeToken(c.Request().Context(), who(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
