package sso

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
)

// admit turns the verified claims of a sign-in into an Identity, or
// refuses it (EFORBIDDEN) by the configured rules: an email address is
// required and, unless AllowUnverifiedEmail, verified; its domain must be
// allowed; the user must be in an allowed group; and a role must follow
// from the groups or the default role.
func (c *Client) admit(issuer, subject string, claims map[string]any) (Identity, error) {
	id := Identity{
		Subject: subject,
		Issuer:  issuer,
		Email:   strings.ToLower(strings.TrimSpace(stringClaim(claims["email"]))),
		Name:    stringClaim(claims["name"]),
		Groups:  groupsClaim(claims[c.cfg.GroupsClaim]),
	}
	if id.Name == "" {
		id.Name = stringClaim(claims["preferred_username"])
	}
	at := strings.LastIndexByte(id.Email, '@')
	if at <= 0 || at == len(id.Email)-1 {
		return id, hookrelay.Errorf(hookrelay.EFORBIDDEN, "the identity provider gave no email address for you; ask its administrator to release the email claim")
	}
	if !c.cfg.AllowUnverifiedEmail && !boolClaim(claims["email_verified"]) {
		return id, hookrelay.Errorf(hookrelay.EFORBIDDEN, "your email address %s is not verified at the identity provider", id.Email)
	}
	if len(c.cfg.AllowedDomains) > 0 {
		domain := id.Email[at+1:]
		if !slices.ContainsFunc(c.cfg.AllowedDomains, func(d string) bool { return strings.EqualFold(strings.TrimPrefix(d, "@"), domain) }) {
			return id, hookrelay.Errorf(hookrelay.EFORBIDDEN, "accounts of %s may not sign in here", domain)
		}
	}
	if len(c.cfg.AllowedGroups) > 0 && !slices.ContainsFunc(id.Groups, func(g string) bool { return slices.Contains(c.cfg.AllowedGroups, g) }) {
		return id, hookrelay.Errorf(hookrelay.EFORBIDDEN, "you are in none of the groups allowed to sign in here")
	}
	for _, g := range id.Groups {
		if r, ok := c.cfg.RoleMap[g]; ok && r > id.Role {
			id.Role = r
		}
	}
	if id.Role == access.RoleNone {
		id.Role = c.cfg.DefaultRole
	}
	if id.Role == access.RoleNone {
		return id, hookrelay.Errorf(hookrelay.EFORBIDDEN, "none of your groups gives a role here; ask an owner to map one")
	}
	return id, nil
}

// stringClaim returns a claim that is a string, else "".
func stringClaim(v any) string {
	s, _ := v.(string)
	return s
}

// boolClaim reads a boolean claim, which some providers send as the
// string "true".
func boolClaim(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// groupsClaim reads the groups: a JSON array of strings (or of numbers,
// kept as text), or one string.
func groupsClaim(v any) []string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil
		}
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, g := range v {
			switch g := g.(type) {
			case string:
				out = append(out, g)
			case float64:
				out = append(out, fmt.Sprint(g))
			}
		}
		return out
	}
	return nil
}
