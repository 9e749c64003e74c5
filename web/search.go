package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// searchLimit is how many messages the search page lists.
const searchLimit = 100

type searchData struct {
	Key      string
	Messages []db.MessageSummary
	More     bool   // more than searchLimit matched
	Base     string // "/ui" or "/ui/m"
	Merchant bool   // links go to the merchant's delivery pages
}

// searchHistory is how far back the search box looks. It has no dates, so
// it searches every day kept: a search by key reads only the days that
// still have a partition, whatever the window.
const searchHistory = 366 * 24 * time.Hour

// searchMessages lists the messages with the ordering key ?q= as a sees
// them, newest first.
func (d *Dashboard) searchMessages(c echo.Context, a ops.Actor, base string) error {
	key := strings.TrimSpace(c.QueryParam("q"))
	data := searchData{Key: key, Base: base, Merchant: a.MerchantID != 0}
	if key != "" {
		now := time.Now()
		f := db.MessageFilter{OrderingKey: key, Since: now.Add(-searchHistory), Until: now.Add(time.Minute)}
		rows, err := ops.SearchMessages(c.Request().Context(), d.reads(c), a, f, db.MessagePosition{}, searchLimit+1)
		if err != nil {
			return err
		}
		if len(rows) > searchLimit {
			rows, data.More = rows[:searchLimit], true
		}
		data.Messages = rows
	}
	nav := "search"
	if a.MerchantID != 0 {
		nav = "m"
	}
	return d.render(c, http.StatusOK, "messages", view{Title: "Search " + key, Nav: nav, Data: data})
}

func (d *Dashboard) messageSearch(c echo.Context) error {
	return d.searchMessages(c, ops.FromPrincipal(d.principal(c)), "/ui")
}

func (d *Dashboard) merchantMessageSearch(c echo.Context) error {
	return d.searchMessages(c, ops.Merchant(session(c).MerchantID), "/ui/m")
}
