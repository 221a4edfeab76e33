// Package hosts knows the agent hosts mcpgate serves over stdio (Claude
// Code, Cursor, VS Code, Zed, Codex CLI, goose and the others): where each
// keeps its MCP config on each OS, in which format, under which key, and
// how an entry that starts `mcpgate serve` is spelled there.
//
// # Finding a host's file
//
// [All] lists the hosts, [Lookup] finds one by ID (an unknown ID is an
// error naming the closest ones). [Host.Path] says where its config is,
// for a scope ([ScopeUser], or [ScopeProject] where the host reads one from
// the project), from an [Env]: the OS, the home directory and the
// environment are passed in, so the paths of every OS can be checked on any
// other.
//
//	env, err := hosts.OSEnv()
//	h, err := hosts.Lookup("cursor")
//	path, err := h.Path(env, hosts.ScopeUser) // ~/.cursor/mcp.json
//
// # Changing it
//
// [Install] and [Uninstall] plan a change to that file without writing it:
// the [Change] holds the bytes before and after (its [Change.Diff] is a
// unified diff) and [Change.Apply] writes it, atomically, with a backup
// beside the file. An edit touches only the `mcpgate` entry: every other
// byte of the file, comments and unknown fields included, stays as it was,
// so an uninstall gives back the file as it was before the install. Each
// edit is parsed again in the file's own format before it may be written.
package hosts

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mcpgate/mcpgate/internal/names"
)

// EntryName is the name mcpgate's entry has in every host's config.
const EntryName = "mcpgate"

// Format is how a host's config file is written.
type Format string

const (
	JSON  Format = "JSON"  // plain JSON (comments and trailing commas kept if present)
	JSONC Format = "JSONC" // JSON with comments and trailing commas
	TOML  Format = "TOML"
	YAML  Format = "YAML"
)

// Scope is whose config an install changes: the person's (every project)
// or one project's (a file in the project, often checked in).
type Scope string

const (
	ScopeUser    Scope = "user"
	ScopeProject Scope = "project"
)

var (
	// ErrUnknownHost is returned by [Lookup] for an ID no host has.
	ErrUnknownHost = errors.New("unknown host")
	// ErrNoScope is returned by [Host.Path] for a scope the host does not
	// read a config from (project scope for Claude Desktop, for one).
	ErrNoScope = errors.New("no config in that scope")
)

// Env is what paths are computed from: the OS they are for, the person's
// home directory, the project directory (for [ScopeProject]) and the
// environment (APPDATA, XDG_CONFIG_HOME, CODEX_HOME).
type Env struct {
	GOOS   string // "darwin", "windows", "linux" (and other Unix-likes)
	Home   string
	Dir    string // the project: the working directory
	Getenv func(string) string
}

