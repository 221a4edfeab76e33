package config_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/config"
)

func TestDefaultPaths(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name              string
		env               map[string]string
		wantPath, wantDir string
	}{
		{"home fallback", nil,
			filepath.Join(home, ".config", "mcpgate", "config.json"), filepath.Join(home, ".local", "share", "mcpgate")},
		{"XDG", map[string]string{"XDG_CONFIG_HOME": "/xdg/config", "XDG_DATA_HOME": "/xdg/data"},
			"/xdg/config/mcpgate/config.json", "/xdg/data/mcpgate"},
		{"relative XDG is ignored", map[string]string{"XDG_CONFIG_HOME": "rel", "XDG_DATA_HOME": "rel"},
			filepath.Join(home, ".config", "mcpgate", "config.json"), filepath.Join(home, ".local", "share", "mcpgate")},
		{"mcpgate overrides win", map[string]string{"XDG_CONFIG_HOME": "/xdg", "MCPGATE_CONFIG": "/etc/mcpgate.json", "MCPGATE_DATA_DIR": "/var/lib/mcpgate"},
			"/etc/mcpgate.json", "/var/lib/mcpgate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			for _, k := range []string{"MCPGATE_CONFIG", "MCPGATE_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"} {
				t.Setenv(k, tt.env[k])
			}
			if got, err := config.DefaultPath(); err != nil || got != tt.wantPath {
				t.Errorf("DefaultPath() = %q, %v; want %q", got, err, tt.wantPath)
			}
			if got, err := config.DefaultDataDir(); err != nil || got != tt.wantDir {
				t.Errorf("DefaultDataDir() = %q, %v; want %q", got, err, tt.wantDir)
			}
		})
	}
}
