package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools that only run as tasks. mcpgate does not offer the tasks extension
// (2025-11-25 task-augmented requests, the 2026-07-28 extension
// io.modelcontextprotocol/tasks), so such a tool cannot be called through
// it. A tool is known to need tasks when its definition says so
// (execution.taskSupport "required", kept by the manager under
// manager.MetaTaskSupport), or once its server refused a call for that
// reason: -32021 MissingRequiredClientCapability naming the tasks
// extension (2026-07-28), or -32601 for a tool it lists (how a 2025-11-25
// server refuses a task-required tool called without a task). Such tools
// are marked in listings and refused before anything is sent.

const tasksExtension = "io.modelcontextprotocol/tasks"

// tasksMark follows a task-only tool in list and search lines.
const tasksMark = "[runs only as an MCP task, which mcpgate does not support: calls are refused]"

// maxTaskTools bounds the remembered refusals.
const maxTaskTools = 1024

type taskTools struct {
	mu   sync.Mutex
	seen map[string]bool // server + "\x00" + tool
}

func (tt *taskTools) required(server string, t *mcp.Tool) bool {
	if t == nil {
		return false
	}
	if v, _ := t.Meta[manager.MetaTaskSupport].(string); v == "required" {
		return true
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.seen[server+"\x00"+t.Name]
}

func (tt *taskTools) remember(server, tool string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.seen == nil {
		tt.seen = make(map[string]bool)
	}
	if len(tt.seen) < maxTaskTools {
		tt.seen[server+"\x00"+tool] = true
	}
}

// tasksRefusal is the model-facing refusal of a task-only tool; code is
// the server's JSON-RPC code when it refused, "" when the definition said
// so.
func tasksRefusal(server, tool, code string) error {
	return &mcpgate.Error{
		Category: mcpgate.CategoryUnsupported,
		Code:     code,
		Message: fmt.Sprintf("Tool %q of server %q runs only as an MCP task (the tasks extension), which mcpgate does not support, so it cannot be called through mcpgate. Use another tool, or tell the person.",
			clip(tool, 80), server),
	}
}

// needsTasks reports whether err is a server's refusal to run a tool
// outside a task. protocol is the server's negotiated MCP version.
func needsTasks(err error, protocol string) (code string, ok bool) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return "", false
	}
	switch {
	case we.Code == mcp.CodeMissingRequiredClientCapabilities:
		var data struct {
			Required struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"requiredCapabilities"`
		}
		if json.Unmarshal(we.Data, &data) == nil {
			if _, ok := data.Required.Extensions[tasksExtension]; ok {
				return "-32021", true
			}
		}
	case we.Code == jsonrpc.CodeMethodNotFound && protocol == "2025-11-25":
		return "-32601", true
	}
	return "", false
}
