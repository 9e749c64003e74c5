package api

import (
	"fmt"
	"net/http"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// checkRouting checks the ordering key, event type and merchant reference of
// a callback before it joins a batch: each becomes a text column, and a value
// PostgreSQL cannot store would fail the statement of every callback batched
// with it. The ordering key also must not begin with U+0001, which marks a
// replay chain (hookrelay.ReplayChainMark). The error names where the value
// came from (header or body path).
func checkRouting(req *http.Request, carrier db.Carrier, orderingKey, eventType, merchantRef string) error {
	for _, v := range []struct{ value, header, path, what string }{
		{orderingKey, "X-Ordering-Key", carrier.OrderingKeyField, "ordering key"},
		{eventType, "X-Event-Type", carrier.EventTypeField, "event type"},
		{merchantRef, "X-Merchant-Id", carrier.MerchantField, "merchant id"},
	} {
		field := v.header + " header"
		if req.Header.Get(v.header) == "" {
			field = fmt.Sprintf("%s (body field %q)", v.what, v.path)
		}
		check := hookrelay.CheckText
		if v.header == "X-Ordering-Key" {
			check = hookrelay.CheckOrderingKey
		}
		if err := check(field, v.value, maxRoutingValue); err != nil {
			return err
		}
	}
	return nil
}
