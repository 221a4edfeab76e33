package seal

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/zalando/go-keyring"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	// No test may reach the real OS keyring: tests that want one install
	// a fake with fakeKeyring.
	keyringGet = func(string, string) (string, error) { return "", errors.New("test touched the real keyring") }
	keyringSet = func(string, string, string) error { return errors.New("test touched the real keyring") }
	goleak.VerifyTestMain(m)
}

// env is a fake environment.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// memKeyring is a fake OS keyring installed by fakeKeyring.
type memKeyring struct {
	mu     sync.Mutex
	m      map[string]string
	err    error         // returned by every call when set
	setErr error         // returned by Set when set
	hang   chan struct{} // every call blocks until it is closed, when set
	gets   int
	writes int
}

func fakeKeyring(t *testing.T, k *memKeyring) {
	t.Helper()
	oldGet, oldSet := keyringGet, keyringSet
	t.Cleanup(func() { keyringGet, keyringSet = oldGet, oldSet })
	if k.m == nil {
		k.m = map[string]string{}
	}
	keyringGet = func(service, user string) (string, error) {
		if k.hang != nil {
			<-k.hang
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		k.gets++
		if k.err != nil {
			return "", k.err
		}
		v, ok := k.m[service+"/"+user]
		if !ok {
			return "", keyring.ErrNotFound
		}
		return v, nil
	}
	keyringSet = func(service, user, password string) error {
		if k.hang != nil {
			<-k.hang
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		k.writes++
		if k.err != nil {
			return k.err
		}
		if k.setErr != nil {
			return k.setErr
		}
		k.m[service+"/"+user] = password
		return nil
	}
}

func load(t *testing.T, opts LoadOptions) (*Sealer, Source) {
	t.Helper()
	s, src, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s, src
}

func TestLoadFromEnv(t *testing.T) {
	k := key(9)
	want := mustNew(t, k).KeyID()
	for name, v := range map[string]string{
		"std":          base64.StdEncoding.EncodeToString(k),
		"url":          base64.URLEncoding.EncodeToString(k),
		"raw std":      base64.RawStdEncoding.EncodeToString(k),
		"raw url":      base64.RawURLEncoding.EncodeToString(k),
		"with newline": base64.StdEncoding.EncodeToString(k) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			s, src := load(t, LoadOptions{Getenv: env(EnvKey, v)}) // no DataDir: none needed
			if src != SourceEnv || s.KeyID() != want {
				t.Errorf("Load = key %s from %s, want %s from env", s.KeyID(), src, want)
			}
		})
	}
}

func TestLoadRejectsBadEnv(t *testing.T) {
	for _, v := range []string{
		"not-base64-at-all!",
		base64.StdEncoding.EncodeToString(make([]byte, 16)),
		base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"hunter2hunter2hunter2hunter2hunter2hunter2",
	} {
		_, _, err := Load(LoadOptions{DataDir: t.TempDir(), Getenv: env(EnvKey, v), NoKeyring: true})
		if err == nil {
			t.Errorf("Load accepted %s=%q", EnvKey, v)
			continue
		}
		if !strings.Contains(err.Error(), EnvKey) || strings.Contains(err.Error(), v) {
			t.Errorf("error %q should name %s and not contain its value", err, EnvKey)
		}
	}
}

func TestLoadCreatesKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s1, src := load(t, LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
	if src != SourceFile {
		t.Errorf("source = %s, want file", src)
	}
	assertMode(t, dir, 0o700|os.ModeDir)
	path := filepath.Join(dir, KeyFileName)
	assertMode(t, path, 0o600)

	s2, src := load(t, LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
	if src != SourceFile || s2.KeyID() != s1.KeyID() {
		t.Errorf("second Load = key %s from %s, want %s from file", s2.KeyID(), src, s1.KeyID())
	}

	// The file holds what MCPGATE_SECRET_KEY would.
	b, _ := os.ReadFile(path)
	s3, _ := load(t, LoadOptions{Getenv: env(EnvKey, string(b))})
	if s3.KeyID() != s1.KeyID() {
		t.Errorf("the key file's content as %s gives key %s, want %s", EnvKey, s3.KeyID(), s1.KeyID())
	}
}

func TestLoadKeyFileRace(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, _, err := Load(LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = s.KeyID()
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent Loads created different keys: %v", ids)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only the key file", len(entries))
	}
}

func TestLoadRefusesBadKeyFile(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(key(3)) + "\n"
	tests := []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"group readable", good, 0o640, "chmod 600"},
		{"world readable", good, 0o604, "chmod 600"},
		{"short key", base64.StdEncoding.EncodeToString(key(3)[:16]), 0o600, "32-byte"},
		{"long key", base64.StdEncoding.EncodeToString(append(key(3), 0)), 0o600, "32-byte"},
		{"empty", "", 0o600, "32-byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFileName)
			if err := os.WriteFile(path, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tt.mode) // past the umask
			_, _, err := Load(LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error mentioning %q", err, tt.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("Load changed the refused key file")
			}
		})
	}
}

func TestLoadNeedsDataDir(t *testing.T) {
	if _, _, err := Load(LoadOptions{Getenv: env(), NoKeyring: true}); err == nil {
		t.Error("Load without key, keyring or data dir succeeded")
	}
}

func TestLoadKeyring(t *testing.T) {
	kr := &memKeyring{}
	fakeKeyring(t, kr)
	dir := t.TempDir()

	s1, src := load(t, LoadOptions{DataDir: dir, Getenv: env()})
	if src != SourceKeyring {
		t.Fatalf("source = %s, want keyring", src)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key file was created although the keyring holds the key")
	}
	s2, src := load(t, LoadOptions{DataDir: dir, Getenv: env()})
	if src != SourceKeyring || s2.KeyID() != s1.KeyID() {
		t.Errorf("second Load = key %s from %s, want %s from keyring", s2.KeyID(), src, s1.KeyID())
	}
	if kr.writes != 1 {
		t.Errorf("keyring written %d times, want once", kr.writes)
	}
}

func TestLoadKeyringDisabled(t *testing.T) {
	for name, opts := range map[string]LoadOptions{
		"option": {NoKeyring: true, Getenv: env()},
		"env":    {Getenv: env(EnvKeyring, "off")},
	} {
		t.Run(name, func(t *testing.T) {
			kr := &memKeyring{}
			fakeKeyring(t, kr)
			opts.DataDir = t.TempDir()
			if _, src := load(t, opts); src != SourceFile {
				t.Errorf("source = %s, want file", src)
			}
			if kr.gets+kr.writes != 0 {
				t.Errorf("the keyring was used although disabled")
			}
		})
	}
}

func TestLoadExistingKeyFileWinsOverNewKeyringKey(t *testing.T) {
	dir := t.TempDir()
	fromFile, _ := load(t, LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})

	kr := &memKeyring{}
	fakeKeyring(t, kr)
	s, src := load(t, LoadOptions{DataDir: dir, Getenv: env()})
	if src != SourceFile || s.KeyID() != fromFile.KeyID() {
		t.Errorf("Load = key %s from %s, want the existing file's %s", s.KeyID(), src, fromFile.KeyID())
	}
	if kr.writes != 0 {
		t.Errorf("a key was created in the keyring although the key file exists")
	}
}

func TestLoadKeyringAndFileKeepsFileKeyForOpening(t *testing.T) {
	dir := t.TempDir()
	fromFile, _ := load(t, LoadOptions{DataDir: dir, Getenv: env(), NoKeyring: true})
	sealed, _ := fromFile.Seal([]byte("x"), nil)

	kr := &memKeyring{m: map[string]string{keyringService + "/" + keyringUser: base64.StdEncoding.EncodeToString(key(5))}}
	fakeKeyring(t, kr)
	s, src := load(t, LoadOptions{DataDir: dir, Getenv: env()})
	if src != SourceKeyring || s.KeyID() != mustNew(t, key(5)).KeyID() {
		t.Fatalf("Load = key %s from %s, want the keyring's", s.KeyID(), src)
	}
	if _, err := s.Open(sealed, nil); err != nil {
		t.Errorf("a value sealed under the key file does not open: %v", err)
	}
}

func TestLoadKeyringFailureFallsBackToFile(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		fakeKeyring(t, &memKeyring{err: errors.New("no secret service on this bus")})
		if _, src := load(t, LoadOptions{DataDir: t.TempDir(), Getenv: env()}); src != SourceFile {
			t.Errorf("source = %s, want file", src)
		}
	})
	t.Run("read only", func(t *testing.T) {
		kr := &memKeyring{setErr: errors.New("keyring is locked")}
		fakeKeyring(t, kr)
		dir := t.TempDir()
		s1, src := load(t, LoadOptions{DataDir: dir, Getenv: env()})
		if src != SourceFile || kr.writes != 1 {
			t.Errorf("source = %s after %d keyring writes, want file after one failed write", src, kr.writes)
		}
		if s2, _ := load(t, LoadOptions{DataDir: dir, Getenv: env()}); s2.KeyID() != s1.KeyID() {
			t.Errorf("second Load found another key")
		}
	})
	t.Run("bad entry", func(t *testing.T) {
		kr := &memKeyring{m: map[string]string{keyringService + "/" + keyringUser: "garbage"}}
		fakeKeyring(t, kr)
		if _, src := load(t, LoadOptions{DataDir: t.TempDir(), Getenv: env()}); src != SourceFile {
			t.Errorf("source = %s, want file", src)
		}
		if kr.m[keyringService+"/"+keyringUser] != "garbage" {
			t.Errorf("the keyring entry was overwritten")
		}
	})
	t.Run("hang", func(t *testing.T) {
		kr := &memKeyring{hang: make(chan struct{})}
		fakeKeyring(t, kr)
		t.Cleanup(func() { close(kr.hang) }) // lets the abandoned call end, for goleak
		old := keyringTimeout
		keyringTimeout = 50 * time.Millisecond
		t.Cleanup(func() { keyringTimeout = old })

		start := time.Now()
		if _, src := load(t, LoadOptions{DataDir: t.TempDir(), Getenv: env()}); src != SourceFile {
			t.Errorf("source = %s, want file", src)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Load took %v with a hanging keyring", d)
		}
	})
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", filepath.Base(path), got, want)
	}
}

// TestFromEnvNeedsTheVariable: replicas sharing a store take the key from
// the environment only, never from this machine's keyring or a new file.
func TestFromEnvNeedsTheVariable(t *testing.T) {
	k := key(7)
	s, err := FromEnv(env(EnvKey, base64.StdEncoding.EncodeToString(k)))
	if err != nil || s.KeyID() != mustNew(t, k).KeyID() {
		t.Fatalf("FromEnv with the key set: %v", err)
	}
	keyringGet = func(string, string) (string, error) {
		t.Error("FromEnv read the keyring")
		return "", errors.New("no")
	}
	defer func() { keyringGet = keyring.Get }()
	bad := "hunter2hunter2hunter2hunter2hunter2hunter2"
	for v, want := range map[string]string{"": "is not set", bad: "is not the base64"} {
		_, err := FromEnv(env(EnvKey, v))
		if err == nil || !strings.Contains(err.Error(), EnvKey) || !strings.Contains(err.Error(), want) || (v != "" && strings.Contains(err.Error(), v)) {
			t.Errorf("FromEnv with %s=%q: %v", EnvKey, v, err)
		}
	}
}
