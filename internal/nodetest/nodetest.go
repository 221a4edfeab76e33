// Package nodetest finds, for tests, the Node.js programs mcpgate is tested
// against: the official MCP conformance suite, the reference "everything"
// server and the TypeScript SDK used as a real host. .ci/run installs them
// with npm ci from .ci/node (versions pinned by its package-lock.json, Node
// itself included) into a folder outside the repository:
// $MCPGATE_NODE_TOOLS, else the user cache directory's mcpgate-ci/node.
//
// Where they are missing a test skips with a message saying how to install
// them, so `go test ./...` passes on a fresh machine; under CI (CI set in
// the environment, as .ci/run does) a missing piece fails the test instead.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tools is an installed copy of .ci/node.
type Tools struct {
	// Dir holds node_modules.
	Dir string
}

// Find returns the installed tools, or skips (fails under CI) the test.
func Find(t testing.TB) *Tools {
	t.Helper()
	dir := Dir()
	x := &Tools{Dir: dir}
	for _, bin := range []string{"node", "conformance", "mcp-server-everything"} {
		if _, err := os.Stat(x.Bin(bin)); err != nil {
			msg := "the Node.js test tools are not installed in " + dir +
				" (install them with .ci/run, or: mkdir -p " + dir + " && cp .ci/node/package*.json " + dir + " && npm ci --prefix " + dir + ")"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return x
}

// Dir is where .ci/run installs the tools.
func Dir() string {
	if d := os.Getenv("MCPGATE_NODE_TOOLS"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "mcpgate-ci", "node")
}

// ServerCatalog is the catalog .ci/run takes of a set of real MCP servers
// of .ci/servers ("fresh": nobody tunes the search for them; "fifth":
// the search may be tuned on their needs):
// {"servers":[{"id","package","serverInfo","instructions","tools",
// "prompts","resources","resourceTemplates"}]}, as
// .ci/servers/list.mjs writes it. Without it the test fails under
// CI and is skipped elsewhere, saying how to make it.
func ServerCatalog(t testing.TB, set string) string {
	t.Helper()
	file := ServerCatalogPath(set)
	dir := filepath.Dir(file)
	if _, err := os.Stat(file); err != nil {
		msg := "the " + set + " servers' catalog is not in " + dir + " (make it with .ci/run, or: mkdir -p " + dir +
			" && cp .ci/servers/" + set + "/*.json .ci/servers/*.mjs " + dir + " && npm ci --ignore-scripts --prefix " + dir +
			" && node " + dir + "/list.mjs " + dir + ")"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return file
}

// ServerCatalogPath is where .ci/run writes a set's catalog, whether or
// not it is there.
func ServerCatalogPath(set string) string {
	return filepath.Join(filepath.Dir(Dir()), set, "catalog.json")
}

// Bin is the path of an installed program (node_modules/.bin).
func (x *Tools) Bin(name string) string {
	return filepath.Join(x.Dir, "node_modules", ".bin", name)
}

// Module is the path of an installed package.
func (x *Tools) Module(name string) string {
	return filepath.Join(x.Dir, "node_modules", filepath.FromSlash(name))
}

// Command runs an installed program with the pinned Node first on PATH.
func (x *Tools) Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, x.Bin(bin), args...)
	cmd.Env = x.Env(os.Environ())
	return cmd
}

// Env returns env with the pinned Node first on PATH, and Node's
// compile cache (NODE_COMPILE_CACHE, unless env sets it) in a folder
// beside the tools: the conformance suite alone is a large bundle each of
// its seventy-odd runs compiled anew.
func (x *Tools) Env(env []string) []string {
	bin := filepath.Dir(x.Bin("node"))
	out := make([]string, 0, len(env)+2)
	path := bin
	compileCache := "NODE_COMPILE_CACHE=" + filepath.Join(x.Dir, "compile-cache")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = bin + string(os.PathListSeparator) + v
			continue
		}
		if strings.HasPrefix(kv, "NODE_COMPILE_CACHE=") {
			compileCache = kv
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path, compileCache)
}
