package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// envParser reads typed values from the environment, collecting every bad
// value so the user sees all problems at once, each naming its variable.
// It notes every variable it is asked for: that list is the one the help
// shows and the one unknown HOOKRELAY_ variables are told from (knownVars),
// so a variable cannot be read without being known.
type envParser struct {
	getenv func(string) string
	errs   []error
	vars   []envVar // every variable read, in reading order
}

// envVar is a variable the configuration reads: its name, its default and
// the values it takes, as the help shows them ("" when anything goes).
type envVar struct {
	Name, Default, Takes string
}

// get notes name as read, with its default and the values it takes, and
// returns its value, trimmed.
func (p *envParser) get(name, def, takes string) string {
	if !slices.ContainsFunc(p.vars, func(v envVar) bool { return v.Name == name }) {
		p.vars = append(p.vars, envVar{Name: name, Default: cmp.Or(def, "unset"), Takes: takes})
	}
	return strings.TrimSpace(p.getenv(name))
}

func (p *envParser) fail(name, raw, want string) {
	p.errs = append(p.errs, fmt.Errorf("%s=%q: %s", name, raw, want))
}

// err is every problem found, in one error with one prefix.
func (p *envParser) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return fmt.Errorf("configuration: %w", errors.Join(p.errs...))
}

func (p *envParser) str(name, def string) string {
	return cmp.Or(p.get(name, def, ""), def)
}

func (p *envParser) int(name string, def, lo, hi int) int {
	raw := p.get(name, strconv.Itoa(def), fmt.Sprintf("%d to %d", lo, hi))
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		p.fail(name, raw, fmt.Sprintf("want a whole number from %d to %d", lo, hi))
		return def
	}
	return n
}

func (p *envParser) bool(name string, def bool) bool {
	raw := p.get(name, strconv.FormatBool(def), "true or false")
	if raw == "" {
		return def
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		p.fail(name, raw, "want true or false")
		return def
	}
	return b
}

// fraction reads a whole number of parts per unit (a percentage for 100, per
// mille for 1000) and returns it as a fraction; def is a fraction too.
func (p *envParser) fraction(name string, def float64, unit, lo, hi int) float64 {
	return float64(p.int(name, int(math.Round(def*float64(unit))), lo, hi)) / float64(unit)
}

func (p *envParser) duration(name string, def, lo, hi time.Duration) time.Duration {
	raw := p.get(name, shortDuration(def), fmt.Sprintf("a duration from %s to %s", shortDuration(lo), shortDuration(hi)))
	if raw == "" {
		return def
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < lo || d > hi {
		p.fail(name, raw, fmt.Sprintf("want a duration from %s to %s, such as 30s or 168h", lo, hi))
		return def
	}
	return d
}

func (p *envParser) oneOf(name, def string, allowed ...string) string {
	v := cmp.Or(p.get(name, def, strings.Join(allowed, ", ")), def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, v, "want one of "+strings.Join(allowed, ", "))
	return def
}

// durations reads a comma-separated list of at most most durations, each
// from lo to hi, or "none" (an empty list); unset is def.
func (p *envParser) durations(name string, def []time.Duration, most int, lo, hi time.Duration) []time.Duration {
	shown := make([]string, len(def))
	for i, d := range def {
		shown[i] = shortDuration(d)
	}
	raw := p.get(name, strings.Join(shown, ","), fmt.Sprintf(`"none" or up to %d comma-separated durations from %s to %s`, most, shortDuration(lo), shortDuration(hi)))
	switch raw {
	case "":
		return def
	case "none":
		return []time.Duration{}
	}
	want := fmt.Sprintf(`want "none" or up to %d comma-separated durations from %s to %s, such as 500ms,1s,2s`, most, lo, hi)
	parts := strings.Split(raw, ",")
	if len(parts) > most {
		p.fail(name, raw, want)
		return def
	}
	out := make([]time.Duration, 0, len(parts))
	for _, part := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < lo || d > hi {
			p.fail(name, raw, want)
			return def
		}
		out = append(out, d)
	}
	return out
}

// shortDuration writes d as the help shows it: 1h and 1m rather than
// 1h0m0s and 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// prefixes reads a comma-separated list of at most most CIDR prefixes or
// single addresses (IPv4 or IPv6); unset or empty is none.
func (p *envParser) prefixes(name string, most int) []netip.Prefix {
	want := fmt.Sprintf("want up to %d comma-separated CIDR prefixes or addresses, such as 10.0.0.0/8,2001:db8::/32", most)
	raw := strings.TrimSpace(p.get(name, "", want))
	if raw == "" {
		return nil
	}
	parts := strings.Split(raw, ",")
	if len(parts) > most {
		p.fail(name, raw, want)
		return nil
	}
	out := make([]netip.Prefix, 0, len(parts))
	for _, part := range parts {
		part = strings.TrimSpace(part)
		pr, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil {
				p.fail(name, raw, want)
				return nil
			}
			pr = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, pr.Masked())
	}
	return out
}
