package mcpgate

import (
	"strings"
)

// ExpandRefs replaces ${VAR}, ${env:VAR} and ${VAR:-default} in s with
// values from getenv. A reference to an unset or empty variable without a
// default is an error naming the variable (never its value). Text outside
// references, including a lone "$", is kept as it is.
func ExpandRefs(s string, getenv func(string) string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", invalidf("unterminated ${ reference")
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		s = s[i+j+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		name = strings.TrimPrefix(name, "env:")
		if !envName.MatchString(name) {
			return "", invalidf("reference ${%s}: %q is not an environment variable name", ref, name)
		}
		v := getenv(name)
		if v == "" {
			if !hasDef {
				return "", invalidf("environment variable %s is not set", name)
			}
			v = def
		}
		b.WriteString(v)
	}
}

// EnvRefs returns the variable names s references, in order.
func EnvRefs(s string) []string {
	var names []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return names
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return names
		}
		name, _, _ := strings.Cut(s[i+2:i+j], ":-")
		names = append(names, strings.TrimPrefix(name, "env:"))
		s = s[i+j+1:]
	}
}
