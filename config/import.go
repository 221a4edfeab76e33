package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
)

// Skipped is an entry ParseImport did not import, and why.
type Skipped struct {
	// Name is the entry's name in the source file; a server from a Claude
	// Code project reads "name (project /path)".
	Name   string
	Reason string
}

// Note is something a person must do for an imported server to work.
type Note struct {
	// Name is the ID the server was imported as.
	Name string
	Text string
}

// ImportResult is what ParseImport found. Every entry of the source is in
// exactly one of Servers and Skipped.
type ImportResult struct {
	// Format is the format read; for FormatAuto, the one detected.
	Format Format
	// Detected says, for FormatAuto, what the format was told from; for a
	// shape several hosts write, which reading was chosen.
	Detected string
	// Servers are valid and sorted by ID. They are enabled unless the
	// source disabled them, and connect lazily.
	Servers []mcpgate.ServerConfig
	// Skipped is sorted by Name.
	Skipped []Skipped
	// Notes are sorted by Name; show them with the result.
	Notes []Note
}

// ParseImport reads another client's MCP configuration; an empty format is
// [FormatAuto], which tells the syntax from the content. See
// [ParseImportFile].
func ParseImport(data []byte, format Format) (*ImportResult, error) {
	return ParseImportFile("", data, format)
}

