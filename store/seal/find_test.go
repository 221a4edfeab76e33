package seal

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Find says where Load would find the key, and what Load would refuse,
// without creating a key anywhere.
func TestFind(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(key(5)) + "\n"
	tests := []struct {
		name     string
		env      []string
		keyring  map[string]string // nil: keyring off
		file     string            // key file content; "" for none
		mode     os.FileMode
		wantSrc  Source
		wantErr  error // matched with errors.Is; nil means success
		anyError bool  // an error is wanted, of no particular kind
	}{
		{name: "env", env: []string{EnvKey, good}, wantSrc: SourceEnv},
		{name: "bad env", env: []string{EnvKey, "not a key"}, wantSrc: SourceEnv, anyError: true},
		{name: "keyring", keyring: map[string]string{"mcpgate/secret-key": good}, wantSrc: SourceKeyring},
		{name: "file", file: good, mode: 0o600, wantSrc: SourceFile},
		{name: "file readable by others", file: good, mode: 0o644, wantSrc: SourceFile, wantErr: ErrKeyFileMode},
		{name: "file not a key", file: "short", mode: 0o600, wantSrc: SourceFile, anyError: true},
		{name: "nothing, keyring off", wantSrc: SourceFile, wantErr: ErrNoKey},
		{name: "nothing, keyring empty", keyring: map[string]string{}, wantSrc: SourceKeyring, wantErr: ErrNoKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := LoadOptions{DataDir: t.TempDir(), Getenv: env(tt.env...), NoKeyring: tt.keyring == nil}
			kr := &memKeyring{m: tt.keyring}
			fakeKeyring(t, kr)
			path := filepath.Join(opts.DataDir, KeyFileName)
			if tt.file != "" {
				if err := os.WriteFile(path, []byte(tt.file), tt.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(path, tt.mode) // past the umask
			}
			src, err := Find(opts)
			if src != tt.wantSrc {
				t.Errorf("source = %q, want %q", src, tt.wantSrc)
			}
			switch {
			case tt.anyError && err == nil:
				t.Errorf("Find succeeded, want an error")
			case !tt.anyError && tt.wantErr == nil && err != nil:
				t.Errorf("Find = %v", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Find = %v, want %v", err, tt.wantErr)
			}
			if kr.writes != 0 {
				t.Errorf("Find wrote to the keyring")
			}
			if tt.file == "" {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Find created a key file")
				}
			}
		})
	}
}
