package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/store"
)

// tokenResponse is a successful token endpoint answer (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string   `json:"access_token"`
	TokenType    string   `json:"token_type"`
	ExpiresIn    lifetime `json:"expires_in"`
	RefreshToken string   `json:"refresh_token"`
	Scope        string   `json:"scope"`
}

// maxLifetime bounds the lifetime a token answer may claim. A longer one
// is taken as this long: the token is refreshed (or asked for again) a
// year on, or sooner when the server refuses it.
const maxLifetime = 365 * 24 * time.Hour

// errBadExpiresIn is the decoding error of an expires_in that is no
// number of seconds.
var errBadExpiresIn = errors.New("expires_in is not a number of seconds")

// lifetime is a token answer's expires_in (RFC 6749 §5.1): a number of
// seconds, or that number as a string, as some deployed servers send it.
// Zero (or absent) means the server did not say. A value beyond
// maxLifetime is maxLifetime, so that no claim overflows a time.Duration
// (10^10 seconds would put the expiry in 1759 and every request would ask
// for a new token).
type lifetime time.Duration

func (l *lifetime) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*l = 0
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return errBadExpiresIn
		}
		s = strings.TrimSpace(s)
	}
	// Digits first: ParseFloat would also take "Inf", "NaN" and hex.
	if s == "" || s[0] < '0' || s[0] > '9' || strings.ContainsAny(s, "xXpP_") {
		return errBadExpiresIn
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return errBadExpiresIn
	}
	*l = lifetime(maxLifetime)
	if secs < maxLifetime.Seconds() {
		*l = lifetime(time.Duration(secs * float64(time.Second)))
	}
	return nil
}

// clientAuth is how we authenticate to a token endpoint.
type clientAuth struct {
	id     string
	secret string
	method string // client_secret_basic, client_secret_post, none, private_key_jwt
	key    crypto.Signer
	alg    string
}

// apply adds client authentication to a request to an endpoint of the
// authorization server issuer, returning the Basic credentials to send,
// if any.
func (a *clientAuth) apply(form url.Values, issuer string, now time.Time) (user, pass string, err error) {
	switch a.method {
	case "client_secret_basic":
		return a.id, a.secret, nil
	case "client_secret_post":
		form.Set("client_id", a.id)
		form.Set("client_secret", a.secret)
	case "private_key_jwt":
		assertion, err := a.assertion(issuer, now)
		if err != nil {
			return "", "", err
		}
		form.Set("client_id", a.id)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	default: // none: a public client
		if a.id != "" {
			form.Set("client_id", a.id)
		}
	}
	return "", "", nil
}

// assertion is an RFC 7523 client assertion for private_key_jwt. Its
// audience is the authorization server's issuer identifier, not the
// endpoint it is sent to (RFC 7523bis, draft-ietf-oauth-rfc7523bis §4):
// an assertion for one server's token endpoint must not be usable at
// another that happens to accept that URL.
func (a *clientAuth) assertion(issuer string, now time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Issuer:    a.id,
		Subject:   a.id,
		Audience:  jwt.ClaimStrings{issuer},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute)),
		ID:        randomToken()[:22],
	}
	return jwt.NewWithClaims(jwt.GetSigningMethod(a.alg), claims).SignedString(a.key)
}

// signingAlgs are the JWS algorithms mcpgate signs client assertions with,
// in the order it prefers them for a key that fits several.
var signingAlgs = mcpgate.SigningAlgs

