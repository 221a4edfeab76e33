package fake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// DPoP (RFC 9449) as the fakes check it: ES256 proofs only, which is what
// every DPoP server accepts and what clients send.

// dpopWindow is how far a proof's iat may be from now (RFC 9449 §11.1
// leaves it to the server; a minute is common).
const dpopWindow = time.Minute

// dpopProof is what a verified proof says.
type dpopProof struct {
	jkt   string // the RFC 7638 thumbprint of its key
	jti   string
	nonce string
	exp   time.Time // when its jti may be forgotten
}

// verifyDPoPProof checks a DPoP proof for a request with method to target
// (RFC 9449 §4.3): one compact JWS of typ dpop+jwt, alg ES256, signed by the
// public P-256 key in its jwk header (no private part), with jti, htm =
// method, htu = target without query and fragment, iat within a minute of
// now, and, with an access token, ath = its SHA-256.
func verifyDPoPProof(proof, method, target, accessToken string, now time.Time) (*dpopProof, error) {
	if proof == "" {
		return nil, errors.New("no DPoP proof")
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, errors.New("the DPoP proof is not a compact JWS")
	}
	var header struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return nil, errors.New("the DPoP proof's header does not decode")
	}
	if header.Typ != "dpop+jwt" {
		return nil, errors.New("typ must be dpop+jwt")
	}
	if header.Alg != "ES256" {
		return nil, errors.New("alg must be ES256")
	}
	var jwk map[string]any
	if err := json.Unmarshal(header.JWK, &jwk); err != nil {
		return nil, errors.New("the jwk header is missing or not an object")
	}
	if _, private := jwk["d"]; private {
		return nil, errors.New("the jwk header holds a private key")
	}
	key, jkt, err := p256Key(jwk)
	if err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || len(sig) != 64 || !ecdsa.Verify(key, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, errors.New("the DPoP proof's signature does not verify")
	}
	var claims struct {
		JTI   string   `json:"jti"`
		HTM   string   `json:"htm"`
		HTU   string   `json:"htu"`
		IAT   *float64 `json:"iat"`
		ATH   string   `json:"ath"`
		Nonce string   `json:"nonce"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, errors.New("the DPoP proof's claims do not decode")
	}
	switch {
	case claims.JTI == "":
		return nil, errors.New("jti is required")
	case claims.HTM != method:
		return nil, errors.New("htm is not the request's method")
	case claims.HTU != htu(target):
		return nil, errors.New("htu is not the request's URI")
	case claims.IAT == nil:
		return nil, errors.New("iat is required")
	}
	iat := time.Unix(int64(*claims.IAT), 0)
	if iat.Before(now.Add(-dpopWindow)) || iat.After(now.Add(dpopWindow)) {
		return nil, errors.New("iat is not within a minute of now")
	}
	if accessToken != "" {
		want := sha256.Sum256([]byte(accessToken))
		if claims.ATH != base64.RawURLEncoding.EncodeToString(want[:]) {
			return nil, errors.New("ath is not the hash of the access token")
		}
	}
	return &dpopProof{jkt: jkt, jti: claims.JTI, nonce: claims.Nonce, exp: now.Add(2 * dpopWindow)}, nil
}

// htu is a request URI as a proof names it: without query and fragment.
func htu(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}

// p256Key reads a public EC P-256 JWK and returns the key and its RFC 7638
// thumbprint.
func p256Key(jwk map[string]any) (*ecdsa.PublicKey, string, error) {
	kty, _ := jwk["kty"].(string)
	crv, _ := jwk["crv"].(string)
	x, _ := jwk["x"].(string)
	y, _ := jwk["y"].(string)
	if kty != "EC" || crv != "P-256" {
		return nil, "", errors.New("the jwk must be an EC P-256 key")
	}
	xb, err1 := base64.RawURLEncoding.DecodeString(x)
	yb, err2 := base64.RawURLEncoding.DecodeString(y)
	if err1 != nil || err2 != nil || len(xb) != 32 || len(yb) != 32 {
		return nil, "", errors.New("the jwk's coordinates are not 32-byte base64url")
	}
	key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, xb...), yb...))
	if err != nil {
		return nil, "", errors.New("the jwk is not a point on P-256")
	}
	// RFC 7638 §3.2: the required members, sorted, no whitespace.
	canonical := `{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return key, base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// seenJTIs remembers the jti of proofs until they could no longer be
// accepted anyway, so a replayed proof is refused.
type seenJTIs map[string]time.Time

// fresh reports whether jti is new, and remembers it.
func (s seenJTIs) fresh(p *dpopProof, now time.Time) bool {
	for k, until := range s {
		if now.After(until) {
			delete(s, k)
		}
	}
	if _, seen := s[p.jkt+"\x00"+p.jti]; seen {
		return false
	}
	s[p.jkt+"\x00"+p.jti] = p.exp
	return true
}
