package config

import (
	"strings"
	"testing"
)

// The config file and data directory are where paths.go says on each OS:
// under the home directory the OS names ($HOME, %USERPROFILE% on
// Windows), in the OS's own path syntax, unless XDG or MCPGATE variables
// name an absolute path for that OS.
func TestDefaultPathsPerOS(t *testing.T) {
	tests := []struct {
		goos               string
		env                map[string]string
		wantPath, wantData string
	}{
		{"linux", map[string]string{"HOME": "/home/ada"},
			"/home/ada/.config/mcpgate/config.json", "/home/ada/.local/share/mcpgate"},
		{"darwin", map[string]string{"HOME": "/Users/ada/", "USERPROFILE": `C:\Users\nobody`},
			"/Users/ada/.config/mcpgate/config.json", "/Users/ada/.local/share/mcpgate"},
		{"windows", map[string]string{"USERPROFILE": `C:\Users\ada`, "HOME": "/home/nobody"},
			`C:\Users\ada\.config\mcpgate\config.json`, `C:\Users\ada\.local\share\mcpgate`},
		{"windows", map[string]string{"USERPROFILE": `C:\Users\ada`, "XDG_CONFIG_HOME": `D:\cfg`, "XDG_DATA_HOME": `\\srv\share\data`},
			`D:\cfg\mcpgate\config.json`, `\\srv\share\data\mcpgate`},
		// A Unix path is relative on Windows and a drive path relative elsewhere: ignored, as XDG says.
		{"windows", map[string]string{"USERPROFILE": `C:\Users\ada`, "XDG_CONFIG_HOME": "/xdg", "XDG_DATA_HOME": `C:rel`},
			`C:\Users\ada\.config\mcpgate\config.json`, `C:\Users\ada\.local\share\mcpgate`},
		{"linux", map[string]string{"HOME": "/home/ada", "XDG_CONFIG_HOME": `C:\x`, "XDG_DATA_HOME": "/xdg/data"},
			"/home/ada/.config/mcpgate/config.json", "/xdg/data/mcpgate"},
		{"freebsd", map[string]string{"HOME": "/usr/home/ada", "MCPGATE_CONFIG": "rel.json", "MCPGATE_DATA_DIR": "data"},
			"rel.json", "data"},
		{"plan9", map[string]string{"home": "/usr/ada"},
			"/usr/ada/.config/mcpgate/config.json", "/usr/ada/.local/share/mcpgate"},
	}
	for _, tt := range tests {
		getenv := func(k string) string { return tt.env[k] }
		if got, err := defaultPath(tt.goos, getenv); err != nil || got != tt.wantPath {
			t.Errorf("%s %v: config %q, %v; want %q", tt.goos, tt.env, got, err, tt.wantPath)
		}
		if got, err := defaultDataDir(tt.goos, getenv); err != nil || got != tt.wantData {
			t.Errorf("%s %v: data %q, %v; want %q", tt.goos, tt.env, got, err, tt.wantData)
		}
	}
	// No home directory: an error naming the variable the OS uses.
	for goos, v := range map[string]string{"linux": "$HOME", "windows": "$USERPROFILE"} {
		if _, err := defaultPath(goos, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("%s without a home: %v, want an error naming %s", goos, err, v)
		}
	}
}