// algFits reports whether key can sign with alg.
func algFits(key crypto.Signer, alg string) bool {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		curve := map[string]string{"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg]
		return curve != "" && k.Curve.Params().Name == curve
	case *rsa.PrivateKey:
		return k.N.BitLen() >= 2048 && (strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")) && slices.Contains(signingAlgs, alg)
	case ed25519.PrivateKey:
		return alg == "EdDSA"
	}
	return false
}

// chooseAlg picks the algorithm of client assertions: the configured one,
// else the key's own (ES256 for P-256, RS256 for RSA...) unless the
// authorization server lists the algorithms it accepts, then the first of
// ours it accepts that fits the key.
func chooseAlg(key crypto.Signer, configured string, accepted []string) (string, error) {
	if configured != "" {
		if !algFits(key, configured) {
			return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "the private key cannot sign with %s (privateKeyAlg)", configured)
		}
		if len(accepted) > 0 && !slices.Contains(accepted, configured) {
			return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "the authorization server does not accept %s client assertions (it lists %s)", configured, sanitizeText("%s", strings.Join(accepted, ", ")))
		}
		return configured, nil
	}
	for _, alg := range signingAlgs {
		if algFits(key, alg) && (len(accepted) == 0 || slices.Contains(accepted, alg)) {
			if len(accepted) == 0 && strings.HasPrefix(alg, "PS") {
				continue // RS256 is what every server takes when it says nothing
			}
			return alg, nil
		}
	}
	return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "the authorization server accepts no algorithm this private key can sign with (it lists %s)", sanitizeText("%s", strings.Join(accepted, ", ")))
}

// loadKey reads a PEM private key for private_key_jwt: EC (P-256, P-384,
// P-521), RSA (2048 bits or more) or Ed25519, in PKCS #8, SEC 1 or PKCS #1.
func loadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "reading the private key file: %v", errors.Unwrap(err))
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "private key file %s holds no PEM block", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "private key file %s: not a supported private key", path)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey, ed25519.PrivateKey:
		return k.(crypto.Signer), nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "private key file %s: RSA keys must have at least 2048 bits", path)
		}
		return k, nil
	}
	return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "private key file %s: only EC, RSA and Ed25519 keys are supported", path)
}

// requestToken posts a grant to the token endpoint of asm and checks the
// answer. With key, the request carries a DPoP proof (RFC 9449 §5) and
// the token must come back bound to it; a use_dpop_nonce refusal is
// answered once more with the nonce the server gave (§8). Client
// authentication is made afresh for each attempt (an assertion's jti is
// used once).
func (c *Client) requestToken(ctx context.Context, asm *authServer, form url.Values, auth *clientAuth, key *dpopKey) (*tokenResponse, error) {
	var tr tokenResponse
	for attempt := 0; ; attempt++ {
		f := cloneForm(form)
		user, pass, err := auth.apply(f, asm.Issuer, c.now())
		if err != nil {
			return nil, err
		}
		var header http.Header
		if key != nil {
			proof, err := key.proof(http.MethodPost, asm.TokenEndpoint, "", c.nonce(asm.TokenEndpoint), c.now())
			if err != nil {
				return nil, mcpgate.Errorf(mcpgate.CategoryInternal, "making a DPoP proof: %w", err)
			}
			header = http.Header{"Dpop": {proof}}
		}
		got, err := c.postFormHeader(ctx, asm.TokenEndpoint, f, user, pass, header, &tr)
		if key != nil {
			c.noteNonce(asm.TokenEndpoint, got)
		}
		var pe *ProtocolError
		if key != nil && attempt == 0 && errors.As(err, &pe) && pe.ErrorCode == "use_dpop_nonce" && got.Get("DPoP-Nonce") != "" {
			continue
		}
		if err != nil {
			return nil, tokenError(ctx, "requesting a token ("+grantName(form.Get("grant_type"))+")", err)
		}
		break
	}
	if tr.AccessToken == "" {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: "the token endpoint answered without an access token"}
	}
	switch {
	case key != nil && strings.EqualFold(tr.TokenType, "DPoP"):
	case key != nil:
		// Asked for a sender-constrained token, got one anyone holding it
		// can use: not what the person configured.
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Code: "dpop_unbound",
			Message: fmt.Sprintf("the authorization server issued a %q token instead of a DPoP-bound one; refusing it", sanitizeText("%s", tr.TokenType))}
	case tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer"):
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: fmt.Sprintf("the token endpoint issued a %q token; only Bearer is supported", sanitizeText("%s", tr.TokenType))}
	}
	return &tr, nil
}

