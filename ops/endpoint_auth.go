package ops

import (
	"strings"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// MaxCredentialBytes bounds each of an endpoint's credentials (username,
// password, token).
const MaxCredentialBytes = 4096

// AuthInput is an endpoint's credentials as a caller gives them.
type AuthInput struct {
	Type     string // basic | bearer
	Username *string
	Password *string
	Token    *string
}

// toAuth validates a and returns the credentials it names.
func (a *AuthInput) toAuth() (*db.EndpointAuth, error) {
	check := func(field string, v *string, required bool) (string, error) {
		if v == nil || *v == "" {
			if required {
				return "", fieldErrorf(fieldAuth, "auth.%s is required for type %q", field, a.Type)
			}
			return "", nil
		}
		if len(*v) > MaxCredentialBytes {
			return "", fieldErrorf(fieldAuth, "auth.%s: longer than %d bytes", field, MaxCredentialBytes)
		}
		for i := 0; i < len(*v); i++ {
			if c := (*v)[i]; c < 0x20 || c == 0x7f {
				return "", fieldErrorf(fieldAuth, "auth.%s holds a control character", field)
			}
		}
		if err := hookrelay.CheckText("auth."+field, *v, 0); err != nil {
			return "", err
		}
		return *v, nil
	}
	switch a.Type {
	case "basic":
		if a.Token != nil {
			return nil, fieldErrorf(fieldAuth, `auth.token is for type "bearer"`)
		}
		user, err := check("username", a.Username, true)
		if err != nil {
			return nil, err
		}
		if strings.Contains(user, ":") {
			return nil, fieldErrorf(fieldAuth, "auth.username cannot hold a colon (basic authentication)")
		}
		pass, err := check("password", a.Password, false)
		if err != nil {
			return nil, err
		}
		return &db.EndpointAuth{Type: "basic", Username: user, Password: pass}, nil
	case "bearer":
		if a.Username != nil || a.Password != nil {
			return nil, fieldErrorf(fieldAuth, `auth.username and auth.password are for type "basic"`)
		}
		tok, err := check("token", a.Token, true)
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(tok, " \t") {
			return nil, fieldErrorf(fieldAuth, "auth.token cannot hold white space")
		}
		return &db.EndpointAuth{Type: "bearer", Token: tok}, nil
	}
	return nil, fieldErrorf(fieldAuth, `auth.type must be "basic" or "bearer"`)
}
