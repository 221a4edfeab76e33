package seal

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withGOOS makes Load behave as on another OS for one test.
func withGOOS(t *testing.T, os string) {
	t.Helper()
	old := goos
	goos = os
	t.Cleanup(func() { goos = old })
}

// Where no keyring service exists (Linux over SSH, a locked keychain), the
// key goes to the key file and the person is told so once, in words that
// fit their OS and name the file; later loads use the file quietly.
func TestLoadTellsWhenTheKeyringCannotKeepTheKey(t *testing.T) {
	for _, tc := range []struct {
		goos string
		kr   *memKeyring
		want string
	}{
		{"linux", &memKeyring{err: errors.New("org.freedesktop.DBus.Error.ServiceUnknown")}, "D-Bus"},
		{"freebsd", &memKeyring{err: errors.New("no bus")}, "D-Bus"},
		{"darwin", &memKeyring{setErr: errors.New("exit status 36")}, "keychain"},
		{"windows", &memKeyring{setErr: errors.New("Access is denied.")}, "Credential Manager"},
		{"plan9", &memKeyring{err: errors.New("unsupported platform")}, "plan9"},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			withGOOS(t, tc.goos)
			fakeKeyring(t, tc.kr)
			dir := t.TempDir()
			var notes []string
			opts := LoadOptions{DataDir: dir, Getenv: env(), Notice: func(msg string) { notes = append(notes, msg) }}
			if _, src := load(t, opts); src != SourceFile {
				t.Fatalf("source = %s, want file", src)
			}
			if len(notes) != 1 || !strings.Contains(notes[0], tc.want) || !strings.Contains(notes[0], filepath.Join(dir, KeyFileName)) || !strings.Contains(notes[0], EnvKeyring+"=off") {
				t.Fatalf("notices %q, want one naming %q, the key file and %s=off", notes, tc.want, EnvKeyring)
			}
			if strings.Contains(notes[0], "exit status") || strings.Contains(notes[0], "org.freedesktop") || strings.Contains(notes[0], "Access is denied") {
				t.Errorf("the notice passes on the keyring library's message: %q", notes[0])
			}
			b, _ := os.ReadFile(filepath.Join(dir, KeyFileName))
			if k := strings.TrimSpace(string(b)); k == "" || strings.Contains(notes[0], k) {
				t.Errorf("the notice holds the key, or no key file was written")
			}
			notes = nil
			load(t, opts)
			if len(notes) != 0 {
				t.Errorf("the second load told again: %q", notes)
			}
		})
	}
}

// Nothing to tell when the person turned the keyring off or it took the key.
func TestLoadNoNoticeWhenKeyringOffOrWorking(t *testing.T) {
	var notes []string
	notice := func(msg string) { notes = append(notes, msg) }
	fakeKeyring(t, &memKeyring{err: errors.New("no bus")})
	load(t, LoadOptions{DataDir: t.TempDir(), Getenv: env(EnvKeyring, "off"), Notice: notice})
	fakeKeyring(t, &memKeyring{})
	if _, src := load(t, LoadOptions{DataDir: t.TempDir(), Getenv: env(), Notice: notice}); src != SourceKeyring {
		t.Errorf("source = %s, want keyring", src)
	}
	if len(notes) != 0 {
		t.Errorf("notices %q, want none", notes)
	}
}

// Windows has no Unix permission bits (its ACLs decide), so a key file is
// not refused there for the mode Go reports; elsewhere it is.
func TestKeyFileModeCheckPerOS(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFileName)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key(4))), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644) // past the umask
	for _, tc := range []struct {
		goos string
		ok   bool
	}{{"windows", true}, {"linux", false}, {"darwin", false}, {"freebsd", false}} {
		withGOOS(t, tc.goos)
		_, _, err := Load(LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
		if (err == nil) != tc.ok {
			t.Errorf("%s: Load = %v, want ok %v", tc.goos, err, tc.ok)
		}
	}
}
