package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
)

// Environment variables [Load] reads.
const (
	// EnvKey holds the key as standard or URL base64 of exactly 32 bytes.
	EnvKey = "MCPGATE_SECRET_KEY"
	// EnvKeyring set to "off" keeps Load away from the OS keyring.
	EnvKeyring = "MCPGATE_KEYRING"
)

// KeyFileName is the key file's name inside the data directory.
const KeyFileName = "secret.key"

// Where the keyring keeps the key.
const (
	keyringService = "mcpgate"
	keyringUser    = "secret-key"
)

// Test seams: the keyring is reached only through these, and a keyring
// that does not answer (a locked macOS keychain, a D-Bus without a secret
// service over SSH) must not hang the process.
var (
	keyringGet     = keyring.Get
	keyringSet     = keyring.Set
	keyringTimeout = 3 * time.Second
	// goos decides the key file's permission check and the words of the
	// keyring notice; tests set another OS.
	goos = runtime.GOOS
)

// Source says where [Load] found the key.
type Source string

// Key sources.
const (
	SourceEnv     Source = "env"
	SourceKeyring Source = "keyring"
	SourceFile    Source = "file"
)

// LoadOptions configure [Load].
type LoadOptions struct {
	// DataDir holds the key file when neither the environment nor the
	// keyring has the key.
	DataDir string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// NoKeyring skips the OS keyring, as MCPGATE_KEYRING=off does.
	NoKeyring bool
	// Notice, when set, is told in one sentence that the OS keyring could
	// not keep a new key and the key file does instead, so a person knows
	// where their key is. The sentence never holds the key. Only Load
	// tells it; Find creates nothing.
	Notice func(msg string)
}

// Load finds the key and returns a Sealer for it:
//
//  1. $MCPGATE_SECRET_KEY, which must be the base64 of exactly 32 bytes;
//  2. the OS keyring (service "mcpgate", user "secret-key"), if it holds a key;
//  3. the key file <DataDir>/secret.key, if it exists;
//  4. a new key, stored in the OS keyring if that works, else in a new key file.
//
// An existing key file wins over creating a key in the keyring, so data
// sealed while the keyring was unavailable stays readable once it is back.
// If both the keyring and the key file hold a key, the file's key is kept
// for opening only.
//
// The key file holds the key in base64 (so it can be copied into
// $MCPGATE_SECRET_KEY), is created with mode 0600 in a 0700 directory, and
// is refused if others may read it. Errors never contain a key.
func Load(opts LoadOptions) (*Sealer, Source, error) {
	s, src, err := find(opts)
	if !errors.Is(err, ErrNoKey) {
		return s, src, err
	}
	// The keyring was asked unless turned off; a new key going to the
	// file after all means it failed or refused the key.
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	keyringFailed := !opts.NoKeyring && !isOff(getenv(EnvKeyring))
	if src == SourceKeyring {
		if key, err := keyringCreate(); err == nil {
			s, err := New(key)
			return s, SourceKeyring, err
		}
	}
	path := filepath.Join(opts.DataDir, KeyFileName)
	key, err := createKeyFile(path)
	if err != nil {
		return nil, "", err
	}
	if keyringFailed && opts.Notice != nil {
		opts.Notice(fmt.Sprintf("the OS keyring could not keep the secret key (%s), so it is in the key file %s, readable by you only; set %s=off to stop trying the keyring", keyringTrouble(goos), path, EnvKeyring))
	}
	s, err = New(key)
	return s, SourceFile, err
}

// keyringTrouble says in words why the keyring of goos usually fails,
// instead of the keyring library's own message.
func keyringTrouble(goos string) string {
	switch goos {
	case "darwin":
		return "the login keychain did not answer; it may be locked"
	case "windows":
		return "the Windows Credential Manager refused it"
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return "no Secret Service answered on D-Bus, as usual over SSH, in containers and without a desktop session"
	}
	return "mcpgate knows no keyring on " + goos
}

// ErrNoKey is returned by [Find] when there is no key yet, which [Load]
// would create.
var ErrNoKey = errors.New("no secret key has been created yet")

// ErrKeyFileMode is wrapped by the error for a key file that others than
// its owner may read, which [Load] and [Find] refuse.
var ErrKeyFileMode = errors.New("the key file is readable by others")

// Find reports where [Load] would find the key, in the same order, without
// creating one or changing anything: the source of the key, or the error
// Load would return. With no key anywhere, the error is [ErrNoKey] and the
// source is where Load would create one. Errors never contain a key.
func Find(opts LoadOptions) (Source, error) {
	_, src, err := find(opts)
	return src, err
}

