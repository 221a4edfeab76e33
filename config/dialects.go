package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/internal/names"
)

// Format names the agent host whose configuration [ParseImport] reads. The
// names are the host IDs mcpgate uses everywhere (install, doctor).
type Format string

// The formats ParseImport reads.
const (
	// FormatAuto detects the format from the file's syntax and shape; see
	// [ImportResult.Detected].
	FormatAuto Format = "auto"
	// FormatClaudeCode is Claude Code's .mcp.json and ~/.claude.json
	// (mcpServers, and projects.<path>.mcpServers).
	FormatClaudeCode Format = "claude-code"
	// FormatClaude is the old name of [FormatClaudeCode], still accepted.
	FormatClaude = FormatClaudeCode
	// FormatClaudeDesktop is claude_desktop_config.json (mcpServers; remote
	// servers through mcp-remote).
	FormatClaudeDesktop Format = "claude-desktop"
	// FormatCursor is ~/.cursor/mcp.json (mcpServers; ${env:VAR}).
	FormatCursor Format = "cursor"
	// FormatVSCode is .vscode/mcp.json (servers) or the user settings.json
	// (mcp.servers).
	FormatVSCode Format = "vscode"
	// FormatWindsurf is ~/.codeium/windsurf/mcp_config.json (mcpServers;
	// serverUrl).
	FormatWindsurf Format = "windsurf"
	// FormatZed is Zed's settings.json (context_servers: url or command).
	FormatZed Format = "zed"
	// FormatCodex is Codex CLI's ~/.codex/config.toml ([mcp_servers.NAME]:
	// url, bearer_token_env_var, http_headers, env_http_headers).
	FormatCodex Format = "codex"
	// FormatGemini is Gemini CLI's ~/.gemini/settings.json (mcpServers:
	// httpUrl is Streamable HTTP, url is SSE unless "type": "http").
	FormatGemini Format = "gemini"
	// FormatCline is Cline's cline_mcp_settings.json (mcpServers:
	// "type": "streamableHttp"; a url without a type is SSE).
	FormatCline Format = "cline"
	// FormatContinue is Continue's config.yaml and its
	// .continue/mcpServers/*.yaml blocks (an mcpServers list; headers in
	// requestOptions).
	FormatContinue Format = "continue"
	// FormatGoose is goose's ~/.config/goose/config.yaml (extensions:
	// type streamable_http with uri).
	FormatGoose Format = "goose"
	// FormatOpencode is opencode.json(c) (mcp: type remote with url, type
	// local with a command list; {env:VAR}).
	FormatOpencode Format = "opencode"
	// FormatLMStudio is LM Studio's ~/.lmstudio/mcp.json (mcpServers).
	FormatLMStudio Format = "lmstudio"
	// FormatRoo is Roo Code's mcp_settings.json and .roo/mcp.json
	// (mcpServers; "type": "streamable-http").
	FormatRoo Format = "roo"
	// FormatAmazonQ is Amazon Q Developer's ~/.aws/amazonq/mcp.json and
	// agent files (mcpServers; "type": "http").
	FormatAmazonQ Format = "amazonq"
	// FormatKiro is Kiro's .kiro/settings/mcp.json (mcpServers).
	FormatKiro Format = "kiro"
)

// Formats returns every format ParseImport accepts, for help text.
func Formats() []Format {
	return []Format{
		FormatAuto, FormatClaudeCode, FormatClaudeDesktop, FormatCursor, FormatVSCode,
		FormatWindsurf, FormatZed, FormatCodex, FormatGemini, FormatCline, FormatContinue,
		FormatGoose, FormatOpencode, FormatLMStudio, FormatRoo, FormatAmazonQ, FormatKiro,
	}
}

