package seal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustNew(t *testing.T, current []byte, older ...[]byte) *Sealer {
	t.Helper()
	s, err := New(current, older...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func TestNewRejectsWrongKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New(%d-byte key) succeeded", n)
		}
		if _, err := New(key(1), make([]byte, n)); err == nil {
			t.Errorf("New with a %d-byte older key succeeded", n)
		}
	}
}

func TestKeyID(t *testing.T) {
	k := key(7)
	sum := sha256.Sum256(k)
	if got, want := mustNew(t, k).KeyID(), hex.EncodeToString(sum[:])[:8]; got != want {
		t.Errorf("KeyID() = %q, want %q", got, want)
	}
}

func TestSealOpen(t *testing.T) {
	s := mustNew(t, key(1))
	aad := []byte("binding")
	for _, pt := range []string{"", "refresh-token-123", strings.Repeat("x", 10000)} {
		sealed, err := s.Seal([]byte(pt), aad)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1."+s.KeyID()+".") {
			t.Errorf("sealed value %q does not start with v1.<kid>.", sealed[:20])
		}
		if pt != "" && strings.Contains(sealed, pt) {
			t.Errorf("sealed value contains the plaintext")
		}
		again, _ := s.Seal([]byte(pt), aad)
		if again == sealed {
			t.Errorf("two seals of the same value are equal: the nonce is not random")
		}
		got, err := s.Open(sealed, aad)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if string(got) != pt {
			t.Errorf("Open = %q, want %q", got, pt)
		}
	}
}

func TestOpenFails(t *testing.T) {
	s := mustNew(t, key(1))
	aad := []byte("binding A")
	const secret = "the-secret-token"
	sealed, _ := s.Seal([]byte(secret), aad)
	other, _ := mustNew(t, key(2)).Seal([]byte(secret), aad)
	prefix, data, _ := strings.Cut(strings.TrimPrefix(sealed, "v1."), ".")
	flipped := []byte(data) // one base64 digit changed: still well-formed, no longer authentic
	if i := len(flipped) / 2; flipped[i] == 'A' {
		flipped[i] = 'B'
	} else {
		flipped[i] = 'A'
	}

	tests := []struct {
		name, sealed string
		aad          []byte
	}{
		{"wrong aad", sealed, []byte("binding B")},
		{"no aad", sealed, nil},
		{"other key", other, aad},
		{"empty", "", aad},
		{"plaintext", secret, aad},
		{"other version", "v2" + strings.TrimPrefix(sealed, "v1"), aad},
		{"missing part", "v1." + prefix, aad},
		{"bad base64", "v1." + prefix + ".!!!", aad},
		{"truncated", sealed[:len(sealed)-4], aad},
		{"too short", "v1." + prefix + ".AAAA", aad},
		{"altered", "v1." + prefix + "." + string(flipped), aad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Open(tt.sealed, tt.aad)
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("Open = %q, %v; want an error wrapping ErrOpen", got, err)
			}
			if strings.Contains(err.Error(), secret) || (len(tt.sealed) > 12 && strings.Contains(err.Error(), tt.sealed)) {
				t.Errorf("error %q reveals the value", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	old := mustNew(t, key(1))
	sealedOld, _ := old.Seal([]byte("v"), nil)

	rotated := mustNew(t, key(2), key(1))
	if rotated.KeyID() == old.KeyID() {
		t.Fatal("rotated Sealer kept the old key ID")
	}
	if got, err := rotated.Open(sealedOld, nil); err != nil || string(got) != "v" {
		t.Errorf("opening a value sealed under an older key = %q, %v", got, err)
	}
	sealedNew, _ := rotated.Seal([]byte("w"), nil)
	if !strings.HasPrefix(sealedNew, "v1."+rotated.KeyID()+".") {
		t.Errorf("rotated Sealer seals under %q, want the current key", sealedNew[:11])
	}

	_, err := mustNew(t, key(2)).Open(sealedOld, nil)
	if !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), old.KeyID()) {
		t.Errorf("opening without the older key: %v; want ErrOpen naming key %s", err, old.KeyID())
	}
}
