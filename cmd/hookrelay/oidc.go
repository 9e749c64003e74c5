package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/sso"
)

// ssoCallbackPath is where the dashboard takes the provider's redirect
// back; HOOKRELAY_OIDC_REDIRECT_URL must end with it.
const ssoCallbackPath = "/ui/sso/callback"

// loadSSO reads the single sign-on settings (HOOKRELAY_OIDC_*): nil when
// HOOKRELAY_OIDC_ISSUER is unset (no single sign-on). Every variable is
// read either way, so the help and the check of unknown variables know
// them. Problems are named by variable; the client secret is never shown.
func loadSSO(p *envParser) *sso.Config {
	issuer := p.get("HOOKRELAY_OIDC_ISSUER", "unset: no single sign-on", "the provider's issuer URL (https)")
	clientID := p.get("HOOKRELAY_OIDC_CLIENT_ID", "required with HOOKRELAY_OIDC_ISSUER", "")
	secret := p.get("HOOKRELAY_OIDC_CLIENT_SECRET", "required with HOOKRELAY_OIDC_ISSUER", "")
	redirect := p.get("HOOKRELAY_OIDC_REDIRECT_URL", "required with HOOKRELAY_OIDC_ISSUER", "https://HOST/ui/sso/callback")
	scopes := p.get("HOOKRELAY_OIDC_SCOPES", strings.Join(sso.DefaultScopes, " "), "scopes, space- or comma-separated")
	domains := p.get("HOOKRELAY_OIDC_ALLOWED_DOMAINS", "any", "email domains, comma-separated")
	groups := p.get("HOOKRELAY_OIDC_ALLOWED_GROUPS", "any", "the provider's groups, comma-separated")
	claim := p.get("HOOKRELAY_OIDC_GROUPS_CLAIM", sso.DefaultGroupsClaim, "a claim name")
	roleMap := p.get("HOOKRELAY_OIDC_ROLE_MAP", "", "GROUP=ROLE,GROUP=ROLE (roles: viewer, support, operator, admin, owner)")
	defRole := p.get("HOOKRELAY_OIDC_DEFAULT_ROLE", "unset: refused", "viewer, support, operator, admin or owner")
	verified := p.bool("HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL", true)

	if issuer == "" {
		for name, v := range map[string]string{
			"HOOKRELAY_OIDC_CLIENT_ID": clientID, "HOOKRELAY_OIDC_CLIENT_SECRET": secret, "HOOKRELAY_OIDC_REDIRECT_URL": redirect,
			"HOOKRELAY_OIDC_ROLE_MAP": roleMap, "HOOKRELAY_OIDC_DEFAULT_ROLE": defRole,
		} {
			if v != "" {
				p.errs = append(p.errs, fmt.Errorf("%s is set without HOOKRELAY_OIDC_ISSUER (single sign-on needs the provider's issuer URL)", name))
			}
		}
		return nil
	}
	cfg := &sso.Config{
		Issuer:               issuer,
		ClientID:             clientID,
		ClientSecret:         secret,
		RedirectURL:          redirect,
		Scopes:               sso.ParseList(strings.ReplaceAll(scopes, " ", ",")),
		AllowedDomains:       sso.ParseList(domains),
		AllowedGroups:        sso.ParseList(groups),
		GroupsClaim:          claim,
		AllowUnverifiedEmail: !verified,
	}
	var err error
	if cfg.RoleMap, err = sso.ParseRoleMap(roleMap); err != nil {
		p.fail("HOOKRELAY_OIDC_ROLE_MAP", roleMap, err.Error())
	}
	if defRole != "" {
		if cfg.DefaultRole, err = access.ParseRole(defRole); err != nil {
			p.fail("HOOKRELAY_OIDC_DEFAULT_ROLE", defRole, "want viewer, support, operator, admin or owner")
		}
	}
	checkSSO(p, cfg, roleMap, defRole)
	return cfg
}

// checkSSO adds what a single variable's parse cannot see: the required
// variables, the URLs' shapes, and that some role can be given.
func checkSSO(p *envParser, cfg *sso.Config, roleMap, defRole string) {
	before := len(p.errs)
	for _, req := range []struct{ name, value string }{
		{"HOOKRELAY_OIDC_CLIENT_ID", cfg.ClientID},
		{"HOOKRELAY_OIDC_CLIENT_SECRET", cfg.ClientSecret},
		{"HOOKRELAY_OIDC_REDIRECT_URL", cfg.RedirectURL},
	} {
		if req.value == "" {
			p.errs = append(p.errs, fmt.Errorf("%s is required with HOOKRELAY_OIDC_ISSUER", req.name))
		}
	}
	if err := urlProblem(cfg.Issuer); err != nil {
		p.fail("HOOKRELAY_OIDC_ISSUER", redactURL(cfg.Issuer), err.Error())
	}
	if cfg.RedirectURL != "" {
		u, err := url.Parse(cfg.RedirectURL)
		if perr := urlProblem(cfg.RedirectURL); perr != nil {
			p.fail("HOOKRELAY_OIDC_REDIRECT_URL", redactURL(cfg.RedirectURL), perr.Error()+", such as https://relay.example.com"+ssoCallbackPath)
		} else if err != nil || !strings.HasSuffix(u.Path, ssoCallbackPath) || u.RawQuery != "" {
			p.fail("HOOKRELAY_OIDC_REDIRECT_URL", redactURL(cfg.RedirectURL), "want the dashboard's callback, https://HOST"+ssoCallbackPath)
		}
	}
	if err := cfg.Validate(); err != nil && len(p.errs) == before {
		// A problem the checks above do not name (package sso is stricter).
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_OIDC_*: %w", err))
	}
	if roleMap == "" && defRole == "" {
		p.errs = append(p.errs, errors.New("HOOKRELAY_OIDC_ROLE_MAP or HOOKRELAY_OIDC_DEFAULT_ROLE is required with HOOKRELAY_OIDC_ISSUER (without either, no one could sign in)"))
	}
}

// urlProblem says why raw is not an https URL (or http on loopback), nil
// when it is one.
func urlProblem(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return errors.New("want an https URL")
	case u.User != nil || u.Fragment != "":
		return errors.New("want a URL without credentials or fragment")
	case u.Scheme == "http" && !sso.IsLoopback(u.Hostname()):
		return errors.New("want https (http only on a loopback address)")
	}
	return nil
}
