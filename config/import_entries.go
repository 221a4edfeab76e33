package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// hostEntry is one server entry in the terms every dialect shares.
type hostEntry struct {
	typ           string // the transport as the host wrote it; "" when it did not say
	url           string
	headers       map[string]string
	command       string
	args          []string
	env           map[string]string // what the host sets for the entry's command or headers
	disabled      bool
	disabledTools []string
	oauth         *entryOAuth
	notes         []string
}

// entryOAuth is an entry's request for OAuth, with the client it names.
type entryOAuth struct {
	clientID string
	scopes   []string
}

func decodeArray(raw json.RawMessage) ([]json.RawMessage, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		return nil, fmt.Errorf("must be a list")
	}
	var items []json.RawMessage
	err := json.Unmarshal(raw, &items)
	return items, err
}

// mcpServersEntry is the union of what Claude Code, Claude Desktop,
// Cursor, Windsurf, Cline, Roo Code, LM Studio, Amazon Q, Kiro and VS Code
// write for one server.
type mcpServersEntry struct {
	Type          string            `json:"type"`
	TransportType string            `json:"transportType"` // Cline, older versions
	URL           string            `json:"url"`
	ServerURL     string            `json:"serverUrl"` // Windsurf
	Headers       map[string]string `json:"headers"`
	HeadersHelper string            `json:"headersHelper"` // Claude Code
	Command       string            `json:"command"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	Disabled      bool              `json:"disabled"` // Windsurf, Cline, Roo Code, Kiro, Amazon Q
	Enabled       *bool             `json:"enabled"`
	DisabledTools []string          `json:"disabledTools"` // Windsurf, Cline, Roo Code, Kiro
	OAuth         *struct {
		ClientID string `json:"clientId"`
		Scopes   string `json:"scopes"` // space-separated
	} `json:"oauth"` // Claude Code
}

// decodeMCPServers reads the shared "mcpServers" entry. For Cline a url
// without a type is the legacy SSE transport.
func decodeMCPServers(sseWithoutType bool) func([]byte) (hostEntry, string) {
	return func(raw []byte) (hostEntry, string) {
		var fe mcpServersEntry
		if reason := decodeHostEntry(raw, &fe); reason != "" {
			return hostEntry{}, reason
		}
		if fe.HeadersHelper != "" {
			return hostEntry{}, `headersHelper runs a command to make headers, and mcpgate runs no commands: put the headers in "headers" with ${VAR} references`
		}
		e := hostEntry{
			typ:           cmp.Or(fe.Type, fe.TransportType),
			url:           cmp.Or(fe.URL, fe.ServerURL),
			headers:       fe.Headers,
			command:       fe.Command,
			args:          fe.Args,
			env:           fe.Env,
			disabled:      fe.Disabled || fe.Enabled != nil && !*fe.Enabled,
			disabledTools: fe.DisabledTools,
		}
		if sseWithoutType && e.typ == "" && e.command == "" {
			e.typ = "sse"
		}
		if fe.OAuth != nil {
			e.oauth = &entryOAuth{clientID: fe.OAuth.ClientID, scopes: strings.Fields(fe.OAuth.Scopes)}
		}
		return e, ""
	}
}

// decodeGemini reads a Gemini CLI entry: httpUrl is Streamable HTTP, url
// is SSE unless its type says http, and values may read $VAR.
func decodeGemini(raw []byte) (hostEntry, string) {
	var ge struct {
		Type             string            `json:"type"`
		URL              string            `json:"url"`
		HTTPURL          string            `json:"httpUrl"`
		Headers          map[string]string `json:"headers"`
		Command          string            `json:"command"`
		Args             []string          `json:"args"`
		Env              map[string]string `json:"env"`
		IncludeTools     []string          `json:"includeTools"`
		ExcludeTools     []string          `json:"excludeTools"`
		AuthProviderType string            `json:"authProviderType"`
		OAuth            *struct {
			Enabled      bool     `json:"enabled"`
			ClientID     string   `json:"clientId"`
			ClientSecret string   `json:"clientSecret"`
			Scopes       []string `json:"scopes"`
		} `json:"oauth"`
	}
	if reason := decodeHostEntry(raw, &ge); reason != "" {
		return hostEntry{}, reason
	}
	switch ge.AuthProviderType {
	case "", "dynamic_discovery":
	default:
		return hostEntry{}, fmt.Sprintf("authProviderType %q: an authentication mcpgate does not have; add the server with mcpgate add and the auth it needs", ge.AuthProviderType)
	}
	e := hostEntry{
		typ:           ge.Type,
		url:           ge.HTTPURL,
		headers:       mapValues(ge.Headers, dollarRefs),
		command:       ge.Command,
		args:          ge.Args,
		env:           ge.Env,
		disabledTools: ge.ExcludeTools,
	}
	switch {
	case ge.HTTPURL != "":
		e.typ = "http"
	case ge.URL != "":
		e.url = ge.URL
		if !strings.EqualFold(ge.Type, "http") {
			e.typ = "sse"
		}
	}
	e.url = dollarRefs(e.url)
	if o := ge.OAuth; o != nil {
		if o.ClientSecret != "" {
			return hostEntry{}, clientSecretRule
		}
		if o.Enabled || o.ClientID != "" {
			e.oauth = &entryOAuth{clientID: o.ClientID, scopes: o.Scopes}
		}
	}
	if len(ge.IncludeTools) > 0 {
		e.notes = append(e.notes, "includeTools: Gemini CLI offers only the tools it lists; mcpgate enables every tool, so disable the others with mcpgate tools disable")
	}
	return e, ""
}

// clientSecretRule is why an entry with an OAuth client secret is not
// imported: mcpgate sends a secret only to the issuer it is pinned to.
const clientSecretRule = "oauth.clientSecret: mcpgate reads a client secret only from an environment variable, sent only to the authorization server it is pinned to: add the server with mcpgate add NAME URL --client-id ID --client-secret-env VAR --issuer URL"

// dollarRef is Gemini CLI's $VAR, which mcpgate writes ${VAR}.
var dollarRef = lazyregexp.New(`\$([A-Za-z_][A-Za-z0-9_]*)`)

func dollarRefs(s string) string { return dollarRef().ReplaceAllString(s, "$${$1}") }

func mapValues(m map[string]string, f func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

// decodeZed reads a Zed context server: a url, or a command given as a
// string with args, or (older settings) as {"path", "args", "env"}.
func decodeZed(raw []byte) (hostEntry, string) {
	var ze struct {
		Source   string            `json:"source"`
		Command  json.RawMessage   `json:"command"`
		Args     []string          `json:"args"`
		Env      map[string]string `json:"env"`
		URL      string            `json:"url"`
		Headers  map[string]string `json:"headers"`
		Enabled  *bool             `json:"enabled"`
		Settings json.RawMessage   `json:"settings"`
	}
	if reason := decodeHostEntry(raw, &ze); reason != "" {
		return hostEntry{}, reason
	}
	e := hostEntry{url: ze.URL, headers: ze.Headers, args: ze.Args, env: ze.Env, disabled: ze.Enabled != nil && !*ze.Enabled}
	if len(ze.Command) > 0 && !isNull(ze.Command) {
		var cmd struct {
			Path string            `json:"path"`
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		}
		if json.Unmarshal(ze.Command, &e.command) != nil {
			if reason := decodeHostEntry(ze.Command, &cmd); reason != "" {
				return hostEntry{}, "command: must be a string or {\"path\", \"args\"}"
			}
			e.command, e.args, e.env = cmd.Path, cmd.Args, cmd.Env
		}
	}
	if e.url == "" && e.command == "" && (ze.Source == "extension" || len(ze.Settings) > 0) {
		return hostEntry{}, "the settings of a Zed extension's server, which Zed runs locally: " + stdioRule
	}
	return e, ""
}

// decodeOpencode reads an opencode server: "remote" with a url, "local"
// with a command list. Values may read {env:VAR}.
func decodeOpencode(raw []byte) (hostEntry, string) {
	var oe struct {
		Type        string            `json:"type"`
		URL         string            `json:"url"`
		Headers     map[string]string `json:"headers"`
		Command     []string          `json:"command"`
		Environment map[string]string `json:"environment"`
		Enabled     *bool             `json:"enabled"`
		OAuth       json.RawMessage   `json:"oauth"`
	}
	if reason := decodeHostEntry(raw, &oe); reason != "" {
		return hostEntry{}, reason
	}
	e := hostEntry{typ: oe.Type, url: oe.URL, headers: oe.Headers, env: oe.Environment, disabled: oe.Enabled != nil && !*oe.Enabled}
	if len(oe.Command) > 0 {
		e.command, e.args = oe.Command[0], oe.Command[1:]
	}
	if strings.Contains(e.url, "{file:") {
		return hostEntry{}, "url: reads a file ({file:...}); mcpgate needs the URL itself"
	}
	e.url = opencodeRefs(e.url)
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		if strings.Contains(e.headers[k], "{file:") {
			return hostEntry{}, fmt.Sprintf("header %q reads a file ({file:...}); mcpgate reads header values from environment variables: write ${NAME}", k)
		}
	}
	e.headers = mapValues(e.headers, opencodeRefs)
	switch s := strings.TrimSpace(string(oe.OAuth)); {
	case s == "" || s == "null" || s == "false":
	case strings.HasPrefix(s, "{"):
		var o struct {
			ClientID     string `json:"clientId"`
			ClientSecret string `json:"clientSecret"`
			Scope        string `json:"scope"`
		}
		if reason := decodeHostEntry(oe.OAuth, &o); reason != "" {
			return hostEntry{}, "oauth: " + strings.TrimPrefix(reason, "not a server entry: ")
		}
		if o.ClientSecret != "" {
			return hostEntry{}, clientSecretRule
		}
		e.oauth = &entryOAuth{clientID: o.ClientID, scopes: strings.Fields(o.Scope)}
	default:
		return hostEntry{}, "oauth: must be false or an object"
	}
	return e, ""
}

// opencodeRef is opencode's {env:VAR}, which mcpgate writes ${VAR}; a
// ${env:VAR} (Cursor's spelling) is left alone.
var opencodeRef = lazyregexp.New(`(^|[^$])\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

func opencodeRefs(s string) string { return opencodeRef().ReplaceAllString(s, "$1$${$2}") }

// envName is an environment variable's name, as Codex's *_env_var fields
// hold.
var envName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// decodeCodex reads a Codex [mcp_servers.NAME] table.
func decodeCodex(raw []byte) (hostEntry, string) {
	var ce struct {
		Type              string            `json:"type"`
		URL               string            `json:"url"`
		Command           string            `json:"command"`
		Args              []string          `json:"args"`
		Env               map[string]string `json:"env"`
		BearerTokenEnvVar string            `json:"bearer_token_env_var"`
		BearerToken       string            `json:"bearer_token"`
		HTTPHeaders       map[string]string `json:"http_headers"`
		EnvHTTPHeaders    map[string]string `json:"env_http_headers"`
		Headers           json.RawMessage   `json:"headers"`
		Enabled           *bool             `json:"enabled"`
		EnabledTools      []string          `json:"enabled_tools"`
		DisabledTools     []string          `json:"disabled_tools"`
		OAuth             *struct {
			ClientID string `json:"client_id"`
		} `json:"oauth"`
	}
	if reason := decodeHostEntry(raw, &ce); reason != "" {
		return hostEntry{}, reason
	}
	if ce.BearerToken != "" {
		return hostEntry{}, "bearer_token: a token written in the file, which Codex refuses too; put it in an environment variable and name it in bearer_token_env_var"
	}
	e := hostEntry{
		typ:           ce.Type,
		url:           ce.URL,
		command:       ce.Command,
		args:          ce.Args,
		env:           ce.Env,
		disabled:      ce.Enabled != nil && !*ce.Enabled,
		disabledTools: ce.DisabledTools,
	}
	headers := maps.Clone(ce.HTTPHeaders)
	if headers == nil {
		headers = make(map[string]string)
	}
	for _, k := range slices.Sorted(maps.Keys(ce.EnvHTTPHeaders)) {
		v := ce.EnvHTTPHeaders[k]
		if !envName().MatchString(v) {
			return hostEntry{}, fmt.Sprintf("env_http_headers: header %q: must name an environment variable", k)
		}
		if _, ok := headers[k]; ok {
			return hostEntry{}, fmt.Sprintf("header %q is in both http_headers and env_http_headers; mcpgate cannot tell which Codex sends", k)
		}
		headers[k] = "${" + v + "}"
	}
	if v := ce.BearerTokenEnvVar; v != "" {
		if !envName().MatchString(v) {
			return hostEntry{}, "bearer_token_env_var: must name an environment variable"
		}
		for k := range headers {
			if strings.EqualFold(k, "Authorization") {
				return hostEntry{}, "both bearer_token_env_var and an Authorization header; mcpgate cannot tell which Codex sends"
			}
		}
		headers["Authorization"] = "Bearer ${" + v + "}"
	}
	if len(headers) > 0 {
		e.headers = headers
	}
	if len(ce.Headers) > 0 && !isNull(ce.Headers) {
		e.notes = append(e.notes, `"headers" is not a Codex field (Codex sends http_headers and env_http_headers), so mcpgate does not send it either`)
	}
	if len(ce.EnabledTools) > 0 {
		e.notes = append(e.notes, "enabled_tools: Codex offers only the tools it lists; mcpgate enables every tool, so disable the others with mcpgate tools disable")
	}
	if ce.OAuth != nil {
		e.oauth = &entryOAuth{clientID: ce.OAuth.ClientID}
	}
	return e, ""
}

// decodeGoose reads a goose extension.
func decodeGoose(raw []byte) (hostEntry, string) {
	var ge struct {
		Type           string            `json:"type"`
		URI            string            `json:"uri"`
		Headers        map[string]string `json:"headers"`
		Cmd            string            `json:"cmd"`
		Args           []string          `json:"args"`
		Envs           map[string]string `json:"envs"`
		Enabled        *bool             `json:"enabled"`
		AvailableTools []string          `json:"available_tools"`
	}
	if reason := decodeHostEntry(raw, &ge); reason != "" {
		return hostEntry{}, reason
	}
	e := hostEntry{env: ge.Envs, disabled: ge.Enabled != nil && !*ge.Enabled}
	switch typ := strings.ToLower(ge.Type); typ {
	case "streamable_http":
		e.typ, e.url, e.headers = "http", ge.URI, ge.Headers
	case "sse":
		e.typ, e.url = "sse", ge.URI
	case "stdio":
		e.command, e.args = ge.Cmd, ge.Args
		if e.command == "" {
			return hostEntry{}, "type stdio without a cmd: " + stdioRule
		}
	case "builtin", "platform":
		return hostEntry{}, fmt.Sprintf("type %s: part of goose itself, nothing to connect to", typ)
	case "frontend":
		return hostEntry{}, "type frontend: tools that goose's app provides, nothing to connect to"
	case "inline_python":
		return hostEntry{}, "type inline_python runs Python code locally: " + stdioRule
	case "":
		return hostEntry{}, "no type: goose needs one (streamable_http for a remote server)"
	default:
		return hostEntry{}, fmt.Sprintf("type %q: not a transport mcpgate supports (Streamable HTTP only)", ge.Type)
	}
	if len(ge.AvailableTools) > 0 {
		e.notes = append(e.notes, "available_tools: goose offers only the tools it lists; mcpgate enables every tool, so disable the others with mcpgate tools disable")
	}
	return e, ""
}

// decodeContinue reads one item of Continue's mcpServers list (its name
// was read by [continueSources]).
func decodeContinue(raw []byte) (hostEntry, string) {
	var ce struct {
		Type           string            `json:"type"`
		URL            string            `json:"url"`
		Command        string            `json:"command"`
		Args           []string          `json:"args"`
		Env            map[string]string `json:"env"`
		RequestOptions *struct {
			Headers map[string]string `json:"headers"`
		} `json:"requestOptions"`
		// A JSON block file in Claude Code's shape puts them here.
		Headers  map[string]string `json:"headers"`
		Disabled bool              `json:"disabled"`
	}
	if reason := decodeHostEntry(raw, &ce); reason != "" {
		return hostEntry{}, reason
	}
	e := hostEntry{typ: ce.Type, url: ce.URL, command: ce.Command, args: ce.Args, env: ce.Env, headers: ce.Headers, disabled: ce.Disabled}
	if ce.RequestOptions != nil && ce.RequestOptions.Headers != nil {
		e.headers = ce.RequestOptions.Headers
	}
	if strings.Contains(e.url, "${{") {
		return hostEntry{}, "url: uses a ${{ ... }} Continue secret or input; mcpgate needs the URL itself"
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		if strings.Contains(e.headers[k], "${{") {
			return hostEntry{}, fmt.Sprintf("header %q uses a ${{ ... }} Continue secret or input, which mcpgate cannot read: put the value in an environment variable and write ${NAME}", k)
		}
	}
	return e, ""
}
