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
	m, err := d.cfg.Ops.ReadMessageFrom(ctx, d.reads(c), ops.FromPrincipal(d.principal(c)), id, at)
	if err != nil {
		return err
	}
	data := d.messageData(ctx, m)
	// The message page is reached from a search or a delivery, not from the
	// dead letters: no navigation entry is its own.
	return d.render(c, http.StatusOK, "message", view{Title: "Message " + strconv.FormatInt(id, 10), Data: data})
}

// messageData shows m's payload: inline and indented, or a link to the
// payload store when offloaded.
func (d *Dashboard) messageData(ctx context.Context, m db.MessageRecord) messageData {
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
	return data
}
