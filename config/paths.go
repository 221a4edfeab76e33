package config

import (
	"errors"
	"os"
	"runtime"
	"strings"
)

// DefaultPath returns where the config file lives: $MCPGATE_CONFIG, else
// $XDG_CONFIG_HOME/mcpgate/config.json, else ~/.config/mcpgate/config.json.
// The ~/.config fallback is used on every OS (not the OS's own config
// folder) so the path in documentation is the path on disk. The home
// directory is $HOME, on Windows %USERPROFILE%.
func DefaultPath() (string, error) {
	return defaultPath(runtime.GOOS, os.Getenv)
}

// DefaultDataDir returns where mcpgate keeps its state (the credential
// store, keys): $MCPGATE_DATA_DIR, else $XDG_DATA_HOME/mcpgate, else
// ~/.local/share/mcpgate, on every OS.
func DefaultDataDir() (string, error) {
	return defaultDataDir(runtime.GOOS, os.Getenv)
}

func defaultPath(goos string, getenv func(string) string) (string, error) {
	if p := getenv("MCPGATE_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := xdgDir(goos, getenv, "XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", err
	}
	return joinPath(goos, dir, "mcpgate", "config.json"), nil
}

func defaultDataDir(goos string, getenv func(string) string) (string, error) {
	if p := getenv("MCPGATE_DATA_DIR"); p != "" {
		return p, nil
	}
	dir, err := xdgDir(goos, getenv, "XDG_DATA_HOME", ".local", "share")
	if err != nil {
		return "", err
	}
	return joinPath(goos, dir, "mcpgate"), nil
}

// xdgDir returns $env, or ~/fallback. The XDG spec says a relative value is
// invalid and must be ignored, which also keeps a stray relative setting
// from scattering files into whatever directory mcpgate was started in.
func xdgDir(goos string, getenv func(string) string, env string, fallback ...string) (string, error) {
	if dir := getenv(env); isAbs(goos, dir) {
		return dir, nil
	}
	// As os.UserHomeDir, for the OS asked about rather than this one.
	homeEnv := "HOME"
	switch goos {
	case "windows":
		homeEnv = "USERPROFILE"
	case "plan9":
		homeEnv = "home"
	}
	home := getenv(homeEnv)
	if home == "" {
		return "", errors.New("finding the home directory: $" + homeEnv + " is not set")
	}
	return joinPath(goos, append([]string{home}, fallback...)...), nil
}

// isAbs is filepath.IsAbs for goos: on Windows a drive letter and a
// slash, or a UNC path; elsewhere a leading slash.
func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//") {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
}

// joinPath is filepath.Join for goos, without cleaning what the person set.
func joinPath(goos string, elem ...string) string {
	sep, trim := "/", "/"
	if goos == "windows" {
		sep, trim = `\`, `\/`
	}
	p := elem[0]
	for _, e := range elem[1:] {
		p = strings.TrimRight(p, trim) + sep + e
	}
	return p
}