// ParseImportFile reads an agent host's MCP configuration, the file name
// (which may be "") helping to tell its syntax: .toml, .yaml and .yml
// files are TOML and YAML, others JSON with comments and trailing commas
// (VS Code, Zed and opencode write them). A malformed file is an error of
// [mcpgate.CategoryInvalid] giving the line and column.
//
// Every entry ends up in [ImportResult.Servers] or, with the reason, in
// [ImportResult.Skipped]. Entries that name a local command are skipped,
// except those running the mcp-remote proxy, which are imported as the
// remote server they wrap; so are the legacy SSE transport, entries
// without a usable URL and authentication mcpgate does not have. Each
// host's spellings are read: url, serverUrl (Windsurf), httpUrl (Gemini
// CLI, whose url is SSE), uri (goose), types http, streamable-http,
// streamableHttp, streamable_http and remote; headers, Codex's
// http_headers, env_http_headers and bearer_token_env_var (as an
// Authorization header reading the variable); disabled and enabled:
// false (imported disabled).
//
// An entry's auth is "oauth" when the host asks for OAuth (Claude Code's
// "oauth" block, Gemini CLI's oauth.enabled, opencode's oauth object) and
// "none" otherwise (an Authorization header carries its own credential).
// ${VAR} and ${env:VAR} references are kept as written (Gemini CLI's $VAR
// and opencode's {env:VAR} become ${VAR}): each request sends the
// variable's value to the server, so show [ImportResult.EnvUses] to the
// person and import only what [ImportResult.CheckEnv] allows. Names that
// are not valid server IDs are lower-cased, other characters turned into
// "-" and cut to 32, with the original kept as the display name.
//
// Claude Code's ~/.claude.json also holds servers per project
// (projects.<path>.mcpServers, the "local" scope). They exist nowhere else,
// so they are imported like the others; one that has the ID of an earlier
// entry is skipped, with a reason saying whether it is the same server.
func ParseImportFile(name string, data []byte, format Format) (*ImportResult, error) {
	format, err := ParseFormat(string(format))
	if err != nil {
		return nil, err
	}
	syn := syntaxOf(name, data)
	if format != FormatAuto {
		syn = dialectOf(format).syntax
	}
	top, err := decodeDocument(data, syn)
	if err != nil {
		return nil, err
	}
	var detected string
	if format == FormatAuto {
		if format, detected, err = detect(top, syn); err != nil {
			return nil, err
		}
	}
	d := dialectOf(format)
	sources, err := d.locate(top)
	if err != nil {
		return nil, err
	}
	res := &ImportResult{Format: format, Detected: detected}
	res.add(sources, d.decode)
	slices.SortFunc(res.Servers, func(a, b mcpgate.ServerConfig) int { return strings.Compare(a.ID, b.ID) })
	slices.SortStableFunc(res.Skipped, func(a, b Skipped) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(res.Notes, func(a, b Note) int { return strings.Compare(a.Name, b.Name) })
	return res, nil
}

// source is one object of server entries in an imported file.
type source struct {
	project string // the project path in ~/.claude.json; "" for the file's own list
	members []member
	skipped []Skipped // entries that are not even named (in a list)
}

func hasKey(members []member, key string) bool {
	_, ok := lookup(members, key)
	return ok
}

// mcpServersSources finds the "mcpServers" object, and those of Claude
// Code's projects.
func mcpServersSources(top []member) ([]source, error) {
	var sources []source
	if raw, ok := lookup(top, "mcpServers"); ok {
		members, err := decodeObject(raw)
		if err != nil {
			return nil, invalidf("import: mcpServers: %v", err)
		}
		sources = append(sources, source{members: members})
	} else if !hasKey(top, "projects") {
		return nil, noServersf(`import: no "mcpServers" object found`)
	}
	raw, ok := lookup(top, "projects")
	if !ok {
		return sources, nil
	}
	projects, err := decodeObject(raw)
	if err != nil {
		return nil, invalidf("import: projects: %v", err)
	}
	for _, p := range projects {
		project, err := decodeObject(p.Value)
		if err != nil {
			continue // not a project record; nothing of ours in it
		}
		if raw, ok := lookup(project, "mcpServers"); ok {
			members, err := decodeObject(raw)
			if err != nil {
				return nil, invalidf("import: projects[%q].mcpServers: %v", p.Key, err)
			}
			sources = append(sources, source{project: p.Key, members: members})
		}
	}
	return sources, nil
}

// vscodeSources finds "servers" (.vscode/mcp.json) or "mcp": {"servers"}
// (settings.json, also written "mcp.servers").
func vscodeSources(top []member) ([]source, error) {
	raw, ok := lookup(top, "servers")
	if !ok {
		raw, ok = lookup(top, "mcp.servers")
	}
	if mcp, found := lookup(top, "mcp"); !ok && found {
		if members, err := decodeObject(mcp); err == nil {
			raw, ok = lookup(members, "servers")
		}
	}
	if !ok {
		return nil, noServersf(`import: no "servers" (.vscode/mcp.json) or "mcp": {"servers"} (settings.json) object found`)
	}
	members, err := decodeObject(raw)
	if err != nil {
		return nil, invalidf("import: servers: %v", err)
	}
	return []source{{members: members}}, nil
}

// candidate is an entry that converted cleanly and still needs an ID.
type candidate struct {
	key, label string
	project    string
	cfg        mcpgate.ServerConfig
	notes      []string
}

// add converts every entry of sources into a server or a skip. IDs are
// handed out in a fixed order (the file's own list before projects, names
// that are IDs already before names that need normalizing) so the same file
// always imports the same way.
func (r *ImportResult) add(sources []source, decode func([]byte) (hostEntry, string)) {
	var cands []candidate
	for _, src := range sources {
		r.Skipped = append(r.Skipped, src.skipped...)
		for _, m := range src.members {
			label := m.Key
			if src.project != "" {
				label = fmt.Sprintf("%s (project %s)", m.Key, src.project)
			}
			e, reason := decode(m.Value)
			if reason != "" {
				r.Skipped = append(r.Skipped, Skipped{label, reason})
				continue
			}
			cfg, notes, reason := convertEntry(e)
			if reason != "" {
				r.Skipped = append(r.Skipped, Skipped{label, reason})
				continue
			}
			cands = append(cands, candidate{m.Key, label, src.project, cfg, notes})
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(rank(a.project != ""), rank(b.project != "")),
			cmp.Compare(rank(mcpgate.ValidateID(a.key) != nil), rank(mcpgate.ValidateID(b.key) != nil)),
			strings.Compare(a.key, b.key),
			strings.Compare(a.project, b.project),
		)
	})
	taken := make(map[string]candidate)
	for _, c := range cands {
		if reason := c.assignID(taken); reason != "" {
			r.Skipped = append(r.Skipped, Skipped{c.label, reason})
			continue
		}
		taken[c.cfg.ID] = c
		r.Servers = append(r.Servers, c.cfg)
		for _, n := range c.notes {
			r.Notes = append(r.Notes, Note{c.cfg.ID, n})
		}
	}
}

