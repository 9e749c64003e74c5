package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// OpsEndpointJSON is an ops endpoint as the API shows it. Secret appears only
// in the answer to its creation.
type OpsEndpointJSON struct {
	ID          ID        `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Secret      string    `json:"secret,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func opsEndpointJSON(o db.OpsEndpoint) OpsEndpointJSON {
	events := o.Events
	if events == nil {
		events = []string{}
	}
	return OpsEndpointJSON{ID: ID(o.ID), URL: o.URL, Events: events, Description: o.Description, CreatedAt: o.CreatedAt}
}

type createOpsEndpointRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

// createOpsEndpoint registers an operator's receiver of operational
// webhooks: 201 with its secret, shown this once.
func (s *Server) createOpsEndpoint(c echo.Context) error {
	var req createOpsEndpointRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	o, err := s.ops.CreateOpsEndpoint(c.Request().Context(), ops.NewOpsEndpoint{URL: req.URL, Events: req.Events, Description: req.Description})
	if err != nil {
		return err
	}
	out := opsEndpointJSON(o)
	out.Secret = o.Secret
	return c.JSON(http.StatusCreated, out)
}

// listOpsEndpoints lists the ops endpoints, without their secrets; there
// are few, so there is one page.
func (s *Server) listOpsEndpoints(c echo.Context) error {
	rows, err := s.ops.OpsEndpoints(c.Request().Context())
	if err != nil {
		return err
	}
	out := List[OpsEndpointJSON]{Items: make([]OpsEndpointJSON, len(rows))}
	for i, r := range rows {
		out.Items[i] = opsEndpointJSON(r)
	}
	return c.JSON(http.StatusOK, out)
}

// deleteOpsEndpoint deletes an ops endpoint: 204, or 404.
func (s *Server) deleteOpsEndpoint(c echo.Context) error {
	id, err := pathID(c, "ops endpoint")
	if err != nil {
		return err
	}
	if err := s.ops.DeleteOpsEndpoint(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
