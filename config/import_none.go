package config

import (
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate"
)

// ErrNoServers is wrapped by the error [ParseImportFile] returns for a
// file that parses but has no object (or list) of MCP servers where its
// format keeps them: a host's settings file before any server was added.
// Such an error is also of [mcpgate.CategoryInvalid].
var ErrNoServers = errors.New("no MCP servers in the file")

// noServersf is an invalid-input error wrapping [ErrNoServers], its
// message the formatted text alone.
func noServersf(format string, args ...any) error {
	return &mcpgate.Error{Category: mcpgate.CategoryInvalid, Message: fmt.Sprintf(format, args...), Err: ErrNoServers}
}