// rank orders false before true.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// assignID gives c its server ID, or says why it cannot be imported.
func (c *candidate) assignID(taken map[string]candidate) (reason string) {
	id, err := serverID(c.key)
	if err != nil {
		return err.Error()
	}
	c.cfg.ID = id
	if id != c.key {
		c.cfg.Name = c.key
	}
	if err := c.cfg.Validate(); err != nil {
		return err.Error()
	}
	prev, ok := taken[id]
	switch {
	case !ok:
		return ""
	case prev.cfg.Binding() == c.cfg.Binding():
		return fmt.Sprintf("the same server as %s, imported as %q", prev.label, id)
	default:
		return fmt.Sprintf("server ID %q is already taken by %s, a different server; add this one with another name", id, prev.label)
	}
}

// serverID turns a client's server name into an mcpgate server ID.
func serverID(name string) (string, error) {
	if mcpgate.ValidateID(name) == nil {
		return name, nil
	}
	mapped := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	for strings.Contains(mapped, "--") {
		mapped = strings.ReplaceAll(mapped, "--", "-")
	}
	id := strings.Trim(mapped, "-_")
	id = strings.TrimRight(id[:min(len(id), 32)], "-_")
	if mcpgate.ValidateID(id) != nil {
		return "", fmt.Errorf("name %q: cannot be made into a server ID (^[a-z0-9][a-z0-9_-]{0,31}$); add it by hand with a name of your choice", name)
	}
	return id, nil
}

// convertEntry turns one entry into a server without an ID, or says why it
// cannot be imported.
func convertEntry(e hostEntry) (cfg mcpgate.ServerConfig, notes []string, reason string) {
	typ := strings.ToLower(e.typ)
	rawURL, headers := e.url, e.headers
	if e.command != "" {
		remote, found, err := mcpRemote(e.command, e.args)
		switch {
		case !found:
			return cfg, nil, fmt.Sprintf("runs the local command %q: %s", describeCommand(e.command, e.args), stdioRule)
		case err != nil:
			return cfg, nil, "mcp-remote: " + err.Error()
		}
		rawURL, headers, typ = remote.url, remote.headers, remote.transport
	}
	switch typ {
	case "", "http", "streamable-http", "streamablehttp", "streamable_http", "remote":
	case "stdio", "local":
		return cfg, nil, stdioRule
	case "sse":
		return cfg, nil, sseRule + "; if the server also offers Streamable HTTP (often at /mcp), add that URL"
	default:
		return cfg, nil, fmt.Sprintf("type %q: not a transport mcpgate supports (Streamable HTTP only)", e.typ)
	}
	if reason := checkRefs(rawURL, headers); reason != "" {
		return cfg, nil, reason
	}
	cfg = mcpgate.ServerConfig{
		URL:           rawURL,
		Headers:       headers,
		Enabled:       !e.disabled,
		DisabledTools: e.disabledTools,
	}
	// An entry that says nothing of authentication is auth none: the
	// source client would try OAuth on a 401, but a local or public server
	// must not show a sign-in it does not need. Only an explicit request
	// says OAuth; an Authorization header carries its own credential.
	cfg.Auth = mcpgate.AuthNone
	if e.oauth != nil {
		cfg.Auth = mcpgate.AuthOAuth
		cfg.ClientID = e.oauth.clientID
		if len(e.oauth.scopes) > 0 {
			cfg.Scopes = e.oauth.scopes
		}
	}
	return cfg, append(e.notes, importNotes(cfg, typ, e.env)...), ""
}

