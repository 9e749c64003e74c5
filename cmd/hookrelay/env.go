package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// envParser reads typed values from the environment, collecting every bad
// value so the user sees all problems at once, each naming its variable.
type envParser struct {
	getenv func(string) string
	errs   []error
}

func (p *envParser) fail(name, raw, want string) {
	p.errs = append(p.errs, fmt.Errorf("%s=%q: %s", name, raw, want))
}

func (p *envParser) err() error { return errors.Join(p.errs...) }

func (p *envParser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *envParser) int(name string, def, lo, hi int) int {
	raw := strings.TrimSpace(p.getenv(name))
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
	raw := strings.TrimSpace(p.getenv(name))
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
	raw := strings.TrimSpace(p.getenv(name))
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
	v := p.str(name, def)
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
	raw := strings.TrimSpace(p.getenv(name))
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
