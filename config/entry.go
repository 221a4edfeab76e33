package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
)

// entry is one server as it lives in the file: its configuration, and the
// members it was read from, so a rewrite keeps unknown members (a "type",
// a person's "note") where they were.
type entry struct {
	cfg     mcpgate.ServerConfig
	members []member // as read; only unknown ones for an entry replaced by Add
}

// field maps one member of a server entry to a ServerConfig field, both
// ways. The order of [fields] is the order new members are written in.
type field struct {
	key    string
	decode func(c *mcpgate.ServerConfig, raw json.RawMessage) error
	// encode returns the value to write and whether it is the default,
	// which is left out unless the person wrote the member.
	encode func(c *mcpgate.ServerConfig) (v any, isDefault bool)
}

var fields = []field{
	plain("url", "a string", func(c *mcpgate.ServerConfig) *string { return &c.URL }, isEmpty),
	plain("auth", `one of "none", "bearer", "oauth"`, func(c *mcpgate.ServerConfig) *mcpgate.AuthKind { return &c.Auth }, isEmpty),
	plain("name", "a string", func(c *mcpgate.ServerConfig) *string { return &c.Name }, isEmpty),
	plain("enabled", "true or false", func(c *mcpgate.ServerConfig) *bool { return &c.Enabled }, func(b bool) bool { return b }),
	plain("connectOnStartup", "true or false", func(c *mcpgate.ServerConfig) *bool { return &c.ConnectOnStartup }, func(b bool) bool { return !b }),
	plain("disabledTools", "an array of strings", func(c *mcpgate.ServerConfig) *[]string { return &c.DisabledTools }, isEmptySlice),
	plain("scopes", "an array of strings", func(c *mcpgate.ServerConfig) *[]string { return &c.Scopes }, isEmptySlice),
	plain("clientId", "a string", func(c *mcpgate.ServerConfig) *string { return &c.ClientID }, isEmpty),
	plain("clientSecretEnv", "a string", func(c *mcpgate.ServerConfig) *string { return &c.ClientSecretEnv }, isEmpty),
	plain("clientMetadataUrl", "a string", func(c *mcpgate.ServerConfig) *string { return &c.ClientMetadataURL }, isEmpty),
	plain("issuer", "a string", func(c *mcpgate.ServerConfig) *string { return &c.Issuer }, isEmpty),
	plain("grant", `one of "authorization_code", "client_credentials", "jwt_bearer", "enterprise"`, func(c *mcpgate.ServerConfig) *mcpgate.Grant { return &c.Grant }, isEmpty),
	plain("privateKeyFile", "a string", func(c *mcpgate.ServerConfig) *string { return &c.PrivateKeyFile }, isEmpty),
	plain("privateKeyAlg", "a string", func(c *mcpgate.ServerConfig) *string { return &c.PrivateKeyAlg }, isEmpty),
	plain("assertionFile", "a string", func(c *mcpgate.ServerConfig) *string { return &c.AssertionFile }, isEmpty),
	plain("assertionEnv", "a string", func(c *mcpgate.ServerConfig) *string { return &c.AssertionEnv }, isEmpty),
	plain("idTokenFile", "a string", func(c *mcpgate.ServerConfig) *string { return &c.IDTokenFile }, isEmpty),
	plain("idTokenEnv", "a string", func(c *mcpgate.ServerConfig) *string { return &c.IDTokenEnv }, isEmpty),
	plain("idpTokenEndpoint", "a string", func(c *mcpgate.ServerConfig) *string { return &c.IDPTokenEndpoint }, isEmpty),
	plain("idpClientId", "a string", func(c *mcpgate.ServerConfig) *string { return &c.IDPClientID }, isEmpty),
	plain("idpClientSecretEnv", "a string", func(c *mcpgate.ServerConfig) *string { return &c.IDPClientSecretEnv }, isEmpty),
	plain("dpop", "true or false", func(c *mcpgate.ServerConfig) *bool { return &c.DPoP }, func(b bool) bool { return !b }),
	plain("bearerTokenEnv", "a string", func(c *mcpgate.ServerConfig) *string { return &c.BearerTokenEnv }, isEmpty),
	plain("headers", "an object whose values are strings", func(c *mcpgate.ServerConfig) *map[string]string { return &c.Headers },
		func(m map[string]string) bool { return len(m) == 0 }),
	plain("allowPrivateNetwork", "true or false", func(c *mcpgate.ServerConfig) *bool { return &c.AllowPrivateNetwork }, func(b bool) bool { return !b }),
	{
		key: "timeout",
		decode: func(c *mcpgate.ServerConfig, raw json.RawMessage) (err error) {
			c.Timeout, err = parseTimeout(raw)
			return err
		},
		encode: func(c *mcpgate.ServerConfig) (any, bool) { return c.Timeout.String(), c.Timeout == 0 },
	},
}

func fieldFor(key string) (field, bool) {
	i := slices.IndexFunc(fields, func(f field) bool { return f.key == key })
	if i < 0 {
		return field{}, false
	}
	return fields[i], true
}