// checkRefs refuses references mcpgate cannot resolve when it makes a
// request: anything in the URL, VS Code's ${input:...} prompts, and ${...}
// that is not an environment variable.
func checkRefs(rawURL string, headers map[string]string) (reason string) {
	if rawURL == "" {
		return "no url: mcpgate connects to remote servers only"
	}
	if strings.Contains(rawURL, "${") {
		return "url: uses a ${...} reference; mcpgate needs the URL itself"
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		v := headers[k]
		if strings.Contains(v, "${input:") {
			return fmt.Sprintf("header %q uses ${input:...}, a VS Code prompt mcpgate cannot answer: put the value in an environment variable and write ${env:NAME}", k)
		}
		if _, err := mcpgate.ExpandRefs(v, func(string) string { return "set" }); err != nil {
			return fmt.Sprintf("header %q: %v", k, err)
		}
		for _, name := range mcpgate.EnvRefs(v) {
			if editorVariables[name] {
				return fmt.Sprintf("header %q uses ${%s}, an editor variable mcpgate cannot resolve: put the value in an environment variable and write ${env:NAME}", k, name)
			}
		}
	}
	return ""
}

// editorVariables are the predefined variables VS Code and Cursor expand in
// MCP configs. They look like environment variable references, so without
// this check they would be imported and fail on every request.
var editorVariables = map[string]bool{
	"userHome": true, "workspaceFolder": true, "workspaceFolderBasename": true,
	"pathSeparator": true, "cwd": true, "execPath": true, "file": true,
	"fileBasename": true, "fileDirname": true, "relativeFile": true,
}

// importNotes says what the person must still do. Variables the source
// client set in the entry's "env" are not copied into mcpgate's config:
// they are usually secrets, and mcpgate's file keeps references, not
// values.
func importNotes(cfg mcpgate.ServerConfig, typ string, env map[string]string) []string {
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		for _, name := range mcpgate.EnvRefs(cfg.Headers[k]) {
			if _, ok := env[name]; ok {
				notes = append(notes, fmt.Sprintf(`header %q reads ${%s}, which the source set in the entry's "env"; set %s in the environment mcpgate runs in`, k, name, name))
			}
		}
	}
	if u, err := url.Parse(cfg.URL); err == nil && typ == "" && strings.HasSuffix(u.Path, "/sse") {
		notes = append(notes, "the URL ends in /sse, usually the legacy HTTP+SSE endpoint mcpgate cannot use; if connecting fails, use the server's Streamable HTTP URL (often /mcp)")
	}
	return notes
}

// describeCommand names a stdio server by its command and first
// non-flag argument (usually the package), not by every argument, which
// may hold a secret.
func describeCommand(command string, args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return command + " " + a
		}
	}
	return command
}

// remoteArgs is the remote server an mcp-remote command line wraps.
type remoteArgs struct {
	url       string
	headers   map[string]string
	transport string // "http", "sse" or "" when mcp-remote would try both
}

// mcpRemote reads an mcp-remote proxy command line, such as
// npx -y mcp-remote@latest https://x/mcp --header "Authorization:${AUTH}":
// the first http(s) argument after mcp-remote is the server, and each
// --header "Name: value" a header. found is false when the command does not
// run mcp-remote.
func mcpRemote(command string, args []string) (r remoteArgs, found bool, err error) {
	argv := append([]string{command}, args...)
	i := slices.IndexFunc(argv, isMCPRemote)
	if i < 0 {
		return r, false, nil
	}
	rest := argv[i+1:]
	for j := 0; j < len(rest); j++ {
		flag, value, hasValue := strings.Cut(rest[j], "=")
		switch flag {
		case "--header", "--transport":
			if !hasValue {
				if j+1 == len(rest) {
					return r, true, fmt.Errorf("%s: missing value", flag)
				}
				j++
				value = rest[j]
			}
			if flag == "--transport" {
				r.transport = remoteTransport(value)
				continue
			}
			name, v, ok := strings.Cut(value, ":")
			if name = strings.TrimSpace(name); !ok || name == "" {
				// The value is not echoed: it may be a credential.
				return r, true, fmt.Errorf(`--header: must be "Name: value"`)
			}
			if r.headers == nil {
				r.headers = make(map[string]string)
			}
			r.headers[name] = strings.TrimSpace(v)
		default:
			lower := strings.ToLower(rest[j])
			if r.url == "" && (strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://")) {
				r.url = rest[j]
			}
		}
	}
	if r.url == "" {
		return r, true, fmt.Errorf("no http(s) URL argument after mcp-remote")
	}
	return r, true, nil
}

