package hookrelay

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Inbound signature schemes: how a carrier signs its callbacks.
const (
	// InboundNone: callbacks are not signed.
	InboundNone = "none"
	// InboundHMAC: an HMAC of the message (the body, or the timestamp and
	// the body) keyed with the secret.
	InboundHMAC = "hmac"
	// InboundDigest: a plain digest of the body followed by the secret (no
	// HMAC), as some carriers sign.
	InboundDigest = "digest"
	// InboundStandardWebhooks: Standard Webhooks (webhook-id,
	// webhook-timestamp, webhook-signature "v1,<base64>") with a "whsec_"
	// secret.
	InboundStandardWebhooks = "standard-webhooks"
)

// Messages an inbound HMAC or digest covers.
const (
	MessageBody          = "body"           // the raw body
	MessageTimestampBody = "timestamp+body" // the timestamp header's value, ".", the raw body
	MessageBodySecret    = "body+secret"    // the raw body, then the secret (digest)
)

// Bounds of an inbound signature's declaration.
const (
	DefaultInboundTolerance = 5 * time.Minute
	MaxInboundTolerance     = 24 * time.Hour
	MinInboundSecret        = 16
	MaxInboundSecret        = 1024
	maxInboundName          = 100
	maxInboundPrefix        = 50
)

// Why an inbound signature was refused: the cause wrapped by the
// EBADSIGNATURE error Verify returns (errors.Is tells them apart).
var (
	ErrSignatureMissing = errors.New("signature missing")
	ErrSignatureInvalid = errors.New("signature invalid")
	ErrTimestampMissing = errors.New("timestamp missing or malformed")
	ErrTimestampStale   = errors.New("timestamp outside the tolerance")
)

// InboundSignature is how a carrier signs its callbacks, as the operator
// declares it. Its zero value (or Scheme "none") verifies nothing. Check
// fills in the defaults and validates it; Verify then checks a callback.
type InboundSignature struct {
	Scheme string `json:"scheme"`
	// Algorithm of an hmac or digest: sha256 (default), sha1 or md5.
	Algorithm string `json:"algorithm,omitempty"`
	// Message an hmac covers (body, default, or timestamp+body); a digest
	// always covers body+secret.
	Message string `json:"message,omitempty"`
	// Encoding of the signature: hex (default) or base64 (standard or
	// URL-safe, padded or not).
	Encoding string `json:"encoding,omitempty"`
	// Header holds the signature (default X-Signature), unless Query names
	// the query parameter that does.
	Header string `json:"header,omitempty"`
	Query  string `json:"query,omitempty"`
	// Prefix is text before the signature (such as "sha256="), required
	// when set.
	Prefix string `json:"prefix,omitempty"`
	// TimestampHeader, when set, holds the time the callback was signed
	// (Unix seconds); callbacks more than Tolerance away from now are
	// refused. Required with message timestamp+body.
	TimestampHeader string `json:"timestamp_header,omitempty"`
	// Tolerance of the timestamp (default 5m); written as a duration
	// ("5m") in JSON.
	Tolerance time.Duration `json:"-"`
	// Secret is the shared secret; never written to JSON.
	Secret string `json:"-"`

	// key is the HMAC key: the secret, or for Standard Webhooks the bytes
	// its base64 holds. Set by Check.
	key []byte
	// newHash makes the algorithm's hash. Set by Check.
	newHash func() hash.Hash
	// macs holds ready HMACs keyed with key (plain hashes for a digest),
	// reused from one callback to the next. Set by Check.
	macs *sync.Pool
}

// LegacyInboundSignature is the scheme of a carrier created with only a
// signing_secret: X-Signature: sha256=<hex HMAC-SHA256 of the body>.
func LegacyInboundSignature(secret string) InboundSignature {
	return InboundSignature{Scheme: InboundHMAC, Algorithm: "sha256", Message: MessageBody, Encoding: "hex",
		Header: "X-Signature", Prefix: "sha256=", Secret: secret}
}

