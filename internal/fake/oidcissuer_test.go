package fake_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestOIDCIssuersRunningAtOnceShareNoKey: issuers keep their keys apart
// while they run, a rotated key and the forger's key are new ones, and an
// issuer started after others ended publishes its own kid even when it
// signs with a key one of them held.
func TestOIDCIssuersRunningAtOnceShareNoKey(t *testing.T) {
	t.Parallel()
	var kids []string
	t.Run("two at once", func(t *testing.T) {
		a, b := fake.StartOIDCIssuer(t), fake.StartOIDCIssuer(t)
		if a.PublicKey().Equal(b.PublicKey()) {
			t.Fatal("two running issuers sign with one key")
		}
		first := a.PublicKey()
		kids = append(kids, a.KeyID(), b.KeyID(), a.Rotate())
		if a.PublicKey().Equal(first) || a.PublicKey().Equal(b.PublicKey()) {
			t.Error("a rotated key is one a running issuer had already")
		}
		claims := map[string]any{"sub": "mallory"}
		if verifies(t, a.Forge(a.KeyID(), claims), a.PublicKey()) {
			t.Error("a forged token verifies with the issuer's key")
		}
		if !verifies(t, a.Token(claims), a.PublicKey()) {
			t.Error("the issuer's own token does not verify with its key")
		}
	})
	c := fake.StartOIDCIssuer(t)
	if slices.Contains(kids, c.KeyID()) {
		t.Errorf("a later issuer publishes kid %s of an earlier one", c.KeyID())
	}
	if !verifies(t, c.Token(map[string]any{"sub": "sam"}), c.PublicKey()) {
		t.Error("a later issuer's token does not verify with its key")
	}
}

// verifies reports whether the RS256 JWT tok is signed by pub.
func verifies(t *testing.T, tok string, pub *rsa.PublicKey) bool {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
}
