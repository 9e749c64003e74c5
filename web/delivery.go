package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

type deliveryData struct {
	D        db.DeliveryRecord
	Endpoint *db.Endpoint // nil when deleted
	CanRetry bool         // a retry would do something: dead, or waiting for its next attempt
	Base     string       // "/ui" or "/ui/m": where links and forms point
	// Msg is the delivery's message as the actor may see it (its tracking
	// number, carrier and payload); nil when it is no longer stored.
	Msg *messageData
	// TrackingNumber is the message's ordering key (a delivery's own may be
	// a replay chain, and a delivered one has none stored).
	TrackingNumber string
}

// loadDelivery loads delivery id with its endpoint as a may see it (nil when
// deleted, or not a's).
func (d *Dashboard) loadDelivery(ctx context.Context, a ops.Actor, id int64) (deliveryData, error) {
	v, err := d.store.DeliveryRead(ctx, id)
	if err != nil {
		return deliveryData{}, err
	}
	if v.DeadLetter != nil && !ops.DeadLetterVisible(ctx, *v.DeadLetter) {
		return deliveryData{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")
	}
	data := deliveryData{D: v}
	data.TrackingNumber, _ = hookrelay.ChainKey(v.OrderingKey)
	p := v.Pending
	data.CanRetry = v.State == "dead" ||
		p != nil && p.VisibleAt.After(d.cfg.Now()) && !db.NeverDue(p.VisibleAt) && p.Attempt > 0
	if ep, err := d.cfg.Ops.Endpoint(ctx, a, v.EndpointID); err == nil {
		data.Endpoint = &ep
	} else if hookrelay.CodeOf(err) != hookrelay.ENOTFOUND {
		return data, err
	}
	if data.Endpoint == nil && a.MerchantID != 0 {
		return data, nil // not the merchant's: nothing of its message either
	}
	// A delivered delivery keeps no row of its own, only attempts: its
	// tracking number (ordering key) comes from its message.
	m, err := d.cfg.Ops.ReadMessageFrom(ctx, d.store, a, v.MessageID, &v.ReceivedAt)
	switch {
	case err == nil:
		md := d.messageData(ctx, m)
		data.Msg = &md
		data.TrackingNumber = m.OrderingKey
	case hookrelay.CodeOf(err) != hookrelay.ENOTFOUND:
		return data, err
	}
	return data, nil
}

func (d *Dashboard) delivery(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	data, err := d.loadDelivery(c.Request().Context(), ops.FromPrincipal(d.principal(c)), id)
	if err != nil {
		return err
	}
	data.Base = "/ui"
	nav := "" // reached from a search or a message as often as from the dead letters
	if data.D.State == "dead" {
		nav = "dead"
	}
	return d.render(c, http.StatusOK, "delivery", view{Title: "Delivery " + strconv.FormatInt(id, 10), Nav: nav, Data: data})
}

// retryDelivery asks for delivery :id to be attempted as soon as possible
// on behalf of a (see ops.Service.RetryDelivery).
func (d *Dashboard) retryDelivery(c echo.Context, a ops.Actor) (int64, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return 0, err
	}
	return id, d.cfg.Ops.RetryDelivery(c.Request().Context(), a, id)
}

func (d *Dashboard) deliveryRetry(c echo.Context) error {
	id, err := d.retryDelivery(c, ops.FromPrincipal(d.principal(c)))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/deliveries/"+strconv.FormatInt(id, 10)+"?done=retry")
}
