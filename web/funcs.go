package web

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

var funcs = template.FuncMap{
	"when":         when,
	"auditActions": func() []string { return auditActions },
	"whenp":        whenPtr,
	"ago":          ago,
	"bytes":        humanBytes,
	"ibytes":       func(n int) string { return humanBytes(int64(n)) },
	"pct":          func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + " %" },
	"ms":           func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" },
	"num":          humanInt,
	"hexs":         func(b []byte) string { return hex.EncodeToString(b) },
	"prettyjson":   func(b []byte) string { s, _ := prettyJSON(b); return s },
	"deref": func(p *int) string {
		if p == nil {
			return "—"
		}
		return strconv.Itoa(*p)
	},
	"parked": db.NeverDue,
	"add":    func(a, b int) int { return a + b },
	// chainkey shows a delivery's chain as the ordering key it is of.
	"chainkey": func(chain string) string { k, _ := hookrelay.ChainKey(chain); return k },
	"excerpt":  excerpt,
	"plural":   plural,
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return when(*t)
}

// ago renders a duration compactly: 42s, 5m10s, 3h2m, 2d4h.
func ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// humanInt groups digits: 1234567 → 1,234,567.
func humanInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// prettyJSON indents JSON; anything else is returned as text.
func prettyJSON(b []byte) (string, bool) {
	var buf bytes.Buffer
	if json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil {
		return buf.String(), true
	}
	return string(b), false
}

// httpStatus matches the "HTTP 500" that errors of failed attempts start with.
var httpStatus = regexp.MustCompile(`\bHTTP [0-9]{3}\b`)

// excerpt shows an error or a response excerpt with each "HTTP 500" kept on
// one line: the cells that hold them break anywhere (long URLs and bodies),
// which would otherwise split a status as "HTTP 50" / "0".
func excerpt(s string) template.HTML {
	var b strings.Builder
	last := 0
	for _, m := range httpStatus.FindAllStringIndex(s, -1) {
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		b.WriteString(`<span class="status">`)
		b.WriteString(template.HTMLEscapeString(s[m[0]:m[1]]))
		b.WriteString(`</span>`)
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return template.HTML(b.String())
}

// plural writes n with the word, singular for 1: "1 attempt", "2 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