// grantName is a grant type for messages: the URN grants by their names.
func grantName(grant string) string {
	switch grant {
	case grantJWTBearer:
		return "jwt-bearer"
	case grantTokenExchange:
		return "token-exchange"
	}
	return grant
}

// cloneForm copies a form, so each attempt adds its own authentication.
func cloneForm(f url.Values) url.Values {
	out := make(url.Values, len(f))
	for k, v := range f {
		out[k] = slices.Clone(v)
	}
	return out
}

// tokenError attributes a failed token request without remote text.
func tokenError(ctx context.Context, what string, err error) *mcpgate.Error {
	var pe *ProtocolError
	switch {
	case errors.Is(err, netpolicy.ErrRefused):
		return policyError(what, err)
	case errors.As(err, &pe):
		cat := mcpgate.CategoryAuth
		if pe.ErrorCode == "" {
			cat = mcpgate.CategoryHTTP
		}
		msg := what + ": the authorization server answered " + pe.Error()
		if d := sanitizeText("%s", pe.ErrorDescription); d != "" {
			msg += ": " + d
		}
		return &mcpgate.Error{Category: cat, HTTPStatus: pe.HTTPStatus, Code: pe.ErrorCode, Message: msg, Err: err}
	case errors.Is(err, errTooLarge):
		return &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the answer exceeded the size bound", Err: err}
	case errors.Is(err, errBadExpiresIn):
		return &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the authorization server's answer is malformed: " + errBadExpiresIn.Error(), Err: err}
	case errors.Is(err, errMalformed):
		return &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the authorization server's answer is malformed (not the JSON object the endpoint must answer)", Err: err}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: what + ": the authorization server did not answer in time", Err: err}
	}
	return &mcpgate.Error{Category: mcpgate.CategoryNetwork, Message: what + ": could not reach the authorization server", Err: err}
}

// credentialFrom turns a token answer into a credential bound to b, and
// to key when the token is DPoP-bound. prev is the credential it
// replaces: its step-up state carries over, never its refresh token (only
// a refresh may keep that; see refresh).
func (c *Client) credentialFrom(b store.Binding, tr *tokenResponse, requested []string, prev *store.Credential, key *dpopKey) *store.Credential {
	cred := &store.Credential{
		Binding:     b,
		Kind:        store.KindOAuth,
		AccessToken: tr.AccessToken,
		TokenType:   "Bearer",
		UpdatedAt:   c.now(),
	}
	if key != nil {
		cred.TokenType, cred.DPoPKey = "DPoP", key.encode()
	}
	if tr.ExpiresIn > 0 {
		cred.Expiry = c.now().Add(time.Duration(tr.ExpiresIn))
	}
	cred.RefreshToken = tr.RefreshToken
	if tr.Scope != "" {
		cred.Scopes = strings.Fields(tr.Scope)
	} else {
		cred.Scopes = requested
	}
	if prev != nil {
		// The count of sign-ins for a step-up outlives the step-up, so a
		// server that refuses what it was just granted is noticed.
		cred.StepUpCount, cred.StepUpAt = prev.StepUpCount, prev.StepUpAt
		if !grantsAll(cred.Scopes, prev.StepUpScopes) {
			// The step-up is still owed: keep asking for it (within bounds).
			cred.StepUpScopes = prev.StepUpScopes
		}
	}
	return cred
}

// grantsAll reports whether granted covers every scope in want.
func grantsAll(granted, want []string) bool {
	for _, w := range want {
		if !slices.Contains(granted, w) {
			return false
		}
	}
	return true
}

// pkce returns a code verifier and its S256 challenge (RFC 7636).
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
