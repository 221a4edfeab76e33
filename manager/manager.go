package manager

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var errTODO = errors.New("not implemented yet")

// Manager supervises one session per configured server. All methods are safe
// for concurrent use. Errors are [*mcpgate.Error] values or wrap the
// mcpgate sentinels (unknown server: ErrNotFound; disabled: ErrDisabled;
// authorization needed: ErrAuthRequired).
type Manager struct{}

// New validates servers and returns a manager that has not connected
// anything yet.
func New(servers []mcpgate.ServerConfig, opts *Options) (*Manager, error) { return nil, errTODO }

// Start connects, in the background, the enabled servers that have
// ConnectOnStartup set.
func (m *Manager) Start(ctx context.Context) {}

// Update replaces the configuration. A server whose binding changed passes
// the disconnect barrier before Update returns; removed servers are closed.
func (m *Manager) Update(ctx context.Context, servers []mcpgate.ServerConfig) error { return errTODO }

// Statuses returns every server's status, sorted by ID.
func (m *Manager) Statuses() []Status { return nil }

// Status returns one server's status.
func (m *Manager) Status(id string) (Status, error) { return Status{}, errTODO }

// Connect connects the server if it is not ready and loads its catalogs.
func (m *Manager) Connect(ctx context.Context, id string) error { return errTODO }

// Disconnect closes the server's session; the state becomes disconnected.
func (m *Manager) Disconnect(ctx context.Context, id string) error { return errTODO }

// Reconnect replaces the live session with a new one (or connects).
func (m *Manager) Reconnect(ctx context.Context, id string) error { return errTODO }

// Tools returns the enabled tools of a server, connecting if needed.
func (m *Manager) Tools(ctx context.Context, id string) ([]*mcp.Tool, error) { return nil, errTODO }

// Tool returns one enabled tool.
func (m *Manager) Tool(ctx context.Context, id, name string) (*mcp.Tool, error) { return nil, errTODO }

// CallTool calls an enabled tool with args (a JSON object, or empty for
// none), passed unchanged.
func (m *Manager) CallTool(ctx context.Context, id, name string, args json.RawMessage, opts *CallOptions) (*mcp.CallToolResult, error) {
	return nil, errTODO
}

// Cancel cancels the call with this operation ID, or, if it has not been
// admitted yet, makes sure it will be refused when it arrives.
func (m *Manager) Cancel(operationID string) {}

// Prompts returns the server's prompts.
func (m *Manager) Prompts(ctx context.Context, id string) ([]*mcp.Prompt, error) { return nil, errTODO }

// GetPrompt renders a prompt with its arguments.
func (m *Manager) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return nil, errTODO
}

// Resources returns the server's resources.
func (m *Manager) Resources(ctx context.Context, id string) ([]*mcp.Resource, error) {
	return nil, errTODO
}

// ReadResource reads one resource by URI.
func (m *Manager) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	return nil, errTODO
}

// Close closes every session and waits for background work to end.
func (m *Manager) Close() error { return nil }
