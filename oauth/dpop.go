package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// DPoP (RFC 9449, MCP SEP-1932) binds a credential's tokens to a key pair
// of mcpgate's: every token request and every request to the server
// carries a fresh proof, signed with the private key, of the request it
// goes with. A token that leaks is then useless without the key.
//
// The key is made at sign-in, one per credential, and kept sealed in the
// store with it (store.Credential.DPoPKey): a refresh, in any process,
// must prove possession of the key the refresh token was bound to. It is
// ES256 (P-256), the algorithm every DPoP server supports.

// dpopAlg is the proof algorithm.
const dpopAlg = "ES256"

// errNoDPoP says an authorization server cannot bind tokens to a key.
var errNoDPoP = errors.New("the authorization server does not support DPoP")

// dpopKey is the key pair a credential's tokens are bound to.
type dpopKey struct {
	priv *ecdsa.PrivateKey
}

func newDPoPKey() (*dpopKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &dpopKey{priv: k}, nil
}

// decodeDPoPKey reads a key as [dpopKey.encode] wrote it.
func decodeDPoPKey(s string) (*dpopKey, error) {
	der, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("the stored DPoP key is not base64url")
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("the stored DPoP key does not parse")
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("the stored DPoP key is not a P-256 key")
	}
	return &dpopKey{priv: ec}, nil
}

// encode is the key's stored form: PKCS #8 DER in base64url.
func (k *dpopKey) encode() string {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return "" // cannot happen for a P-256 key
	}
	return base64.RawURLEncoding.EncodeToString(der)
}

// jwk is the public key as a JWK (RFC 7517), for the proof's header.
func (k *dpopKey) jwk() map[string]string {
	raw, _ := k.priv.PublicKey.Bytes() // 0x04 || X || Y
	return map[string]string{
		"kty": "EC",
		"crv": "P-256",
		"x":   base64.RawURLEncoding.EncodeToString(raw[1:33]),
		"y":   base64.RawURLEncoding.EncodeToString(raw[33:]),
	}
}

// proof is a DPoP proof (RFC 9449 §4.2) for one request: its method and
// target URI (without query and fragment), when it was made, a unique
// jti, the server's nonce when it gave one, and, with an access token,
// that token's hash (ath), binding the proof to it.
func (k *dpopKey) proof(method, target, accessToken, nonce string, now time.Time) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	claims := jwt.MapClaims{
		"jti": randomToken(),
		"htm": method,
		"htu": u.String(),
		"iat": now.Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["typ"] = "dpop+jwt"
	t.Header["jwk"] = k.jwk()
	return t.SignedString(k.priv)
}

// supportsDPoP reports whether asm binds tokens with proofs mcpgate makes.
func supportsDPoP(asm *authServer) bool {
	for _, alg := range asm.DPoPSigningAlgValuesSupported {
		if alg == dpopAlg {
			return true
		}
	}
	return false
}

// maxNonceBytes bounds a DPoP nonce a server hands out; RFC 9449 §8.1
// nonces are short opaque strings.
const maxNonceBytes = 512

// noteNonce remembers the DPoP-Nonce a response from the server at rawURL
// carried (RFC 9449 §8, §9), for the proofs of the next requests there.
func (c *Client) noteNonce(rawURL string, h http.Header) {
	n := h.Get("DPoP-Nonce")
	if n == "" || len(n) > maxNonceBytes || strings.ContainsFunc(n, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.nonces) > 100 {
		clear(c.nonces) // a bound; a forgotten nonce costs one retry
	}
	c.nonces[originOf(rawURL)] = n
}

// nonce is the DPoP nonce the server at rawURL gave last, if any.
func (c *Client) nonce(rawURL string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonces[originOf(rawURL)]
}

func originOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + hostPort(u)
}

// useDPoP decides whether a sign-in to cfg's server binds its tokens with
// DPoP: when configured, or when the server's challenge accepts only DPoP
// tokens. Then the authorization server must support it.
func useDPoP(cfg *mcpgate.ServerConfig, ch challenge, asm *authServer) (bool, error) {
	if !cfg.DPoP && !(ch.dpop && !ch.bearer) {
		return false, nil
	}
	if !supportsDPoP(asm) {
		why := "the server " + cfg.ID + " accepts only DPoP-bound tokens"
		if cfg.DPoP {
			why = "dpop is set for " + cfg.ID
		}
		return false, &mcpgate.Error{Category: mcpgate.CategoryUnsupported, Code: "dpop_unsupported",
			Message: why + ", but its authorization server " + sanitizeText("%s", asm.Issuer) + " does not advertise DPoP with " + dpopAlg + " (dpop_signing_alg_values_supported)", Err: errNoDPoP}
	}
	return true, nil
}

// credentialKey is the DPoP key a new credential's tokens are bound to,
// nil for none: that of prev, the credential it replaces, when prev was
// bound to one (a machine grant asks again with the same key), else a new
// one when useDPoP says so.
func (c *Client) credentialKey(cfg *mcpgate.ServerConfig, ch challenge, asm *authServer, prev *store.Credential) (*dpopKey, error) {
	if prev != nil && prev.DPoPKey != "" && prev.Issuer == asm.Issuer {
		k, err := decodeDPoPKey(prev.DPoPKey)
		if err != nil {
			return nil, &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: "reading the credential's DPoP key: " + err.Error()}
		}
		return k, nil
	}
	use, err := useDPoP(cfg, ch, asm)
	if err != nil || !use {
		return nil, err
	}
	k, err := newDPoPKey()
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInternal, "making a DPoP key: %w", err)
	}
	return k, nil
}
