package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

const pageSize = 50

// pendingCap bounds the per-endpoint pending count shown in lists (an index
// range scan of at most this many entries per endpoint).
const pendingCap = 1000

type endpointRow struct {
	db.EndpointStatus
	Pending int64
	// Lag is a poll endpoint's oldest delivery not acknowledged (nil for
	// push endpoints; Oldest zero when none is pending).
	Lag *db.PullLag
}

type endpointsData struct {
	Rows       []endpointRow
	NextAfter  int64 // 0: last page
	PendingCap int64
}

func idParam(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, hookrelay.Errorf(hookrelay.ENOTFOUND, "not found")
	}
	return id, nil
}

func int64Query(c echo.Context, name string) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		v = c.FormValue(name)
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, hookrelay.Errorf(hookrelay.EINVALID, "%s must be a positive number", name)
	}
	return n, nil
}

// endpointRows lists a page of endpoints (merchantID 0 = all) with their
// pending counts.
func (d *Dashboard) endpointRows(c echo.Context, merchantID int64) (endpointsData, error) {
	ctx := c.Request().Context()
	after, err := int64Query(c, "after")
	if err != nil {
		return endpointsData{}, err
	}
	list, err := d.reads(c).EndpointStatusList(ctx, merchantID, after, pageSize+1)
	if err != nil {
		return endpointsData{}, err
	}
	data := endpointsData{PendingCap: pendingCap}
	if len(list) > pageSize {
		list = list[:pageSize]
		data.NextAfter = list[len(list)-1].ID
	}
	if scope := d.principal(c).Scope; len(scope.Merchants) > 0 {
		// An operator scoped to merchants sees theirs only (a page may
		// come out shorter; the next one goes on after it).
		kept := list[:0:0]
		for _, ep := range list {
			if scope.AllowsMerchant(ep.MerchantID) {
				kept = append(kept, ep)
			}
		}
		list = kept
	}
	ids := make([]int64, len(list))
	for i, ep := range list {
		ids[i] = ep.ID
	}
	pending, err := d.reads(c).DeliveryCountByEndpoint(ctx, ids, pendingCap+1)
	if err != nil {
		return endpointsData{}, err
	}
	var polls []int64
	for _, ep := range list {
		if ep.Type == db.EndpointPoll {
			polls = append(polls, ep.ID)
		}
	}
	lags := map[int64]db.PullLag{}
	if len(polls) > 0 {
		ls, err := d.reads(c).DeliveryPullLag(ctx, polls, pendingCap+1)
		if err != nil {
			return endpointsData{}, err
		}
		for _, l := range ls {
			lags[l.EndpointID] = l
		}
	}
	for _, ep := range list {
		row := endpointRow{EndpointStatus: ep, Pending: pending[ep.ID]}
		if l, ok := lags[ep.ID]; ok {
			row.Lag = &l
		}
		data.Rows = append(data.Rows, row)
	}
	return data, nil
}

func (d *Dashboard) endpoints(c echo.Context) error {
	data, err := d.endpointRows(c, 0)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "endpoints", view{Title: "Endpoints", Nav: "endpoints", Data: data})
}

func (d *Dashboard) endpointEnable(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	if _, err := o.EnableEndpoint(c.Request().Context(), ops.FromPrincipal(d.principal(c)), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/endpoints?done=enabled")
}

func (d *Dashboard) endpointDisable(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	if _, err := o.DisableEndpoint(c.Request().Context(), ops.FromPrincipal(d.principal(c)), id, "disabled by an operator"); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/endpoints?done=disabled")
}
