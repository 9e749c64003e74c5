package main

import (
	"net/url"
	"strings"
)

// maxFrameAncestors bounds HOOKRELAY_PORTAL_FRAME_ANCESTORS' list.
const maxFrameAncestors = 20

// frameAncestors reads HOOKRELAY_PORTAL_FRAME_ANCESTORS: the origins that may
// embed the merchant portal, separated by spaces or commas. Each is an
// origin (http or https, a host, an optional port, nothing else; a leading
// "*." matches subdomains) or 'self'. Empty or 'none' means no framing,
// the default. A bare "*" is refused: any site could frame the portal and
// trick a merchant into clicks (clickjacking).
func frameAncestors(p *envParser, name string) []string {
	raw := p.get(name, "", "origins such as https://console.example.com or 'self', separated by spaces")
	if raw == "" || raw == "'none'" || raw == "none" {
		return nil
	}
	var out []string
	for _, s := range strings.FieldsFunc(raw, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
		if s == "'self'" || s == "self" {
			out = append(out, "'self'")
			continue
		}
		if !validOrigin(s) {
			p.fail(name, raw, "want origins such as https://console.example.com (scheme, host, optional port; no path) or 'self', separated by spaces")
			return nil
		}
		out = append(out, strings.TrimSuffix(s, "/"))
	}
	if len(out) > maxFrameAncestors {
		p.fail(name, raw, "want at most 20 origins")
		return nil
	}
	return out
}

func validOrigin(s string) bool {
	if strings.ContainsAny(s, ";'\"") {
		return false
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	host := u.Hostname()
	host = strings.TrimPrefix(host, "*.")
	return host != "" && !strings.Contains(host, "*")
}
