package config_test

import (
	"errors"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// A host's file without its servers' key is ErrNoServers (still invalid
// input when imported by name); a file that does not parse, or whose
// servers are malformed, is not.
func TestImportNoServers(t *testing.T) {
	tests := []struct {
		format config.Format
		data   string
		none   bool
	}{
		{config.FormatCursor, `{"theme": "dark"}`, true},
		{config.FormatVSCode, `{"inputs": []}`, true},
		{config.FormatZed, `{"vim_mode": true}`, true},
		{config.FormatCodex, "model = \"o3\"\n", true},
		{config.FormatGoose, "GOOSE_PROVIDER: openai\n", true},
		{config.FormatContinue, "name: x\nversion: 0.0.1\n", true},
		{config.FormatCursor, `{"mcpServers": [1]}`, false},
		{config.FormatCursor, `{"mcpServers": {`, false},
		{config.FormatCodex, "mcp_servers = 3\n", false},
	}
	for _, tt := range tests {
		_, err := config.ParseImport([]byte(tt.data), tt.format)
		if err == nil {
			t.Errorf("%s %q: no error", tt.format, tt.data)
			continue
		}
		if errors.Is(err, config.ErrNoServers) != tt.none {
			t.Errorf("%s %q: errors.Is(ErrNoServers) = %v: %v", tt.format, tt.data, !tt.none, err)
		}
		if mcpgate.CategoryOf(err) != mcpgate.CategoryInvalid {
			t.Errorf("%s %q: category %s", tt.format, tt.data, mcpgate.CategoryOf(err))
		}
	}
}