// OSEnv is the Env of this process.
func OSEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("finding the home directory: %w", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return Env{}, fmt.Errorf("finding the working directory: %w", err)
	}
	return Env{GOOS: runtime.GOOS, Home: home, Dir: dir, Getenv: os.Getenv}, nil
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// join joins path elements with the separator of e's OS, so Windows paths
// are computed right on Linux and the other way round.
func (e Env) join(elem ...string) string {
	if e.GOOS == "windows" {
		for i, s := range elem {
			elem[i] = strings.ReplaceAll(s, `\`, "/")
		}
		return strings.ReplaceAll(path.Join(elem...), "/", `\`)
	}
	return path.Join(elem...)
}

// isAbs reports whether p is absolute on e's OS.
func (e Env) isAbs(p string) bool {
	if e.GOOS == "windows" {
		return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
	}
	return strings.HasPrefix(p, "/")
}

// appData is %APPDATA% (Roaming) on Windows.
func (e Env) appData() string {
	if d := e.getenv("APPDATA"); e.isAbs(d) {
		return d
	}
	return e.join(e.Home, "AppData", "Roaming")
}

// xdgConfig is $XDG_CONFIG_HOME, else ~/.config; a relative value is
// ignored, as the XDG spec says.
func (e Env) xdgConfig() string {
	if d := e.getenv("XDG_CONFIG_HOME"); e.isAbs(d) {
		return d
	}
	return e.join(e.Home, ".config")
}

// appSupport is where desktop applications keep their settings: Application
// Support on macOS, APPDATA on Windows, the XDG config folder elsewhere.
func (e Env) appSupport() string {
	switch e.GOOS {
	case "darwin":
		return e.join(e.Home, "Library", "Application Support")
	case "windows":
		return e.appData()
	}
	return e.xdgConfig()
}

// vscodeUser is VS Code's user settings folder; extensions such as Cline
// and Roo Code keep their files under its globalStorage.
func (e Env) vscodeUser() string { return e.join(e.appSupport(), "Code", "User") }

// Host is one agent host mcpgate can be installed into.
type Host struct {
	ID     string // as on the command line: "claude-code"
	Name   string // as people call it: "Claude Code"
	Format Format
	// Key is the top-level key the host's MCP servers live under:
	// "mcpServers", "servers" (VS Code), "context_servers" (Zed),
	// "mcp_servers" (Codex: [mcp_servers.NAME] tables), "extensions"
	// (goose), "mcp" (opencode).
	Key string
	// List is set when the servers are a list of entries each with a
	// name (Continue) rather than a map from name to entry.
	List bool

	user    func(Env) []string // candidate files for ScopeUser, preferred first
	project []string           // candidate files for ScopeProject, relative to Env.Dir
	// marker, when set, is a folder whose presence says the host is on
	// this machine even before its config file exists (its file's own
	// folder serves otherwise).
	marker func(Env) string
	// entry spells the stdio entry that runs `bin serve`, fields in the
	// order they are written.
	entry func(bin string) []field
	// argv reads the command line back from an entry as decoded.
	argv func(entry map[string]any) []string
	// empty is the document written when the file does not exist yet.
	empty string
}

// Scopes lists the scopes h has a config in.
func (h Host) Scopes() []Scope {
	if len(h.project) > 0 {
		return []Scope{ScopeUser, ScopeProject}
	}
	return []Scope{ScopeUser}
}

// Paths lists the files h may read in scope, preferred first. Most hosts
// have one; opencode reads opencode.json or opencode.jsonc.
func (h Host) Paths(env Env, scope Scope) ([]string, error) {
	switch scope {
	case ScopeUser, "":
		return h.user(env), nil
	case ScopeProject:
		if len(h.project) == 0 {
			return nil, fmt.Errorf("%s has no project config, only a user one: %w", h.Name, ErrNoScope)
		}
		out := make([]string, len(h.project))
		for i, rel := range h.project {
			out[i] = env.join(env.Dir, rel)
		}
		return out, nil
	}
	return nil, fmt.Errorf("scope %q: use user or project: %w", scope, ErrNoScope)
}

// Path is the file h uses in scope: the first of [Host.Paths] that exists,
// else the preferred one.
func (h Host) Path(env Env, scope Scope) (string, error) {
	paths, err := h.Paths(env, scope)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return paths[0], nil
}

// Found reports whether h seems to be on this machine: its user config
// exists, or the folder it keeps it in.
func (h Host) Found(env Env) bool {
	path, err := h.Path(env, ScopeUser)
	if err != nil {
		return false
	}
	if _, err := os.Stat(path); err == nil {
		return true
	}
	dir := filepath.Dir(path)
	if h.marker != nil {
		dir = h.marker(env)
	}
	if filepath.Clean(dir) == filepath.Clean(env.Home) {
		return false
	}
	info, err := os.Stat(dir)
	return err == nil && info.IsDir()
}

// All lists every host, in the order people are shown them.
func All() []Host { return append([]Host(nil), registry...) }

// IDs lists every host's ID.
func IDs() []string {
	ids := make([]string, len(registry))
	for i, h := range registry {
		ids[i] = h.ID
	}
	return ids
}

// Lookup finds a host by ID. An unknown ID is an [ErrUnknownHost] naming
// the closest IDs, or all of them.
func Lookup(id string) (Host, error) {
	for _, h := range registry {
		if h.ID == id {
			return h, nil
		}
	}
	if s := names.Closest(id, IDs(), 3); len(s) > 0 {
		return Host{}, fmt.Errorf("%w %q; did you mean %s?", ErrUnknownHost, id, strings.Join(s, " or "))
	}
	return Host{}, fmt.Errorf("%w %q; known hosts: %s", ErrUnknownHost, id, strings.Join(IDs(), ", "))
}

// field is one key of an entry, in the order it is written. A value is a
// string, a []string, a bool, an int or an empty map (struct{}).
type field struct {
	key   string
	value any
}

type emptyMap struct{}

// commandArgs is the common spelling: "command": bin, "args": ["serve"].
func commandArgs(bin string) []field {
	return []field{{"command", bin}, {"args", []string{"serve"}}}
}

func home(rel ...string) func(Env) []string {
	return func(e Env) []string { return []string{e.join(append([]string{e.Home}, rel...)...)} }
}

// argvOf reads a command line spelled as a command string and an args
// list (under the given keys).
func argvOf(cmdKey string) func(map[string]any) []string {
	return func(entry map[string]any) []string {
		cmd, ok := entry[cmdKey].(string)
		if !ok {
			return nil
		}
		return append([]string{cmd}, stringList(entry["args"])...)
	}
}

// stringList is v as a list of strings, dropping anything else.
func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

const emptyJSON = "{}\n"

// The registry. Paths are each host's documented locations; where a host
// documents none for an OS (Claude Desktop on Linux), the one its
// community uses.
var registry = []Host{
	{
		ID: "claude-code", Name: "Claude Code", Format: JSON, Key: "mcpServers",
		// User scope is the top-level mcpServers of ~/.claude.json;
		// project scope is .mcp.json at the project's root.
		user:    home(".claude.json"),
		project: []string{".mcp.json"},
		marker:  func(e Env) string { return e.join(e.Home, ".claude") },
		entry: func(bin string) []field {
			return []field{{"type", "stdio"}, {"command", bin}, {"args", []string{"serve"}}, {"env", emptyMap{}}}
		},
		argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "claude-desktop", Name: "Claude Desktop", Format: JSON, Key: "mcpServers",
		user:  func(e Env) []string { return []string{e.join(e.appSupport(), "Claude", "claude_desktop_config.json")} },
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "cursor", Name: "Cursor", Format: JSON, Key: "mcpServers",
		user: home(".cursor", "mcp.json"), project: []string{".cursor/mcp.json"},
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "vscode", Name: "VS Code", Format: JSONC, Key: "servers",
		user:    func(e Env) []string { return []string{e.join(e.vscodeUser(), "mcp.json")} },
		project: []string{".vscode/mcp.json"},
		entry: func(bin string) []field {
			return []field{{"type", "stdio"}, {"command", bin}, {"args", []string{"serve"}}}
		},
		argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "windsurf", Name: "Windsurf", Format: JSON, Key: "mcpServers",
		user:  home(".codeium", "windsurf", "mcp_config.json"),
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "zed", Name: "Zed", Format: JSONC, Key: "context_servers",
		user: func(e Env) []string {
			switch e.GOOS {
			case "windows":
				return []string{e.join(e.appData(), "Zed", "settings.json")}
			case "darwin":
				return []string{e.join(e.Home, ".config", "zed", "settings.json")}
			}
			return []string{e.join(e.xdgConfig(), "zed", "settings.json")}
		},
		project: []string{".zed/settings.json"},
		entry: func(bin string) []field {
			return []field{{"command", bin}, {"args", []string{"serve"}}, {"env", emptyMap{}}}
		},
		argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "codex", Name: "Codex CLI", Format: TOML, Key: "mcp_servers",
		user: func(e Env) []string {
			if d := e.getenv("CODEX_HOME"); e.isAbs(d) {
				return []string{e.join(d, "config.toml")}
			}
			return []string{e.join(e.Home, ".codex", "config.toml")}
		},
		// Codex reads a project's .codex/config.toml only once the
		// project is trusted.
		project: []string{".codex/config.toml"},
		entry:   commandArgs, argv: argvOf("command"), empty: "",
	},
	{
		ID: "gemini", Name: "Gemini CLI", Format: JSON, Key: "mcpServers",
		user: home(".gemini", "settings.json"), project: []string{".gemini/settings.json"},
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "cline", Name: "Cline", Format: JSON, Key: "mcpServers",
		user: func(e Env) []string {
			return []string{e.join(e.vscodeUser(), "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")}
		},
		entry: func(bin string) []field {
			return []field{{"command", bin}, {"args", []string{"serve"}}, {"disabled", false}}
		},
		argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "continue", Name: "Continue", Format: YAML, Key: "mcpServers", List: true,
		user: home(".continue", "config.yaml"),
		// A project's servers are block files in .continue/mcpServers/,
		// each a small config of its own.
		project: []string{".continue/mcpServers/mcpgate.yaml"},
		entry: func(bin string) []field {
			return []field{{"name", EntryName}, {"command", bin}, {"args", []string{"serve"}}}
		},
		argv:  argvOf("command"),
		empty: "name: mcpgate\nversion: 0.0.1\nschema: v1\n",
	},
	{
		ID: "goose", Name: "goose", Format: YAML, Key: "extensions",
		user: func(e Env) []string {
			if e.GOOS == "windows" {
				return []string{e.join(e.appData(), "Block", "goose", "config", "config.yaml")}
			}
			return []string{e.join(e.xdgConfig(), "goose", "config.yaml")}
		},
		entry: func(bin string) []field {
			return []field{
				{"name", EntryName}, {"type", "stdio"}, {"cmd", bin}, {"args", []string{"serve"}},
				{"enabled", true}, {"envs", emptyMap{}}, {"timeout", 300},
				{"description", "Remote MCP servers through one gateway tool"},
			}
		},
		argv: argvOf("cmd"), empty: "",
	},
	{
		ID: "opencode", Name: "opencode", Format: JSONC, Key: "mcp",
		// opencode keeps its config under ~/.config on every OS.
		user: func(e Env) []string {
			d := e.join(e.xdgConfig(), "opencode")
			return []string{e.join(d, "opencode.json"), e.join(d, "opencode.jsonc")}
		},
		project: []string{"opencode.json", "opencode.jsonc"},
		entry: func(bin string) []field {
			return []field{{"type", "local"}, {"command", []string{bin, "serve"}}, {"enabled", true}}
		},
		argv:  func(entry map[string]any) []string { return stringList(entry["command"]) },
		empty: "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n",
	},
	{
		ID: "lmstudio", Name: "LM Studio", Format: JSON, Key: "mcpServers",
		user:  home(".lmstudio", "mcp.json"),
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "roo", Name: "Roo Code", Format: JSON, Key: "mcpServers",
		user: func(e Env) []string {
			return []string{e.join(e.vscodeUser(), "globalStorage", "rooveterinaryinc.roo-cline", "settings", "mcp_settings.json")}
		},
		project: []string{".roo/mcp.json"},
		entry:   commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "amazonq", Name: "Amazon Q Developer", Format: JSON, Key: "mcpServers",
		user: home(".aws", "amazonq", "mcp.json"), project: []string{".amazonq/mcp.json"},
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
	{
		ID: "kiro", Name: "Kiro", Format: JSON, Key: "mcpServers",
		user: home(".kiro", "settings", "mcp.json"), project: []string{".kiro/settings/mcp.json"},
		entry: commandArgs, argv: argvOf("command"), empty: emptyJSON,
	},
}
