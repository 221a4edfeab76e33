// Package seal encrypts the secret fields mcpgate stores: tokens, client
// secrets and PKCE verifiers.
//
// A [Sealer] seals with AES-256-GCM under its current key and opens values
// sealed under the current key or any older key it was given, so a key can
// be rotated without losing what was stored. Every sealed value names the
// key that sealed it:
//
//	v1.<key ID>.<base64url(nonce || ciphertext)>
//
// The caller passes additional data (the record's binding) to both Seal and
// Open, so a sealed value copied to another record does not open.
//
// [Load] finds the key the way mcpgate does: $MCPGATE_SECRET_KEY, else the
// OS keyring, else a key file in the data directory.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// ErrOpen is wrapped by every error from [Sealer.Open]: the value is
// malformed, was sealed under a key this Sealer does not have, or was
// sealed with other additional data. Store backends report it as
// store.ErrSealed.
var ErrOpen = errors.New("cannot open sealed value")

const version = "v1"

// Sealer seals and opens values. It is safe for concurrent use.
type Sealer struct {
	kid  string
	aead map[string]cipher.AEAD // by key ID; holds the current key and the older ones
}

// New returns a Sealer that seals under current and opens values sealed
// under current or any of older. Every key must be [KeySize] bytes.
func New(current []byte, older ...[]byte) (*Sealer, error) {
	s := &Sealer{aead: make(map[string]cipher.AEAD)}
	for i, key := range append([][]byte{current}, older...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("seal: key %d is %d bytes, want %d", i, len(key), KeySize)
		}
		kid := keyID(key)
		if i == 0 {
			s.kid = kid
		}
		if _, dup := s.aead[kid]; dup {
			// The same key twice is harmless; two keys whose IDs
			// collide (one chance in 2^32) could not be told apart.
			continue
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		s.aead[kid] = aead
	}
	return s, nil
}

// keyID names a key without revealing it: 32 bits of its SHA-256.
func keyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// KeyID identifies the current key: the first 8 hex digits of its SHA-256.
func (s *Sealer) KeyID() string { return s.kid }

// Seal encrypts plaintext under the current key with a random nonce,
// authenticating aad.
func (s *Sealer) Seal(plaintext, aad []byte) (string, error) {
	ct := s.aead[s.kid].Seal(nil, nil, plaintext, aad)
	return version + "." + s.kid + "." + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Open decrypts a value from [Sealer.Seal] given the same aad. Its errors
// wrap [ErrOpen] and never contain the value.
func (s *Sealer) Open(sealed string, aad []byte) ([]byte, error) {
	v, rest, ok1 := strings.Cut(sealed, ".")
	kid, data, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || v != version {
		return nil, fmt.Errorf("%w: not a %s sealed value", ErrOpen, version)
	}
	aead, ok := s.aead[kid]
	if !ok {
		// The key ID is not secret, and naming it tells an operator
		// which key is missing.
		return nil, fmt.Errorf("%w: sealed under key %q, which is not loaded", ErrOpen, kid)
	}
	ct, err := base64.RawURLEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed %s sealed value", ErrOpen, version)
	}
	pt, err := aead.Open(nil, nil, ct, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (value altered or moved to another record)", ErrOpen)
	}
	return pt, nil
}