// find is Load's search for an existing key. With no key it returns
// ErrNoKey and the source a new key is to go to: the keyring when one
// answered that it has none, else the key file.
func find(opts LoadOptions) (*Sealer, Source, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvKey); v != "" {
		key, err := parseKey(v)
		if err != nil {
			return nil, SourceEnv, fmt.Errorf("%s is not the base64 of a %d-byte key", EnvKey, KeySize)
		}
		s, err := New(key)
		return s, SourceEnv, err
	}

	useKeyring := !opts.NoKeyring && !isOff(getenv(EnvKeyring))
	if useKeyring {
		key, err := keyringLoad()
		if err == nil {
			var older [][]byte
			if opts.DataDir != "" {
				if fk, err := readKeyFile(filepath.Join(opts.DataDir, KeyFileName)); err == nil {
					older = append(older, fk)
				}
			}
			s, err := New(key, older...)
			return s, SourceKeyring, err
		}
		// A keyring that fails or does not answer is not an error:
		// the key file is the fallback. Only one that answered "not
		// found" is trusted with a new key.
		useKeyring = errors.Is(err, keyring.ErrNotFound)
	}

	if opts.DataDir == "" {
		return nil, "", errors.New("loading secret key: no data directory for the key file")
	}
	key, err := readKeyFile(filepath.Join(opts.DataDir, KeyFileName))
	if err == nil {
		s, err := New(key)
		return s, SourceFile, err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, SourceFile, err
	}
	if useKeyring {
		return nil, SourceKeyring, ErrNoKey
	}
	return nil, SourceFile, ErrNoKey
}

func isOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// parseKey accepts standard or URL base64, padded or not, of exactly
// KeySize bytes.
func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil && len(key) == KeySize {
			return key, nil
		}
	}
	return nil, errors.New("not the base64 of a 32-byte key")
}

func newKey() []byte {
	key := make([]byte, KeySize)
	rand.Read(key) // never fails; it crashes the program if the OS has no randomness
	return key
}

// withTimeout runs f in a goroutine and stops waiting for it after
// keyringTimeout. A keyring call that never returns leaves its goroutine
// behind; that is the price of not hanging the process.
func withTimeout(f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(keyringTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-t.C:
		return "", errors.New("the OS keyring did not answer")
	}
}

func keyringLoad() ([]byte, error) {
	get := keyringGet // read here: the goroutine may outlive a test that swaps it
	v, err := withTimeout(func() (string, error) { return get(keyringService, keyringUser) })
	if err != nil {
		return nil, err
	}
	key, err := parseKey(v)
	if err != nil {
		// Not overwritten: Load falls back to the key file instead.
		return nil, fmt.Errorf("the OS keyring entry %s/%s is not a %d-byte key", keyringService, keyringUser, KeySize)
	}
	return key, nil
}

// keyringCreate stores a new key and reads it back, so that two processes
// creating a key at the same moment end up using the same one.
func keyringCreate() ([]byte, error) {
	set, key := keyringSet, base64.StdEncoding.EncodeToString(newKey())
	_, err := withTimeout(func() (string, error) {
		return "", set(keyringService, keyringUser, key)
	})
	if err != nil {
		return nil, err
	}
	return keyringLoad()
}

// readKeyFile reads a key file, refusing one that others may read.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file", path)
	}
	// Windows reports no meaningful permission bits; its ACLs are not checked.
	if goos != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, &modeError{fmt.Sprintf("key file %s has mode %#o: it must be readable by its owner only (chmod 600 %s)", path, fi.Mode().Perm(), path)}
	}
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	key, err := parseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("key file %s does not hold the base64 of a %d-byte key", path, KeySize)
	}
	return key, nil
}

// modeError is the refusal of a key file others may read; it matches
// ErrKeyFileMode.
type modeError struct{ msg string }

func (e *modeError) Error() string        { return e.msg }
func (e *modeError) Is(target error) bool { return target == ErrKeyFileMode }

// createKeyFile writes a new key file. The key is written to a temporary
// file first and linked into place, which fails if the file exists: a
// process never reads a half-written key, and of two processes creating
// the file at once, the second uses the first one's key.
func createKeyFile(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+KeyFileName+"-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	key := newKey()
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKeyFile(path)
		}
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	syncDir(dir)
	return key, nil
}

// syncDir makes the new file's directory entry durable before anything is
// sealed under its key. Best effort: not every OS can sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// FromEnv returns a Sealer for the key in $MCPGATE_SECRET_KEY only, for
// processes that share their store with others on other machines (the
// replicas of serve --http): a key found in a keyring or file of this
// machine would seal what the others cannot open. Errors never contain a
// key.
func FromEnv(getenv func(string) string) (*Sealer, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	v := getenv(EnvKey)
	if v == "" {
		return nil, fmt.Errorf("%s is not set: every replica needs the same key, the base64 of %d random bytes (openssl rand -base64 %d)", EnvKey, KeySize, KeySize)
	}
	key, err := parseKey(v)
	if err != nil {
		return nil, fmt.Errorf("%s is not the base64 of a %d-byte key", EnvKey, KeySize)
	}
	return New(key)
}
