package web

import (
	"context"
	"html/template"
	"log/slog"
	"strconv"
)

// nameBook looks up the names of the merchants and carriers a page shows,
// each at most once per page: people read names, the ids stay beside them.
// A failed look-up shows the id alone (and is logged): a name is never
// worth failing a page.
type nameBook struct {
	ctx       context.Context
	store     Store
	log       *slog.Logger
	carriers  map[int64]string // nil until the first carrier is asked for
	merchants map[int64]string
}

// carrier returns carrier id's name, "" when unknown.
func (n *nameBook) carrier(id int64) string {
	if n == nil || id == 0 {
		return ""
	}
	if n.carriers == nil {
		n.carriers = map[int64]string{}
		all, err := n.store.CarrierAll(n.ctx)
		if err != nil {
			n.log.Warn("carrier names", "error", err)
		}
		for _, c := range all {
			n.carriers[c.ID] = c.Name
		}
	}
	return n.carriers[id]
}

// merchant returns merchant id's name, "" when unknown.
func (n *nameBook) merchant(id int64) string {
	if n == nil || id == 0 {
		return ""
	}
	if n.merchants == nil {
		n.merchants = map[int64]string{}
	}
	name, ok := n.merchants[id]
	if !ok {
		m, err := n.store.MerchantGet(n.ctx, id)
		if err != nil {
			n.log.Warn("merchant name", "merchant_id", id, "error", err)
		}
		name = m.Name
		n.merchants[id] = name
	}
	return name
}

// nameWithID shows a name with its id beside it, muted; the id alone when
// the name is unknown.
func nameWithID(name string, id int64) template.HTML {
	sid := strconv.FormatInt(id, 10)
	if name == "" {
		return template.HTML(sid)
	}
	return template.HTML(`<span class="name">` + template.HTMLEscapeString(name) + `</span> <span class="muted id">#` + sid + `</span>`)
}

// Carrier shows carrier id by name, with the id.
func (v view) Carrier(id int64) template.HTML { return nameWithID(v.names.carrier(id), id) }

// Merchant shows merchant id by name, with the id.
func (v view) Merchant(id int64) template.HTML { return nameWithID(v.names.merchant(id), id) }

// CarrierName is carrier id's name alone, or its id when unknown (for
// running text such as a button's label).
func (v view) CarrierName(id int64) string {
	if name := v.names.carrier(id); name != "" {
		return name
	}
	return strconv.FormatInt(id, 10)
}

// MerchantName is merchant id's name alone, or its id when unknown.
func (v view) MerchantName(id int64) string {
	if name := v.names.merchant(id); name != "" {
		return name
	}
	return strconv.FormatInt(id, 10)
}