// ParseFormat reads a format name; "" is [FormatAuto] and "claude" is
// [FormatClaudeCode]. An unknown name is an error of
// [mcpgate.CategoryInvalid] naming the closest ones.
func ParseFormat(name string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(name))); {
	case f == "":
		return FormatAuto, nil
	case f == "claude":
		return FormatClaudeCode, nil
	case slices.Contains(Formats(), f):
		return f, nil
	}
	var all []string
	for _, f := range Formats() {
		all = append(all, string(f))
	}
	msg := fmt.Sprintf("import format %q: unknown", name)
	if c := names.Closest(name, all, 2); len(c) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(c, " or "))
	}
	return "", invalidf("%s; must be one of %s", msg, strings.Join(all, ", "))
}

// dialect is how one host's file is read.
type dialect struct {
	syntax syntax
	// locate finds the objects of server entries in the file.
	locate func(top []member) ([]source, error)
	// decode turns one entry into the shared terms, or says why it
	// cannot be imported.
	decode func(entry []byte) (hostEntry, string)
}

func dialectOf(f Format) dialect {
	switch f {
	case FormatVSCode:
		return dialect{syntaxJSON, vscodeSources, decodeMCPServers(false)}
	case FormatCline:
		return dialect{syntaxJSON, mcpServersSources, decodeMCPServers(true)}
	case FormatGemini:
		return dialect{syntaxJSON, mcpServersSources, decodeGemini}
	case FormatZed:
		return dialect{syntaxJSON, objectSources("context_servers", `"context_servers"`), decodeZed}
	case FormatOpencode:
		return dialect{syntaxJSON, objectSources("mcp", `"mcp"`), decodeOpencode}
	case FormatCodex:
		return dialect{syntaxTOML, objectSources("mcp_servers", "[mcp_servers.NAME]"), decodeCodex}
	case FormatGoose:
		return dialect{syntaxYAML, objectSources("extensions", "extensions:"), decodeGoose}
	case FormatContinue:
		return dialect{syntaxYAML, continueSources, decodeContinue}
	default: // the hosts that write Claude Code's shape
		return dialect{syntaxJSON, mcpServersSources, decodeMCPServers(false)}
	}
}

// detect tells the format of a file from its syntax and shape. A file
// that several hosts could have written is read the way most of them mean
// it, and the reason says so.
func detect(top []member, s syntax) (Format, string, error) {
	switch s {
	case syntaxTOML:
		if hasKey(top, "mcp_servers") {
			return FormatCodex, "TOML with [mcp_servers] tables", nil
		}
		return "", "", invalidf("import: cannot tell the format: TOML without [mcp_servers.NAME] tables (Codex's config.toml)")
	case syntaxYAML:
		if hasKey(top, "extensions") {
			return FormatGoose, `YAML with "extensions"`, nil
		}
		if hasKey(top, "mcpServers") {
			return FormatContinue, `YAML with "mcpServers"`, nil
		}
		return "", "", invalidf(`import: cannot tell the format: YAML without "extensions" (goose) or "mcpServers" (Continue)`)
	}
	switch {
	case hasKey(top, "projects") && !hasKey(top, "mcpServers"):
		return FormatClaudeCode, `"projects" with their "mcpServers" (~/.claude.json)`, nil
	case hasKey(top, "mcpServers"):
		return detectMCPServers(top)
	case hasKey(top, "context_servers"):
		return FormatZed, `a "context_servers" object`, nil
	case hasKey(top, "servers") || hasKey(top, "mcp.servers"):
		return FormatVSCode, `a "servers" object`, nil
	case hasKey(top, "mcp"):
		raw, _ := lookup(top, "mcp")
		if members, err := decodeObject(raw); err == nil && hasKey(members, "servers") {
			return FormatVSCode, `an "mcp": {"servers"} object (settings.json)`, nil
		}
		return FormatOpencode, `an "mcp" object without "servers" (opencode.json)`, nil
	}
	return "", "", invalidf(`import: cannot tell the format: no "mcpServers", "servers", "mcp", "context_servers" object; pass --format`)
}

