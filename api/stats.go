package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/hookrelay/hookrelay/db"
)

// StatsJSON is the answer of GET /v1/stats. Counts over large tables stop at
// db.StatsCap; their *_capped field says when they did.
type StatsJSON struct {
	Carriers                int64            `json:"carriers"`
	Merchants               int64            `json:"merchants"`
	Endpoints               map[string]int64 `json:"endpoints"`
	PendingDeliveries       int64            `json:"pending_deliveries"`
	PendingDeliveriesCapped bool             `json:"pending_deliveries_capped"`
	DeadLetters             int64            `json:"dead_letters"`
	DeadLettersCapped       bool             `json:"dead_letters_capped"`
	MessagesTodayUTC        int64            `json:"messages_today_utc"`
	MessagesTodayUTCCapped  bool             `json:"messages_today_utc_capped"`
	CountCap                int64            `json:"count_cap"`
}

func (s *Server) stats(c echo.Context) error {
	st, err := s.ops.Stats(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StatsJSON{
		Carriers: st.Carriers, Merchants: st.Merchants, Endpoints: st.EndpointsByStatus,
		PendingDeliveries: st.PendingDeliveries, PendingDeliveriesCapped: st.PendingCapped,
		DeadLetters: st.DeadLetters, DeadLettersCapped: st.DeadLettersCapped,
		MessagesTodayUTC: st.MessagesToday, MessagesTodayUTCCapped: st.MessagesTodayCapped, CountCap: db.StatsCap,
	})
}
