// Package config loads, edits and saves the mcpgate configuration file, and
// imports the MCP server lists of other clients (Claude Code, Claude Desktop,
// Cursor, VS Code).
//
// # The file
//
// The file is JSON with a top-level "mcpServers" object keyed by server ID,
// the shape Claude Code uses, so people can read and edit it:
//
//	{
//	  "mcpServers": {
//	    "github": {
//	      "url": "https://api.githubcopilot.com/mcp/",
//	      "auth": "oauth",
//	      "disabledTools": ["delete_repository"],
//	      "timeout": "90s"
//	    },
//	    "internal": {
//	      "url": "http://127.0.0.1:8080/mcp",
//	      "auth": "none",
//	      "headers": {"X-Api-Key": "${INTERNAL_KEY}"},
//	      "enabled": false
//	    }
//	  }
//	}
//
// Field names are those of [mcpgate.ServerConfig] in camelCase. "enabled"
// defaults to true. "timeout" is a Go duration ("90s") or a number of
// seconds, and is written back as a duration. When "auth" is absent it is
// inferred: "bearer" with bearerTokenEnv, "none" when an Authorization header
// is configured, else "oauth" (what Claude Code and Cursor do on a 401).
// Header values keep their ${VAR} references; they are expanded only when a
// request is made (see [mcpgate.ExpandRefs]).
//
// Entries for local stdio servers ("command", "type": "stdio") and for the
// legacy HTTP+SSE transport ("type": "sse") are refused: mcpgate connects to
// remote servers over Streamable HTTP only.
//
// # Editing
//
// [Load] reads the file into a [File]; its methods ([File.Add],
// [File.Remove], [File.SetEnabled], [File.SetToolEnabled], [File.Import])
// change only memory, and [File.Save] writes it back atomically. Save keeps
// every member it does not understand, at the top level and inside each
// server, in the order they were written, and refuses to overwrite a file
// that changed on disk after it was read, so two editors (the CLI and the
// settings page, say) never silently undo each other.
//
//	f, err := config.Load(path)
//	if err != nil {
//		return err
//	}
//	if err := f.SetToolEnabled("github", "delete_repository", false); err != nil {
//		return err
//	}
//	return f.Save()
//
// # Importing
//
// [ParseImport] reads another client's file and sorts every entry into
// servers mcpgate can use and entries it skipped, each with the reason;
// nothing is half-imported. [File.Import] then adds all of them or none.
package config
