package mcpgate

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	cases := []struct {
		url  string
		ok   bool
		want string
	}{
		{"https://mcp.example.com/mcp", true, ""},
		{"http://127.0.0.1:8080/mcp", true, ""},
		{"http://127.9.9.9/mcp", true, ""},
		{"http://localhost/mcp", true, ""},
		{"http://[::1]:3000/mcp", true, ""},
		{"http://example.com/mcp", false, "http is only allowed for loopback"},
		{"http://10.0.0.1/mcp", false, "http is only allowed for loopback"},
		{"ftp://example.com", false, "scheme must be https"},
		{"unix:///tmp/sock", false, "not supported"},
		{"/relative", false, "must be absolute"},
		{"https://user:pw@example.com/", false, "credentials"},
		{"https://example.com/mcp#x", false, "fragment"},
	}
	for _, c := range cases {
		err := ValidateURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("ValidateURL(%q) = %v, want ok=%v", c.url, err, c.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidateURL(%q) = %v, want an invalid error mentioning %q", c.url, err, c.want)
		}
	}
	if err := ValidateURL("http://example.com/mcp?token=s3cret"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("query leaked into the error: %v", err)
	}
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "github", "my-server_2", strings.Repeat("a", 32)} {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "-a", "_a", "A", "a b", "a.b", strings.Repeat("a", 33), "ünï"} {
		if err := ValidateID(id); err == nil {
			t.Errorf("ValidateID(%q) accepted", id)
		}
	}
}

func TestExpandRefs(t *testing.T) {
	env := map[string]string{"A": "1", "B": "two"}
	get := func(k string) string { return env[k] }
	cases := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"Bearer ${A}", "Bearer 1", ""},
		{"${env:B}-${A}", "two-1", ""},
		{"${C:-dflt}", "dflt", ""},
		{"$A ${A}", "$A 1", ""},
		{"${C}", "", "C is not set"},
		{"${", "", "unterminated"},
		{"${a b}", "", "not an environment variable name"},
	}
	for _, c := range cases {
		got, err := ExpandRefs(c.in, get)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ExpandRefs(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ExpandRefs(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestErrorCategories(t *testing.T) {
	e := Errorf(CategoryAuth, "needs login: %w", errors.New("cause"))
	if !errors.Is(e, ErrAuthRequired) || errors.Is(e, ErrNetwork) {
		t.Error("sentinel matching by category is wrong")
	}
	if CategoryOf(e) != CategoryAuth || CategoryOf(errors.New("x")) != CategoryInternal {
		t.Error("CategoryOf")
	}
	if e.Unwrap() == nil || e.Unwrap().Error() != "cause" {
		t.Error("Errorf lost the wrapped cause")
	}
}

func TestBindingChangesWithCredentialSettings(t *testing.T) {
	base := ServerConfig{ID: "s", URL: "https://a.example/mcp", Auth: AuthBearer, BearerTokenEnv: "T", Enabled: true}
	same := base
	same.DisabledTools = []string{"x"}
	same.Name = "other name"
	if base.Binding() != same.Binding() {
		t.Error("display settings changed the binding")
	}
	for _, change := range []func(*ServerConfig){
		func(c *ServerConfig) { c.URL = "https://b.example/mcp" },
		func(c *ServerConfig) { c.Auth = AuthNone; c.BearerTokenEnv = "" },
		func(c *ServerConfig) { c.BearerTokenEnv = "U" },
		func(c *ServerConfig) { c.Headers = map[string]string{"X": "1"} },
	} {
		c := base
		change(&c)
		if c.Binding() == base.Binding() {
			t.Errorf("binding unchanged for %+v", c)
		}
	}
}
