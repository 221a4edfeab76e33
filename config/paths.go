package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultPath returns where the config file lives: $MCPGATE_CONFIG, else
// $XDG_CONFIG_HOME/mcpgate/config.json, else ~/.config/mcpgate/config.json.
// The ~/.config fallback is used on every OS (not the OS's own config
// folder) so the path in documentation is the path on disk.
func DefaultPath() (string, error) {
	if p := os.Getenv("MCPGATE_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := xdgDir("XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcpgate", "config.json"), nil
}

// DefaultDataDir returns where mcpgate keeps its state (the credential
// store, keys): $MCPGATE_DATA_DIR, else $XDG_DATA_HOME/mcpgate, else
// ~/.local/share/mcpgate.
func DefaultDataDir() (string, error) {
	if p := os.Getenv("MCPGATE_DATA_DIR"); p != "" {
		return p, nil
	}
	dir, err := xdgDir("XDG_DATA_HOME", filepath.Join(".local", "share"))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcpgate"), nil
}

// xdgDir returns $env, or ~/fallback. The XDG spec says a relative value is
// invalid and must be ignored, which also keeps a stray relative setting
// from scattering files into whatever directory mcpgate was started in.
func xdgDir(env, fallback string) (string, error) {
	if dir := os.Getenv(env); filepath.IsAbs(dir) {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory: %w", err)
	}
	return filepath.Join(home, fallback), nil
}
