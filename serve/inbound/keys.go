package inbound

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// KeyPrefix starts every API key, so people, logs scanners and secret
// scanners recognise one.
const KeyPrefix = "mgk_"

const (
	idBytes     = 10 // 80 bits: unique, not secret
	secretBytes = 32 // 256 bits
)

// keyEncoding is lower-case base32 without padding: no '_' (which
// separates the parts), nothing a shell or URL would mangle, and readable
// aloud.
var keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

var (
	idLen     = keyEncoding.EncodedLen(idBytes)
	secretLen = keyEncoding.EncodedLen(secretBytes)
	keyLen    = len(KeyPrefix) + idLen + 1 + secretLen
)

// MaxKeyName and MaxKeyUser bound an API key's label and user.
const (
	MaxKeyName = 128
	MaxKeyUser = 256
)

// NewKey makes an API key for tenant, acting for user (empty: the key is
// its own user) and labelled name. It returns the key, to show once and
// never again, and the record to store ([store.APIKeyStore.CreateAPIKey]),
// which holds only its hash. Errors are of [mcpgate.CategoryInvalid].
func NewKey(tenant, user, name string) (key string, rec *store.APIKey, err error) {
	if mcpgate.ValidateID(tenant) != nil {
		return "", nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "tenant %q: not a tenant ID", tenant)
	}
	if err := checkLabel("name", name, MaxKeyName); err != nil {
		return "", nil, err
	}
	if err := checkLabel("user", user, MaxKeyUser); err != nil {
		return "", nil, err
	}
	id := keyEncoding.EncodeToString(randomBytes(idBytes))
	secret := keyEncoding.EncodeToString(randomBytes(secretBytes))
	rec = &store.APIKey{ID: id, Tenant: tenant, User: user, Name: name, Hash: keyHash(id, secret), CreatedAt: timeNow().UTC()}
	return KeyPrefix + id + "_" + secret, rec, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return b
}

// checkLabel refuses what would garble a terminal or a log: control
// characters, invalid UTF-8, surrounding space, too long.
func checkLabel(what, s string, max int) error {
	switch {
	case len(s) > max:
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "%s: at most %d bytes", what, max)
	case !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "%s: must be printable text", what)
	case strings.TrimSpace(s) != s:
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "%s: must not start or end with a space", what)
	}
	return nil
}

// KeyID returns the ID of an API key, or an error if s is not one. It
// does not check the key: the ID is public.
func KeyID(s string) (string, error) {
	id, _, ok := parseKey(s)
	if !ok {
		return "", errors.New("not an mcpgate API key")
	}
	return id, nil
}

// ValidKeyID reports whether id has the shape of a key's ID.
func ValidKeyID(id string) bool {
	return len(id) == idLen && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") == ""
}

// parseKey splits a key into its ID and secret, checking their shape.
func parseKey(s string) (id, secret string, ok bool) {
	if len(s) != keyLen || !strings.HasPrefix(s, KeyPrefix) {
		return "", "", false
	}
	id, secret, ok = strings.Cut(s[len(KeyPrefix):], "_")
	if !ok || !ValidKeyID(id) || len(secret) != secretLen || strings.Trim(secret, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return "", "", false
	}
	return id, secret, true
}

// keyHash is what is stored of a key: SHA-256 of its secret, bound to its
// ID so a hash copied to another row does not match. A plain hash is
// enough for 256 random bits: there is nothing to guess, so nothing for a
// slow hash to slow down.
func keyHash(id, secret string) []byte {
	sum := sha256.Sum256([]byte("mcpgate-api-key-v1\x00" + id + "\x00" + secret))
	return sum[:]
}

// matches compares in constant time, so the time taken says nothing about
// how much of the secret was right.
func matches(hash []byte, id, secret string) bool {
	return subtle.ConstantTimeCompare(hash, keyHash(id, secret)) == 1
}
