package fake

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// maxAssertionLifetime bounds how far in the future a client assertion may
// expire, as real authorization servers do to limit replay windows.
const maxAssertionLifetime = time.Hour

// checkAssertionKey accepts the keys private_key_jwt is verified with here.
func checkAssertionKey(key crypto.PublicKey) error {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return errors.New("ECDSA keys must be on P-256 (ES256)")
		}
		return nil
	case *rsa.PublicKey:
		return nil
	}
	return fmt.Errorf("unsupported key type %T (want *ecdsa.PublicKey or *rsa.PublicKey)", key)
}

// assertionClaims are the claims RFC 7523 §3 requires of a client assertion.
type assertionClaims struct {
	Iss string          `json:"iss"`
	Sub string          `json:"sub"`
	Aud json.RawMessage `json:"aud"`
	Exp *float64        `json:"exp"`
	Nbf *float64        `json:"nbf"`
	JTI string          `json:"jti"`
}

// assertionSubject returns the unverified sub claim of a JWT, to find the
// client whose key will verify it; "" if there is none.
func assertionSubject(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	var c assertionClaims
	if decodeSegment(parts[1], &c) != nil {
		return ""
	}
	return c.Sub
}

// verifyAssertion verifies a private_key_jwt client assertion: an ES256,
// RS256 or PS256 signature by key (the alg must fit the key, so "none" and
// algorithm confusion fail), iss = sub = clientID, an aud among audiences, exp in the
// future (by at most an hour), nbf if present in the past, and a jti. It
// returns the jti and expiry, for the caller's replay check.
func verifyAssertion(jwt string, key crypto.PublicKey, clientID string, audiences []string, now time.Time) (jti string, exp time.Time, err error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", time.Time{}, errors.New("not a compact JWS")
	}
	var header struct {
		Alg  string   `json:"alg"`
		Crit []string `json:"crit"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return "", time.Time{}, errors.New("bad header")
	}
	if len(header.Crit) > 0 {
		return "", time.Time{}, errors.New("unsupported critical header parameters")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", time.Time{}, errors.New("bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if header.Alg != "ES256" {
			return "", time.Time{}, fmt.Errorf("alg %q does not fit an ECDSA P-256 key", header.Alg)
		}
		// JWS carries r||s, not ASN.1 (RFC 7518 §3.4).
		if len(sig) != 64 || !ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return "", time.Time{}, errors.New("bad signature")
		}
	case *rsa.PublicKey:
		var bad error
		switch header.Alg {
		case "RS256":
			bad = rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig)
		case "PS256":
			bad = rsa.VerifyPSS(k, crypto.SHA256, sum[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		default:
			return "", time.Time{}, fmt.Errorf("alg %q does not fit an RSA key", header.Alg)
		}
		if bad != nil {
			return "", time.Time{}, errors.New("bad signature")
		}
	default:
		return "", time.Time{}, errors.New("no key to verify with")
	}

	var c assertionClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return "", time.Time{}, errors.New("bad claims")
	}
	if c.Iss != clientID || c.Sub != clientID {
		return "", time.Time{}, errors.New("iss and sub must be the client_id")
	}
	var aud []string
	if json.Unmarshal(c.Aud, &aud) != nil {
		var one string
		if json.Unmarshal(c.Aud, &one) != nil {
			return "", time.Time{}, errors.New("aud must be a string or an array of strings")
		}
		aud = []string{one}
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(audiences, a) }) {
		return "", time.Time{}, errors.New("aud must be the issuer")
	}
	if c.Exp == nil {
		return "", time.Time{}, errors.New("exp is required")
	}
	exp = time.Unix(int64(*c.Exp), 0)
	if !now.Before(exp) {
		return "", time.Time{}, errors.New("expired")
	}
	if exp.After(now.Add(maxAssertionLifetime)) {
		return "", time.Time{}, errors.New("exp is too far in the future")
	}
	if c.Nbf != nil && now.Before(time.Unix(int64(*c.Nbf), 0)) {
		return "", time.Time{}, errors.New("not yet valid")
	}
	if c.JTI == "" {
		return "", time.Time{}, errors.New("jti is required")
	}
	return c.JTI, exp, nil
}

func decodeSegment(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
