package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/ops"
)

// portalLinkRequest is the body of POST /v1/merchants/{id}/portal-links.
type portalLinkRequest struct {
	TTL      *string `json:"ttl"`
	ReadOnly bool    `json:"read_only"`
}

// createPortalLink makes a single-use magic link into the merchant portal,
// on the address this request came to (the dashboard shares it).
func (s *Server) createPortalLink(c echo.Context) error {
	id, err := pathID(c, "merchant")
	if err != nil {
		return err
	}
	var req portalLinkRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	ttl := ops.DefaultPortalLinkTTL
	if req.TTL != nil {
		if ttl, err = time.ParseDuration(*req.TTL); err != nil {
			return invalidf("ttl must be between 1m and 24h, such as \"15m\"")
		}
	}
	link, err := s.ops.CreatePortalLink(c.Request().Context(), id, ttl, req.ReadOnly)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: c.Scheme(), Host: c.Request().Host, Path: ops.PortalLinkPath, RawQuery: url.Values{"token": {link.Token}}.Encode()}
	return c.JSON(http.StatusCreated, map[string]any{"url": u.String(), "expires_at": link.ExpiresAt, "read_only": req.ReadOnly})
}
