package adapter

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"
	_ "time/tzdata" // zones for hookrelay.localTime on hosts without a zone database

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"
)

// regexpMatchTimeout bounds one match of a regular expression that goja
// runs on its backtracking engine (regexp2: patterns with backreferences
// or lookaround; the others run on Go's linear-time regexp). A match that
// runs out finds nothing. regexp2 takes it from a package variable when a
// pattern is compiled, and goja is its only user here.
const regexpMatchTimeout = 100 * time.Millisecond

func init() { regexp2.DefaultMatchTimeout = regexpMatchTimeout }

// The functions an adapter finds in the global object hookrelay
// (docs/adapters.md#the-hookrelay-object). They are pure: the same arguments give the
// same result on every host.

// localLayouts are the local date-time forms hookrelay.localTime reads;
// fractional seconds after the seconds are accepted too.
var localLayouts = []string{
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006/01/02 15:04:05",
	"2006/01/02 15:04",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
	"2006/01/02",
}

// zoneName is what hookrelay.localTime takes as a zone: an IANA name or
// a fixed offset like +08:00.
var (
	zoneName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$`)
	zoneOffset = regexp.MustCompile(`^[+-]\d{2}:\d{2}$`)
)

// zones caches loaded zones (time.LoadLocation reads and parses the zone
// database on every call). Only zones that load are kept, and there are a
// few hundred names, so it stays small.
var zones sync.Map // name → *time.Location

func loadZone(name string) (*time.Location, error) {
	if z, ok := zones.Load(name); ok {
		return z.(*time.Location), nil
	}
	var loc *time.Location
	switch {
	case zoneOffset.MatchString(name):
		t, err := time.Parse("-07:00", name)
		if err != nil {
			return nil, fmt.Errorf("zone %q is not an offset", name)
		}
		_, off := t.Zone()
		loc = time.FixedZone(name, off)
	case zoneName.MatchString(name):
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("unknown zone %q", name)
		}
		loc = l
	default:
		return nil, fmt.Errorf("unknown zone %q", name)
	}
	zones.Store(name, loc)
	return loc, nil
}

// localTime parses text, a local date-time in zone, and returns it in
// RFC 3339 with the zone's offset at that moment.
func localTime(text, zone string) (string, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return "", err
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, text, loc); err == nil {
			return t.Format(time.RFC3339Nano), nil
		}
	}
	return "", fmt.Errorf("%q is not a local date-time like 2026-12-04 08:15:00", text)
}

// installHookrelayObject sets the global object hookrelay of rt (before setup
// freezes it).
func installHookrelayObject(rt *goja.Runtime) error {
	h := rt.NewObject()
	if err := h.Set("localTime", func(call goja.FunctionCall) goja.Value {
		text, zone := call.Argument(0), call.Argument(1)
		if !isString(text) || !isString(zone) {
			panic(rt.NewTypeError("hookrelay.localTime(text, zone) takes two strings"))
		}
		s, err := localTime(text.String(), zone.String())
		if err != nil {
			panic(rt.NewTypeError("hookrelay.localTime: " + err.Error()))
		}
		return rt.ToValue(s)
	}); err != nil {
		return err
	}
	if err := h.Set("parseForm", func(call goja.FunctionCall) goja.Value {
		text := call.Argument(0)
		if !isString(text) {
			panic(rt.NewTypeError("hookrelay.parseForm(text) takes a string"))
		}
		q, err := url.ParseQuery(text.String())
		if err != nil {
			panic(rt.NewTypeError("hookrelay.parseForm: " + err.Error()))
		}
		o := rt.NewObject()
		for _, k := range slices.Sorted(maps.Keys(q)) { // the same order on every call
			_ = o.Set(k, q[k][0])
		}
		return o
	}); err != nil {
		return err
	}
	return rt.Set("hookrelay", h)
}

func isString(v goja.Value) bool {
	if v == nil {
		return false
	}
	_, ok := v.Export().(string)
	return ok
}