// detectMCPServers tells apart the hosts that share the "mcpServers"
// shape by what only one of them writes. Nothing distinctive reads as
// Claude Code: there a url is Streamable HTTP, as for most of them.
func detectMCPServers(top []member) (Format, string, error) {
	raw, _ := lookup(top, "mcpServers")
	entries, err := decodeObject(raw)
	if err != nil {
		return FormatClaudeCode, `an "mcpServers" object`, nil // the reading reports the error
	}
	has := func(key string) bool {
		return slices.ContainsFunc(entries, func(m member) bool {
			fields, err := decodeObject(m.Value)
			return err == nil && hasKey(fields, key)
		})
	}
	hasType := func(typ string) bool {
		return slices.ContainsFunc(entries, func(m member) bool {
			var e struct{ Type, TransportType string }
			return decodeHostEntry(m.Value, &e) == "" && (e.Type == typ || e.TransportType == typ)
		})
	}
	switch {
	case has("httpUrl") || has("authProviderType") || has("trust") || has("includeTools") || has("excludeTools"):
		return FormatGemini, `"mcpServers" with Gemini CLI's fields (httpUrl, trust, includeTools, excludeTools)`, nil
	case has("serverUrl"):
		return FormatWindsurf, `"mcpServers" with Windsurf's serverUrl`, nil
	case hasType("streamableHttp") || has("transportType"):
		return FormatCline, `"mcpServers" with Cline's streamableHttp type`, nil
	}
	return FormatClaudeCode, `an "mcpServers" object; a url is read as Streamable HTTP, as Claude Code, Cursor and most hosts mean it ` +
		`(for Gemini CLI or Cline, whose url is SSE, pass --format gemini or cline)`, nil
}

// objectSources finds the object of entries under key.
func objectSources(key, shown string) func([]member) ([]source, error) {
	return func(top []member) ([]source, error) {
		raw, ok := lookup(top, key)
		if !ok {
			return nil, noServersf("import: no %s found", shown)
		}
		members, err := decodeObject(raw)
		if err != nil {
			return nil, invalidf("import: %s: %v", key, err)
		}
		return []source{{members: members}}, nil
	}
}

// continueSources reads Continue's mcpServers list, whose entries are
// named by their "name". An object of entries (a JSON block file in
// Claude Code's shape) is read as one too.
func continueSources(top []member) ([]source, error) {
	raw, ok := lookup(top, "mcpServers")
	if !ok {
		return nil, noServersf(`import: no "mcpServers" list found`)
	}
	if members, err := decodeObject(raw); err == nil {
		return []source{{members: members}}, nil
	}
	items, err := decodeArray(raw)
	if err != nil {
		return nil, invalidf("import: mcpServers: must be a list of servers")
	}
	var src source
	count := make(map[string]int)
	named := make([]string, len(items))
	for i, item := range items {
		var e struct {
			Name string `json:"name"`
			Uses string `json:"uses"`
		}
		label := fmt.Sprintf("mcpServers[%d]", i)
		switch reason := decodeHostEntry(item, &e); {
		case reason != "":
			src.skipped = append(src.skipped, Skipped{label, reason})
		case e.Uses != "":
			src.skipped = append(src.skipped, Skipped{cmp.Or(e.Name, e.Uses, label),
				fmt.Sprintf("uses: %q is a Continue Hub block, which mcpgate cannot fetch; import the block's own file", e.Uses)})
		case strings.TrimSpace(e.Name) == "":
			src.skipped = append(src.skipped, Skipped{label, `no "name"`})
		default:
			named[i] = e.Name
			count[e.Name]++
		}
	}
	for i, name := range named {
		switch {
		case name == "":
		case count[name] > 1:
			src.skipped = append(src.skipped, Skipped{name,
				fmt.Sprintf("the name is given to %d entries of mcpServers, and mcpgate cannot tell which one Continue uses; rename them", count[name])})
		default:
			src.members = append(src.members, member{name, items[i]})
		}
	}
	return []source{src}, nil
}
