package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

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