// isMCPRemote reports whether a command-line word runs mcp-remote:
// "mcp-remote", "mcp-remote@latest", "/usr/bin/mcp-remote", "mcp-remote.cmd".
func isMCPRemote(word string) bool {
	if strings.Contains(word, "://") {
		return false
	}
	name := word[strings.LastIndexAny(word, `/\`)+1:]
	if at := strings.LastIndexByte(name, '@'); at > 0 {
		name = name[:at]
	}
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".cmd"), ".exe")
	return name == "mcp-remote"
}

func remoteTransport(strategy string) string {
	switch strategy {
	case "http-only":
		return "http"
	case "sse-only":
		return "sse"
	default: // http-first, sse-first: whichever the server answers
		return ""
	}
}

// EnvUse is an environment variable an imported server's header reads:
// its value is sent to that server with every request.
type EnvUse struct {
	Server, Header, Variable string
}

// EnvUses lists the variables each imported server's headers read, by
// server, header and variable.
func (r *ImportResult) EnvUses() []EnvUse {
	var out []EnvUse
	for _, s := range r.Servers {
		for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
			for _, v := range mcpgate.EnvRefs(s.Headers[h]) {
				out = append(out, EnvUse{Server: s.ID, Header: h, Variable: v})
			}
		}
	}
	return out
}

// CheckEnv refuses, with an error of [mcpgate.CategoryInvalid], an import
// whose headers read environment variables not in allowed: a project's
// config file may name any variable (AWS_SECRET_ACCESS_KEY), and the next
// request would send its value to the file's URL. The error names each
// variable, its header and the server's URL, never a value.
func (r *ImportResult) CheckEnv(allowed []string) error {
	var refused []string
	var names []string
	for _, u := range r.EnvUses() {
		if slices.Contains(allowed, u.Variable) {
			continue
		}
		url := ""
		if i := slices.IndexFunc(r.Servers, func(s mcpgate.ServerConfig) bool { return s.ID == u.Server }); i >= 0 {
			url = mcpgate.ShowURL(r.Servers[i].URL)
		}
		refused = append(refused, fmt.Sprintf("%s sends ${%s} in header %s to %s", u.Server, u.Variable, u.Header, url))
		if !slices.Contains(names, u.Variable) {
			names = append(names, u.Variable)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return invalidf("import: %s; nothing was imported. If that is meant, allow each variable by name: %s",
		strings.Join(refused, "; "), strings.Join(names, ","))
}

// Import adds every server of res, or none: if any has the ID of a
// configured server and replace is false, it returns an error of
// [mcpgate.CategoryConflict] listing them and changes nothing.
func (f *File) Import(res *ImportResult, replace bool) error {
	if res == nil {
		return invalidf("import: nothing to import")
	}
	var taken []string
	seen := make(map[string]bool)
	for _, s := range res.Servers {
		if err := s.Validate(); err != nil {
			return err
		}
		if seen[s.ID] {
			return invalidf("import: server %q is listed twice", s.ID)
		}
		seen[s.ID] = true
		if _, ok := f.servers[s.ID]; ok && !replace {
			taken = append(taken, s.ID)
		}
	}
	if len(taken) > 0 {
		slices.Sort(taken)
		return mcpgate.Errorf(mcpgate.CategoryConflict, "servers already configured: %s; nothing was imported; use --replace to overwrite them",
			strings.Join(taken, ", "))
	}
	for _, s := range res.Servers {
		f.replace(s)
	}
	return nil
}