// plain is a field whose JSON form is its Go form.
func plain[T any](key, want string, ptr func(*mcpgate.ServerConfig) *T, isDefault func(T) bool) field {
	return field{
		key: key,
		decode: func(c *mcpgate.ServerConfig, raw json.RawMessage) error {
			if p, ok := any(ptr(c)).(*string); ok && len(raw) >= 2 && raw[0] == '"' {
				// Most fields are strings: no decoder for those.
				var err error
				*p, err = unquote(raw)
				return err
			}
			if err := json.Unmarshal(raw, ptr(c)); err != nil {
				return fmt.Errorf("must be %s", want)
			}
			return nil
		},
		encode: func(c *mcpgate.ServerConfig) (any, bool) { v := *ptr(c); return v, isDefault(v) },
	}
}

func isEmpty[S ~string](s S) bool  { return s == "" }
func isEmptySlice(s []string) bool { return len(s) == 0 }

// parseTimeout reads a Go duration string ("90s") or a JSON number of
// seconds, which is what people write when they do not know Go durations.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	const rule = `must be a duration such as "90s" or a number of seconds`
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q: %s", s, rule)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, errors.New(rule)
	}
	if math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
		return 0, errors.New("too large")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// decodeEntry reads the server id from raw and validates it.
func decodeEntry(id string, raw json.RawMessage) (*entry, error) {
	if err := mcpgate.ValidateID(id); err != nil {
		return nil, err
	}
	members, err := decodeObject(raw)
	if err != nil {
		return nil, invalidf("server %q: %v", id, err)
	}
	e := &entry{cfg: mcpgate.ServerConfig{ID: id, Enabled: true}, members: members}
	if err := checkTransport(id, members); err != nil {
		return nil, err
	}
	for _, m := range members {
		f, ok := fieldFor(m.Key)
		if !ok || isNull(m.Value) { // null reads as "not set", as people mean it
			continue
		}
		if err := f.decode(&e.cfg, m.Value); err != nil {
			return nil, invalidf("server %q: %s: %v", id, m.Key, err)
		}
	}
	if _, ok := lookup(members, "auth"); !ok {
		e.cfg.Auth = inferAuth(&e.cfg)
	}
	if err := e.cfg.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// Why entries are refused; shared with import so both say the same thing.
const (
	stdioRule = "stdio servers are not supported: mcpgate connects to remote servers over Streamable HTTP only"
	sseRule   = "the legacy HTTP+SSE transport is not supported: mcpgate connects over Streamable HTTP only"
)

// checkTransport refuses entries mcpgate cannot connect to. "type" itself is
// kept as an unknown member, so a file shared with Claude Code stays valid
// for Claude Code.
func checkTransport(id string, members []member) error {
	if _, ok := lookup(members, "command"); ok {
		return mcpgate.Errorf(mcpgate.CategoryUnsupported, "server %q: command: %s", id, stdioRule)
	}
	raw, ok := lookup(members, "type")
	if !ok {
		return nil
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil {
		return invalidf("server %q: type: must be a string", id)
	}
	switch typ {
	case "http", "streamable-http":
		return nil
	case "stdio":
		return mcpgate.Errorf(mcpgate.CategoryUnsupported, "server %q: type %q: %s", id, typ, stdioRule)
	case "sse":
		return mcpgate.Errorf(mcpgate.CategoryUnsupported, "server %q: type %q: %s", id, typ, sseRule)
	default:
		return invalidf("server %q: type %q: must be \"http\" or \"streamable-http\" (or left out)", id, typ)
	}
}

// inferAuth is the auth of an entry that does not say: a configured bearer
// variable means bearer; an Authorization header carries its own
// credential; otherwise OAuth, which is what Claude Code, Cursor and VS Code
// do for a remote server that answers 401.
func inferAuth(c *mcpgate.ServerConfig) mcpgate.AuthKind {
	switch {
	case c.BearerTokenEnv != "":
		return mcpgate.AuthBearer
	case hasAuthorizationHeader(c.Headers):
		return mcpgate.AuthNone
	default:
		return mcpgate.AuthOAuth
	}
}

func hasAuthorizationHeader(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// encode writes the entry: its members in their order, known ones with
// their current value, then known fields that were not written before and
// are not at their default. A member the person wrote stays even at its
// default, so "enabled": true does not vanish on the next save.
func (e *entry) encode() json.RawMessage {
	out := make([]member, 0, len(e.members)+len(fields))
	written := make(map[string]bool)
	for _, m := range e.members {
		f, ok := fieldFor(m.Key)
		if !ok {
			out = append(out, m)
			continue
		}
		v, _ := f.encode(&e.cfg)
		out = append(out, member{m.Key, marshal(v)})
		written[m.Key] = true
	}
	for _, f := range fields {
		if v, isDefault := f.encode(&e.cfg); !written[f.key] && !isDefault {
			out = append(out, member{f.key, marshal(v)})
		}
	}
	return encodeObject(out)
}

// unknownMembers is what survives a replace: the members mcpgate does not
// own. The known ones describe the old configuration.
func unknownMembers(members []member) []member {
	return slices.DeleteFunc(slices.Clone(members), func(m member) bool {
		_, known := fieldFor(m.Key)
		return known
	})
}

// clone is a deep copy, so callers cannot change a File through a returned
// or passed-in config.
func clone(s mcpgate.ServerConfig) mcpgate.ServerConfig {
	s.DisabledTools = slices.Clone(s.DisabledTools)
	s.Scopes = slices.Clone(s.Scopes)
	s.Headers = maps.Clone(s.Headers)
	return s
}

func invalidf(format string, args ...any) error {
	return mcpgate.Errorf(mcpgate.CategoryInvalid, format, args...)
}
