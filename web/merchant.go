package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// recentWindow is how far back the merchant view looks for attempts.
const recentWindow = 7 * 24 * time.Hour

func (d *Dashboard) merchantHome(c echo.Context) error {
	data, err := d.endpointRows(c, session(c).MerchantID)
	if err != nil {
		return err
	}
	m, err := d.store.MerchantGet(c.Request().Context(), session(c).MerchantID)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "merchant", view{Title: m.Name, Nav: "m", Data: map[string]any{"Merchant": m, "Endpoints": data}})
}

// ownEndpoint returns endpoint :id if the session's merchant may act on it
// (ops.Service.Endpoint): another merchant's is "not found", never
// "forbidden" (no probing of ids).
func (d *Dashboard) ownEndpoint(c echo.Context) (db.Endpoint, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return db.Endpoint{}, err
	}
	return d.cfg.Ops.Endpoint(c.Request().Context(), d.actor(c), id)
}

type merchantEndpointData struct {
	E        db.Endpoint
	Health   *db.EndpointStatus
	Pending  []db.PendingDelivery
	Lag      *db.PullLag // poll endpoints only
	Attempts []db.Attempt
	Secrets  []db.EndpointSecret // shown only after reveal or rotate
	Rotated  bool
	Ping     *hookrelay.PingResult
	PingErr  string
	CanPing  bool
	// CarrierNames are the endpoint's carriers by name (none: every one).
	CarrierNames []string
}

func (d *Dashboard) merchantEndpointData(ctx context.Context, ep db.Endpoint) (merchantEndpointData, error) {
	data := merchantEndpointData{E: ep, CanPing: d.cfg.Ops.CanPing() && ep.Type != db.EndpointPoll}
	if ep.Type == db.EndpointPoll {
		lags, err := d.store.DeliveryPullLag(ctx, []int64{ep.ID}, pendingCap+1)
		if err != nil {
			return data, err
		}
		if len(lags) == 1 {
			data.Lag = &lags[0]
		}
	}
	if len(ep.CarrierIDs) > 0 {
		all, err := d.store.CarrierAll(ctx)
		if err != nil {
			return data, err
		}
		for _, c := range all {
			if slices.Contains(ep.CarrierIDs, c.ID) {
				data.CarrierNames = append(data.CarrierNames, c.Name)
			}
		}
	}
	hs, err := d.store.EndpointStatusList(ctx, ep.MerchantID, ep.ID-1, 1)
	if err != nil {
		return data, err
	}
	if len(hs) == 1 && hs[0].ID == ep.ID {
		data.Health = &hs[0]
	}
	if data.Pending, err = d.store.DeliveryListPendingNewest(ctx, ep.ID, 20); err != nil {
		return data, err
	}
	now := d.cfg.Now()
	if data.Attempts, err = d.store.AttemptListRecent(ctx, ep.ID, now.Add(-recentWindow), now.Add(time.Minute), 50); err != nil {
		return data, err
	}
	return data, nil
}

func (d *Dashboard) renderMerchantEndpoint(c echo.Context, data merchantEndpointData) error {
	v := view{Title: "Endpoint " + strconv.FormatInt(data.E.ID, 10), Nav: "m", Data: data}
	return d.render(c, http.StatusOK, "mendpoint", v)
}

func (d *Dashboard) merchantEndpoint(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	data, err := d.merchantEndpointData(c.Request().Context(), ep)
	if err != nil {
		return err
	}
	return d.renderMerchantEndpoint(c, data)
}

func (d *Dashboard) merchantReveal(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	data, err := d.merchantEndpointData(ctx, ep)
	if err != nil {
		return err
	}
	if data.Secrets, err = d.store.EndpointSecretsActive(ctx, ep.ID); err != nil {
		return err
	}
	return d.renderMerchantEndpoint(c, data)
}

func (d *Dashboard) merchantRotate(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	ctx := c.Request().Context()
	if _, err := o.RotateSecret(ctx, ops.Merchant(session(c).MerchantID), ep.ID); err != nil {
		return err
	}
	data, err := d.merchantEndpointData(ctx, ep)
	if err != nil {
		return err
	}
	if data.Secrets, err = d.store.EndpointSecretsActive(ctx, ep.ID); err != nil {
		return err
	}
	data.Rotated = true
	return d.renderMerchantEndpoint(c, data)
}

func (d *Dashboard) merchantPing(c echo.Context) error {
	ep, err := d.ownEndpoint(c)
	if err != nil {
		return err
	}
	o := d.cfg.Ops
	ctx := c.Request().Context()
	res, perr := o.Ping(ctx, ops.Merchant(session(c).MerchantID), ep.ID)
	data, err := d.merchantEndpointData(ctx, ep)
	if err != nil {
		return err
	}
	if perr != nil {
		data.PingErr = hookrelay.ErrorMessage(perr)
		if hookrelay.HTTPStatus(perr) >= 500 {
			d.log.Warn("test ping failed", "endpoint_id", ep.ID, "error", perr)
		}
	} else {
		data.Ping = &res
	}
	return d.renderMerchantEndpoint(c, data)
}

// ownDelivery loads a delivery whose endpoint the session's merchant may
// act on (a deleted endpoint's deliveries are no merchant's).
func (d *Dashboard) ownDelivery(c echo.Context) (deliveryData, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return deliveryData{}, err
	}
	data, err := d.loadDelivery(c.Request().Context(), d.actor(c), id)
	if err != nil {
		return data, err
	}
	if data.Endpoint == nil {
		return deliveryData{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")
	}
	data.Base = "/ui/m"
	return data, nil
}

func (d *Dashboard) merchantDelivery(c echo.Context) error {
	data, err := d.ownDelivery(c)
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "delivery", view{Title: fmt.Sprintf("Delivery %d", data.D.ID), Nav: "m", Data: data})
}

func (d *Dashboard) merchantRetry(c echo.Context) error {
	id, err := d.retryDelivery(c, ops.Merchant(session(c).MerchantID))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/ui/m/deliveries/%d?done=retry", id))
}
