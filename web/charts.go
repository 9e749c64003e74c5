package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Charts are drawn server-side as inline SVG (no script, no external assets).
// Colours are presentation attributes, not style attributes, so the CSP can
// forbid inline styles.

const (
	chartW, chartH = 600.0, 120.0
	padL, padB     = 44.0, 18.0
)

// point is one value of a series at a time.
type point struct {
	At time.Time
	V  float64
}

// lineChart draws series over [from, to] with a y axis from 0 to the max.
func lineChart(title, unit string, from, to time.Time, series []point) template.HTML {
	var b strings.Builder
	top := 0.0
	for _, p := range series {
		top = math.Max(top, p.V)
	}
	if top == 0 {
		top = 1
	}
	top = niceCeil(top)
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	plotW, plotH := chartW-padL-4, chartH-padB-6
	for i := 0; i <= 2; i++ {
		y := 6 + plotH*float64(i)/2
		v := top * float64(2-i) / 2
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#d8dde3" stroke-width="1"/>`, padL, chartW-4, y, y)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" font-size="10" fill="#5b6470">%s</text>`, padL-4, y+3, template.HTMLEscapeString(shortNum(v)))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="10" fill="#5b6470">%s</text>`, padL, chartH-4, from.UTC().Format("15:04"))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" font-size="10" fill="#5b6470">%s %s</text>`, chartW-4, chartH-4, to.UTC().Format("15:04"), template.HTMLEscapeString(unit))
	span := to.Sub(from).Seconds()
	if len(series) > 0 && span > 0 {
		var pts []string
		for _, p := range series {
			x := padL + plotW*math.Max(0, math.Min(1, p.At.Sub(from).Seconds()/span))
			y := 6 + plotH*(1-p.V/top)
			pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
		}
		if len(pts) == 1 {
			pts = append(pts, pts[0])
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#2563eb" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
	} else {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-size="12" fill="#5b6470">no samples yet</text>`, padL+plotW/2, chartH/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// barChart draws one bar per logical queue.
func barChart(title string, values []int64) template.HTML {
	var b strings.Builder
	top := int64(1)
	for _, v := range values {
		top = max(top, v)
	}
	ceil := niceCeil(float64(top))
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	plotW, plotH := chartW-padL-4, chartH-padB-6
	fmt.Fprintf(&b, `<text x="%.0f" y="12" text-anchor="end" font-size="10" fill="#5b6470">%s</text>`, padL-4, shortNum(ceil))
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#d8dde3"/>`, padL, chartW-4, 6+plotH, 6+plotH)
	n := max(len(values), 1)
	slot := plotW / float64(n)
	for i, v := range values {
		h := plotH * float64(v) / ceil
		x := padL + slot*float64(i)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#0f766e"><title>queue %d: %d pending</title></rect>`,
			x+1, 6+plotH-h, math.Max(slot-2, 1), h, i, v)
		if n <= 32 || i%4 == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="9" fill="#5b6470">%d</text>`, x+slot/2, chartH-4, i)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
