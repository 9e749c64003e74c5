package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's state, in memory: its client, users, signing
// key, the authorization requests under way and the access tokens issued.
type storage struct {
	client *client
	users  map[string]User // by username
	key    signingKey
	opts   Options

	mu       sync.Mutex
	requests map[string]*authRequest // by id; mu guards it, codes and tokens
	codes    map[string]string       // code → request id
	tokens   map[string]accessToken  // by id
}

type accessToken struct {
	subject string
	scopes  []string
	expires time.Time
}

// errNotFound is an unknown request, code, token, client or user.
var errNotFound = errors.New("not found")

func newStorage(opts Options) (*storage, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &storage{
		client:   &client{id: opts.ClientID, secret: opts.ClientSecret, redirectURIs: opts.RedirectURIs},
		users:    map[string]User{},
		key:      signingKey{id: randomID(), key: k},
		opts:     opts,
		requests: map[string]*authRequest{},
		codes:    map[string]string{},
		tokens:   map[string]accessToken{},
	}
	for _, u := range opts.Users {
		if u.Subject == "" {
			u.Subject = u.Username
		}
		s.users[u.Username] = u
	}
	return s, nil
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *storage) userBySubject(subject string) (User, bool) {
	for _, u := range s.users {
		if u.Subject == subject {
			return u, true
		}
	}
	return User{}, false
}

func (s *storage) hasAuthRequest(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.requests[id]
	return ok
}

// signIn marks the authorization request id as done by the user named
// username.
func (s *storage) signIn(id, username string) error {
	u, ok := s.users[username]
	if !ok {
		return fmt.Errorf("no user %q", username)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[id]
	if !ok {
		return errors.New("unknown authorization request")
	}
	req.subject, req.authTime, req.done = u.Subject, time.Now(), true
	return nil
}

// op.AuthStorage

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	req := &authRequest{
		id:           randomID(),
		clientID:     r.ClientID,
		redirectURI:  r.RedirectURI,
		scopes:       r.Scopes,
		state:        r.State,
		nonce:        r.Nonce,
		responseType: r.ResponseType,
		responseMode: r.ResponseMode,
		audience:     []string{r.ClientID},
	}
	if r.CodeChallenge != "" {
		req.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[req.id] = req
	return req.copy(), nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[id]
	if !ok {
		return nil, errNotFound
	}
	return req.copy(), nil
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[s.codes[code]]
	if !ok {
		return nil, errNotFound
	}
	return req.copy(), nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.requests[id]; !ok {
		return errNotFound
	}
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest ends a request once its code is exchanged: the code
// serves once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, exp := randomID(), time.Now().Add(5*time.Minute)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = accessToken{subject: r.GetSubject(), scopes: r.GetScopes(), expires: exp}
	return id, exp, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not supported")
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, token, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.key, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{s.key}}, nil
}

// op.OPStorage

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.client.id {
		return nil, errNotFound
	}
	return s.client, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if id != s.client.id || secret != s.client.secret {
		return errors.New("wrong client credentials")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated in the interface; the ID token's
// claims come from SetUserinfoFromRequest.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's claims.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	return s.fill(info, r.GetSubject(), scopes, !s.opts.GroupsInUserinfoOnly)
}

// SetUserinfoFromToken answers the userinfo endpoint.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	tok, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || tok.subject != subject || time.Now().After(tok.expires) {
		return errors.New("token invalid or expired")
	}
	return s.fill(info, subject, tok.scopes, true)
}

// fill sets the claims of the user subject that scopes release.
func (s *storage) fill(info *oidc.UserInfo, subject string, scopes []string, groups bool) error {
	u, ok := s.userBySubject(subject)
	if !ok {
		return errNotFound
	}
	info.Subject = u.Subject
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.Name = u.Name
		info.PreferredUsername = u.Username
	}
	if slices.Contains(scopes, oidc.ScopeEmail) {
		info.Email = u.Email
		info.EmailVerified = oidc.Bool(u.EmailVerified)
	}
	if groups && slices.Contains(scopes, "groups") && u.Groups != nil {
		info.AppendClaims("groups", u.Groups)
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not supported")
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile grants are not supported")
}

func (s *storage) Health(context.Context) error { return nil }

// signingKey signs the ID tokens (RS256).
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

// publicKey is the signing key as the key set publishes it.
type publicKey struct{ k signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }
