package sso

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookrelay/hookrelay/access"
)

// DefaultScopes are the scopes asked for when Config.Scopes is empty: the
// ID token, the email address, the name and the groups.
var DefaultScopes = []string{"openid", "email", "profile", "groups"}

// DefaultGroupsClaim is the claim read for the user's groups when
// Config.GroupsClaim is empty.
const DefaultGroupsClaim = "groups"

// Config configures single sign-on with one OpenID provider
// (docs/operations, "Single sign-on (OpenID Connect)").
type Config struct {
	// Issuer is the provider's issuer URL, as its discovery document
	// (Issuer + "/.well-known/openid-configuration") names it. Required;
	// https, or http on a loopback address.
	Issuer string
	// ClientID and ClientSecret are the dashboard's client at the provider
	// (a confidential web client). Required.
	ClientID     string
	ClientSecret string
	// RedirectURL is where the provider sends the browser back: the
	// dashboard's callback, https://HOST/ui/sso/callback, registered at
	// the provider. Required; https, or http on a loopback address.
	RedirectURL string
	// Scopes asked for. Default DefaultScopes. "openid" is added when
	// missing.
	Scopes []string
	// AllowedDomains, when any, are the email domains that may sign in
	// (compared case-insensitively, exactly: example.com does not admit
	// sub.example.com). Empty: any domain.
	AllowedDomains []string
	// AllowedGroups, when any, are the provider's groups of which a user
	// must be in one to sign in. Empty: any group, or none.
	AllowedGroups []string
	// GroupsClaim is the claim of the ID token (or, when the ID token has
	// none, of the userinfo answer) that lists the user's groups. Default
	// DefaultGroupsClaim.
	GroupsClaim string
	// RoleMap maps the provider's groups (compared exactly) to roles; a
	// user in several gets the strongest.
	RoleMap map[string]access.Role
	// DefaultRole is the role of a user in none of RoleMap's groups.
	// access.RoleNone (the default): such a user is refused.
	DefaultRole access.Role
	// AllowUnverifiedEmail admits users whose provider does not say their
	// email address is verified (email_verified). Default false: they are
	// refused, since an unverified address proves nothing about who signs
	// in.
	AllowUnverifiedEmail bool
	// HTTPClient talks to the provider (discovery, keys, token and
	// userinfo). Default a client with a 10 s timeout.
	HTTPClient *http.Client
}

// Validate reports every problem of c in one error: missing values, URLs
// that are not https outside loopback, roles out of range.
func (c Config) Validate() error {
	var errs []error
	if c.Issuer == "" {
		errs = append(errs, errors.New("issuer: required"))
	} else if err := checkURL(c.Issuer); err != nil {
		errs = append(errs, fmt.Errorf("issuer: %w", err))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("client ID: required"))
	}
	if c.ClientSecret == "" {
		errs = append(errs, errors.New("client secret: required"))
	}
	if c.RedirectURL == "" {
		errs = append(errs, errors.New("redirect URL: required"))
	} else if err := checkURL(c.RedirectURL); err != nil {
		errs = append(errs, fmt.Errorf("redirect URL: %w", err))
	}
	for g, r := range c.RoleMap {
		if g == "" || r == access.RoleNone || r > access.Owner {
			errs = append(errs, fmt.Errorf("role map: group %q: want a group name and a role", g))
		}
	}
	if c.DefaultRole > access.Owner {
		errs = append(errs, fmt.Errorf("default role: %v is no role", c.DefaultRole))
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute https URL, or an http one whose host is a
// loopback address or localhost (a provider or dashboard on the same
// machine, in development and tests).
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return errors.New("want an absolute https URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if IsLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("want https (http only on a loopback address)")
	}
	return errors.New("want an absolute https URL")
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseList splits a comma-separated list, trimming spaces and dropping
// empty items.
func ParseList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseRoleMap reads a group-to-role mapping written GROUP=ROLE,GROUP=ROLE
// (ops-owners=owner,ops-support=support). The role follows the last "=",
// so a group name may hold one; a group named twice is an error.
func ParseRoleMap(s string) (map[string]access.Role, error) {
	items := ParseList(s)
	if len(items) == 0 {
		return nil, nil
	}
	m := make(map[string]access.Role, len(items))
	for _, item := range items {
		i := strings.LastIndexByte(item, '=')
		if i < 0 {
			return nil, fmt.Errorf("%q: want GROUP=ROLE", item)
		}
		group, name := strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])
		if group == "" {
			return nil, fmt.Errorf("%q: want GROUP=ROLE", item)
		}
		r, err := access.ParseRole(name)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if _, dup := m[group]; dup {
			return nil, fmt.Errorf("group %q is mapped twice", group)
		}
		m[group] = r
	}
	return m, nil
}
