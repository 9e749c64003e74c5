package api

import (
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ops"
)

// The rules about an endpoint's headers, auth and filter are the operations
// layer's (ops.ApplyEndpoint); this file is their JSON shape.

// HeaderMask stands for a custom header's value in every answer: values
// are write-only, like passwords. A request that sends the mask back as a
// value is refused, so a form round trip cannot overwrite a real value.
const HeaderMask = ops.HeaderMask

// authRequest is the "auth" object of a request.
type authRequest struct {
	Type     string  `json:"type"`
	Username *string `json:"username"`
	Password *string `json:"password"`
	Token    *string `json:"token"`
}

func (a *authRequest) input() *ops.AuthInput {
	return &ops.AuthInput{Type: a.Type, Username: a.Username, Password: a.Password, Token: a.Token}
}

// AuthJSON is an endpoint's credentials as answers show them: the type and
// the username, never a password or token.
type AuthJSON struct {
	Type     string `json:"type"`
	Username string `json:"username,omitempty"`
}

func authJSON(a *db.EndpointAuth) *AuthJSON {
	if a == nil {
		return nil
	}
	return &AuthJSON{Type: a.Type, Username: a.Username}
}

func headersJSON(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = HeaderMask
	}
	return out
}
