package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// presignTTL is how long payload links on the message page stay valid.
const presignTTL = 15 * time.Minute

type deliveryData struct {
	D        db.DeliveryView
	Endpoint *db.Endpoint // nil when deleted
	CanRetry bool         // a retry would do something: dead, or waiting for its next attempt
	Base     string       // "/ui" or "/ui/m": where links and forms point
}

// loadDelivery loads delivery id with its endpoint as a may see it (nil when
// deleted, or not a's).
func (d *Dashboard) loadDelivery(ctx context.Context, a ops.Actor, id int64) (deliveryData, error) {
	v, err := d.store.DashboardDelivery(ctx, id)
	if err != nil {
		return deliveryData{}, err
	}
	data := deliveryData{D: v}
	p := v.Pending
	data.CanRetry = v.State == "dead" ||
		p != nil && p.VisibleAt.After(d.cfg.Now()) && !db.NeverDue(p.VisibleAt) && p.Attempt > 0
	if ep, err := d.cfg.Ops.Endpoint(ctx, a, v.EndpointID); err == nil {
		data.Endpoint = &ep
	} else if hookrelay.CodeOf(err) != hookrelay.ENOTFOUND {
		return data, err
	}
	return data, nil
}

func (d *Dashboard) delivery(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	data, err := d.loadDelivery(c.Request().Context(), ops.Actor{}, id)
	if err != nil {
		return err
	}
	data.Base = "/ui"
	return d.render(c, http.StatusOK, "delivery", view{Title: "Delivery " + strconv.FormatInt(id, 10), Nav: "dead", Data: data})
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
	id, err := d.retryDelivery(c, ops.Actor{})
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/deliveries/"+strconv.FormatInt(id, 10)+"?done=retry")
}

type messageData struct {
	M       db.MessageRecord
	Pretty  string
	IsJSON  bool
	Link    string // presigned URL of an offloaded payload
	LinkErr string
}

func (d *Dashboard) message(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	var at *time.Time
	if s := c.QueryParam("at"); s != "" {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return hookrelay.Errorf(hookrelay.EINVALID, "bad time")
		}
		t := time.Unix(0, ns).UTC()
		at = &t
	}
	ctx := c.Request().Context()
	m, err := ops.ReadMessage(ctx, d.reads(c), ops.Actor{}, id, at)
	if err != nil {
		return err
	}
	data := messageData{M: m}
	if m.PayloadKey == "" {
		data.Pretty, data.IsJSON = prettyJSON(m.Payload)
	} else if d.cfg.Presigner != nil {
		link, err := d.cfg.Presigner.Presign(ctx, m.PayloadKey, presignTTL)
		if err != nil {
			d.log.Warn("presign payload link", "message_id", m.ID, "error", err)
			data.LinkErr = "The payload store could not sign a link right now."
		}
		data.Link = link
	}
	return d.render(c, http.StatusOK, "message", view{Title: "Message " + strconv.FormatInt(id, 10), Nav: "dead", Data: data})
}

type databaseData struct {
	H          db.Health
	Partitions []db.Partition
	PoolInUse  int32
	PoolMax    int32
	OldestAge  time.Duration
	OldWarn    bool
}

// oldTransaction is the age past which the oldest open transaction is flagged.
const oldTransaction = 5 * time.Minute

func (d *Dashboard) database(c echo.Context) error {
	ctx := c.Request().Context()
	h, err := d.store.HealthSnapshot(ctx)
	if err != nil {
		return err
	}
	parts, err := d.store.Partitions(ctx)
	if err != nil {
		return err
	}
	data := databaseData{H: h, Partitions: parts}
	data.PoolInUse, _, data.PoolMax = d.store.PoolStats()
	data.OldestAge = time.Duration(h.OldestXactSeconds * float64(time.Second))
	data.OldWarn = data.OldestAge > oldTransaction
	return d.render(c, http.StatusOK, "database", view{Title: "Database health", Nav: "database", Refresh: true, Data: data})
}