type inboundJSON struct {
	Scheme          string `json:"scheme"`
	Algorithm       string `json:"algorithm,omitempty"`
	Message         string `json:"message,omitempty"`
	Encoding        string `json:"encoding,omitempty"`
	Header          string `json:"header,omitempty"`
	Query           string `json:"query,omitempty"`
	Prefix          string `json:"prefix,omitempty"`
	TimestampHeader string `json:"timestamp_header,omitempty"`
	Tolerance       string `json:"tolerance,omitempty"`
	// Secret is read (from an API request), never written.
	Secret string `json:"secret,omitempty"`
}

// MarshalJSON writes the declaration without its secret.
func (s InboundSignature) MarshalJSON() ([]byte, error) {
	j := inboundJSON{Scheme: s.Scheme, Algorithm: s.Algorithm, Message: s.Message, Encoding: s.Encoding,
		Header: s.Header, Query: s.Query, Prefix: s.Prefix, TimestampHeader: s.TimestampHeader}
	if j.Scheme == "" {
		j.Scheme = InboundNone
	}
	if s.Tolerance > 0 {
		j.Tolerance = s.Tolerance.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a declaration, and its secret when present (an API
// request's). Unknown fields are refused: a misspelt field would otherwise
// leave a default the operator did not mean.
func (s *InboundSignature) UnmarshalJSON(b []byte) error {
	var j inboundJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("signature: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if j.Scheme == "" {
		return errors.New("signature.scheme is required: none, hmac, digest or standard-webhooks")
	}
	*s = InboundSignature{Scheme: j.Scheme, Algorithm: j.Algorithm, Message: j.Message, Encoding: j.Encoding,
		Header: j.Header, Query: j.Query, Prefix: j.Prefix, TimestampHeader: j.TimestampHeader, Secret: j.Secret}
	if j.Tolerance != "" {
		d, err := time.ParseDuration(j.Tolerance)
		if err != nil || d <= 0 {
			return errors.New("signature.tolerance must be a positive duration such as \"5m\"")
		}
		s.Tolerance = d
	}
	return nil
}

// Signed reports whether callbacks must carry a signature.
func (s *InboundSignature) Signed() bool {
	return s.Scheme != "" && s.Scheme != InboundNone
}

func inboundInvalid(field, format string, args ...any) error {
	return Errorf(EINVALID, "signature.%s "+format, append([]any{field}, args...)...)
}

// Check fills in the defaults of s and validates it; errors name the field
// ("signature.algorithm ..."). It must be called before Verify.
func (s *InboundSignature) Check() error {
	s.key, s.newHash, s.macs = nil, nil, nil
	if err := s.check(); err != nil {
		s.newHash = nil
		return err
	}
	if s.newHash != nil {
		key, newHash, digest := s.key, s.newHash, s.Scheme == InboundDigest
		s.macs = &sync.Pool{New: func() any {
			if digest {
				return newHash()
			}
			return hmac.New(newHash, key)
		}}
	}
	return nil
}

func (s *InboundSignature) check() error {
	if s.Scheme == "" {
		s.Scheme = InboundNone
	}
	switch s.Scheme {
	case InboundNone:
		if s.Secret != "" {
			return inboundInvalid("secret", "must be empty for scheme none")
		}
		for _, f := range []struct{ v, name string }{{s.Algorithm, "algorithm"}, {s.Message, "message"},
			{s.Encoding, "encoding"}, {s.Header, "header"}, {s.Query, "query"}, {s.Prefix, "prefix"},
			{s.TimestampHeader, "timestamp_header"}} {
			if f.v != "" {
				return inboundInvalid(f.name, "does not apply to scheme none")
			}
		}
		if s.Tolerance != 0 {
			return inboundInvalid("tolerance", "does not apply to scheme none")
		}
		return nil
	case InboundStandardWebhooks:
		return s.checkStandardWebhooks()
	case InboundHMAC, InboundDigest:
		return s.checkHMAC()
	}
	return inboundInvalid("scheme", "must be one of none, hmac, digest, standard-webhooks")
}

func (s *InboundSignature) checkStandardWebhooks() error {
	for _, f := range []struct{ v, name string }{{s.Algorithm, "algorithm"}, {s.Message, "message"},
		{s.Encoding, "encoding"}, {s.Header, "header"}, {s.Query, "query"}, {s.Prefix, "prefix"},
		{s.TimestampHeader, "timestamp_header"}} {
		if f.v != "" {
			return inboundInvalid(f.name, "does not apply to scheme standard-webhooks (its headers are webhook-id, webhook-timestamp and webhook-signature)")
		}
	}
	if err := s.checkTolerance(); err != nil {
		return err
	}
	if s.Tolerance == 0 {
		s.Tolerance = DefaultInboundTolerance
	}
	b64, ok := strings.CutPrefix(s.Secret, SecretPrefix)
	if !ok {
		return inboundInvalid("secret", "is required for scheme standard-webhooks, in the form whsec_<base64>")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < MinInboundSecret || len(key) > MaxInboundSecret {
		return inboundInvalid("secret", "must be whsec_ followed by the base64 of %d to %d bytes", MinInboundSecret, MaxInboundSecret)
	}
	s.key, s.newHash = key, sha256.New
	return nil
}

func (s *InboundSignature) checkTolerance() error {
	if s.Tolerance < 0 || s.Tolerance > MaxInboundTolerance {
		return inboundInvalid("tolerance", "must be between 1s and %s", MaxInboundTolerance)
	}
	if s.Tolerance != 0 && s.Tolerance < time.Second {
		return inboundInvalid("tolerance", "must be between 1s and %s", MaxInboundTolerance)
	}
	return nil
}

func (s *InboundSignature) checkHMAC() error {
	switch s.Algorithm {
	case "", "sha256":
		s.Algorithm, s.newHash = "sha256", sha256.New
	case "sha1":
		s.newHash = sha1.New
	case "md5":
		s.newHash = md5.New
	default:
		return inboundInvalid("algorithm", "must be one of sha256, sha1, md5")
	}
	if s.Scheme == InboundDigest {
		if s.Message != "" && s.Message != MessageBodySecret {
			return inboundInvalid("message", "must be body+secret for scheme digest")
		}
		s.Message = MessageBodySecret
	} else {
		switch s.Message {
		case "":
			s.Message = MessageBody
		case MessageBody, MessageTimestampBody:
		default:
			return inboundInvalid("message", "must be body or timestamp+body for scheme hmac")
		}
	}
	switch s.Encoding {
	case "":
		s.Encoding = "hex"
	case "hex", "base64":
	default:
		return inboundInvalid("encoding", "must be hex or base64")
	}
	if s.Header != "" && s.Query != "" {
		return inboundInvalid("header", "and signature.query exclude each other: the signature is in one place")
	}
	if s.Header == "" && s.Query == "" {
		s.Header = "X-Signature"
	}
	if s.Header != "" {
		if !validHeaderName(s.Header) {
			return inboundInvalid("header", "must be an HTTP header name of at most %d characters", maxInboundName)
		}
		s.Header = http.CanonicalHeaderKey(s.Header)
	}
	if s.Query != "" && (len(s.Query) > maxInboundName || CheckHeaderValue("signature.query", s.Query) != nil || strings.ContainsAny(s.Query, "&=# ")) {
		return inboundInvalid("query", "must be a query parameter name of at most %d characters", maxInboundName)
	}
	if len(s.Prefix) > maxInboundPrefix || CheckHeaderValue("signature.prefix", s.Prefix) != nil || strings.TrimSpace(s.Prefix) != s.Prefix {
		return inboundInvalid("prefix", "must be at most %d printable characters, without surrounding spaces", maxInboundPrefix)
	}
	if s.TimestampHeader != "" {
		if !validHeaderName(s.TimestampHeader) {
			return inboundInvalid("timestamp_header", "must be an HTTP header name of at most %d characters", maxInboundName)
		}
		s.TimestampHeader = http.CanonicalHeaderKey(s.TimestampHeader)
	} else if s.Message == MessageTimestampBody {
		return inboundInvalid("timestamp_header", "is required with message timestamp+body")
	}
	if err := s.checkTolerance(); err != nil {
		return err
	}
	if s.TimestampHeader == "" && s.Tolerance != 0 {
		return inboundInvalid("tolerance", "applies only with signature.timestamp_header")
	}
	if s.TimestampHeader != "" && s.Tolerance == 0 {
		s.Tolerance = DefaultInboundTolerance
	}
	if len(s.Secret) < MinInboundSecret {
		return inboundInvalid("secret", "is required for scheme %s: at least %d characters", s.Scheme, MinInboundSecret)
	}
	if err := CheckText("signature.secret", s.Secret, MaxInboundSecret); err != nil {
		return err
	}
	s.key = []byte(s.Secret)
	return nil
}

// validHeaderName reports whether n is an HTTP header name (RFC 9110 token)
// of at most maxInboundName characters.
func validHeaderName(n string) bool {
	if n == "" || len(n) > maxInboundName {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// Where returns where the signature is expected, for messages and the API
// ("the X-Signature header", "the query parameter sign").
func (s *InboundSignature) Where() string {
	switch {
	case s.Scheme == InboundStandardWebhooks:
		return "the webhook-signature header"
	case s.Query != "":
		return "the query parameter " + s.Query
	}
	return "the " + s.Header + " header"
}

// Expect describes the signature expected, for messages ("sha256=<hex
// HMAC-SHA256 of the body>").
func (s *InboundSignature) Expect() string {
	if s.Scheme == InboundStandardWebhooks {
		return "v1,<base64 HMAC-SHA256 of webhook-id.webhook-timestamp.body>"
	}
	alg := strings.ToUpper(s.Algorithm)
	what := "the body"
	switch s.Message {
	case MessageTimestampBody:
		what = s.TimestampHeader + "." + "body"
	case MessageBodySecret:
		what = "the body followed by the secret"
	}
	if s.Scheme == InboundHMAC {
		alg = "HMAC-" + alg
	}
	return fmt.Sprintf("%s<%s %s of %s>", s.Prefix, s.Encoding, alg, what)
}

func (s *InboundSignature) refuse(cause error, format string, args ...any) error {
	return WrapError(EBADSIGNATURE, fmt.Sprintf(format, args...), cause)
}

// Verify checks a callback's signature: its headers h, raw query and body,
// at now. Comparisons are constant-time. A refusal is EBADSIGNATURE wrapping
// one of ErrSignatureMissing, ErrSignatureInvalid, ErrTimestampMissing and
// ErrTimestampStale, with a message that says what was expected.
func (s *InboundSignature) Verify(h http.Header, rawQuery string, body []byte, now time.Time) error {
	switch s.Scheme {
	case "", InboundNone:
		return nil
	}
	if s.newHash == nil {
		// Check failed on a stored declaration: refuse rather than pass.
		return s.refuse(ErrSignatureInvalid, "the carrier's signature declaration is not usable; the operator must set it again")
	}
	if s.Scheme == InboundStandardWebhooks {
		return s.verifyStandardWebhooks(h, body, now)
	}
	var sig string
	if s.Query != "" {
		q, _ := url.ParseQuery(rawQuery)
		sig = q.Get(s.Query)
	} else {
		sig = headerValue(h, s.Header)
	}
	sig = strings.TrimSpace(sig)
	if sig == "" {
		return s.refuse(ErrSignatureMissing, "missing signature: send %s with %s", s.Where(), s.Expect())
	}
	var ts string
	if s.TimestampHeader != "" {
		var err error
		if ts, err = s.checkTimestamp(headerValue(h, s.TimestampHeader), s.TimestampHeader, now); err != nil {
			return err
		}
	}
	enc, ok := strings.CutPrefix(sig, s.Prefix)
	if !ok {
		return s.refuse(ErrSignatureInvalid, "invalid signature in %s: it must start with %q (want %s)", s.Where(), s.Prefix, s.Expect())
	}
	var gotBuf, wantBuf [64]byte
	got, ok := decodeSignature(gotBuf[:], enc, s.Encoding)
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	if s.Scheme == InboundDigest {
		mac.Write(body)
		mac.Write(s.key)
	} else {
		if s.Message == MessageTimestampBody {
			io.WriteString(mac, ts)
			mac.Write([]byte{'.'})
		}
		mac.Write(body)
	}
	want := mac.Sum(wantBuf[:0])
	s.macs.Put(mac)
	if !ok || !hmac.Equal(got, want) {
		return s.refuse(ErrSignatureInvalid, "invalid signature in %s (want %s)", s.Where(), s.Expect())
	}
	return nil
}

// headerValue is h.Get(name) for a name already canonical, without
// canonicalising it again.
func headerValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// checkTimestamp parses a Unix-seconds timestamp from header name and
// checks it is within the tolerance of now; it returns the header's value.
func (s *InboundSignature) checkTimestamp(v, name string, now time.Time) (string, error) {
	v = strings.TrimSpace(v)
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", s.refuse(ErrTimestampMissing, "missing or malformed %s header: send the time of signing in Unix seconds", name)
	}
	d := now.Sub(time.Unix(sec, 0))
	if d > s.Tolerance || d < -s.Tolerance {
		return "", s.refuse(ErrTimestampStale, "%s header %s is outside the tolerance of %s from now (%d): refused as a possible replay", name, v, s.Tolerance, now.Unix())
	}
	return v, nil
}

// decodeSignature decodes a hex or base64 (standard or URL-safe, padded or
// not) signature into dst (64 bytes: the longest digest).
func decodeSignature(dst []byte, s, encoding string) ([]byte, bool) {
	if encoding == "hex" {
		if len(s) > 2*len(dst) || len(s)%2 != 0 {
			return nil, false
		}
		n := 0
		for i := 0; i < len(s); i += 2 {
			hi, ok1 := fromHex(s[i])
			lo, ok2 := fromHex(s[i+1])
			if !ok1 || !ok2 {
				return nil, false
			}
			dst[n] = hi<<4 | lo
			n++
		}
		return dst[:n], true
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	if enc.DecodedLen(len(s)) > len(dst) {
		return nil, false
	}
	n, err := enc.Decode(dst, []byte(s))
	if err != nil {
		return nil, false
	}
	return dst[:n], true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// verifyStandardWebhooks checks webhook-signature, a space-separated list
// of "v1,<base64>" of which one must match.
func (s *InboundSignature) verifyStandardWebhooks(h http.Header, body []byte, now time.Time) error {
	id := headerValue(h, "Webhook-Id")
	sigs := headerValue(h, "Webhook-Signature")
	if id == "" || sigs == "" {
		return s.refuse(ErrSignatureMissing, "missing signature: send webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks, %s)", s.Expect())
	}
	ts, err := s.checkTimestamp(headerValue(h, "Webhook-Timestamp"), "webhook-timestamp", now)
	if err != nil {
		return err
	}
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	io.WriteString(mac, id)
	mac.Write([]byte{'.'})
	io.WriteString(mac, ts)
	mac.Write([]byte{'.'})
	mac.Write(body)
	var wantBuf, gotBuf [64]byte
	want := mac.Sum(wantBuf[:0])
	s.macs.Put(mac)
	matched := 0
	for f := range strings.FieldsSeq(sigs) {
		b64, ok := strings.CutPrefix(f, "v1,")
		if !ok {
			continue // another version (v1a: asymmetric)
		}
		if got, ok := decodeSignature(gotBuf[:], b64, "base64"); ok {
			matched |= subtleEq(got, want)
		}
	}
	if matched == 0 {
		return s.refuse(ErrSignatureInvalid, "invalid signature in the webhook-signature header: no v1 signature matches (want %s)", s.Expect())
	}
	return nil
}

func subtleEq(a, b []byte) int {
	if hmac.Equal(a, b) {
		return 1
	}
	return 0
}
