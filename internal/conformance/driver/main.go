// Command driver is the client the official MCP conformance suite
// (@modelcontextprotocol/conformance) runs for each client scenario. It
// does what a person would do with the mcpgate command: add the server,
// list, call, sign in when mcpgate exits 4, and answer the questions a
// server asks. Every MCP and OAuth request is made by mcpgate itself; the
// driver runs mcpgate commands and reads their JSON output.
//
// The suite starts it as `driver SERVER_URL` with MCP_CONFORMANCE_SCENARIO
// (and, for some scenarios, MCP_CONFORMANCE_CONTEXT) set. It needs
// MCPGATE_BIN (the mcpgate binary) and FAKEBROWSER (internal/fake's
// browser, which follows the authorization server's redirect back to
// mcpgate's loopback callback as a person's click would).
//
// The one thing it looks up itself is where a pre-registered client
// belongs: a person who registered one knows its authorization server and
// pins it with --issuer; the driver takes it from the scenario's context,
// else from the server's protected resource metadata (see issuer).
//
// It exits 0 when every step did what the scenario asks of a client, and 1
// otherwise (saying which last on stdout); for scenarios where a correct
// client must refuse, a refusal by mcpgate is a failure of the step and
// so exits 1, which the suite expects.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: driver SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		exit(2)
	}
	d, err := newDriver(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		exit(2)
	}
	err = d.run(os.Getenv("MCP_CONFORMANCE_SCENARIO"))
	os.RemoveAll(d.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		exit(1)
	}
	exit(0)
}

// exit ends the driver with code, saying so last on stdout ("driver: exit
// 0"): the suite's parallel mode keeps what a client printed but not how
// it exited, and the test reads it there.
func exit(code int) {
	fmt.Printf("driver: exit %d\n", code)
	os.Exit(code)
}

// server is the name the driver gives the scenario's server in mcpgate.
const server = "conf"

type driver struct {
	url string
	dir string // config, data directory and files of this run
	bin string
	ctx map[string]any
	env []string
}

func newDriver(url string) (*driver, error) {
	bin := os.Getenv("MCPGATE_BIN")
	browser := os.Getenv("FAKEBROWSER")
	if bin == "" || browser == "" {
		return nil, errors.New("MCPGATE_BIN and FAKEBROWSER must name the mcpgate binary and the fake browser")
	}
	dir, err := os.MkdirTemp("", "mcpgate-conformance-")
	if err != nil {
		return nil, err
	}
	d := &driver{url: url, dir: dir, bin: bin}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &d.ctx); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	d.env = append(os.Environ(),
		"MCPGATE_CONFIG="+filepath.Join(dir, "config.json"),
		"MCPGATE_DATA_DIR="+filepath.Join(dir, "data"),
		"MCPGATE_KEYRING=off",
		"MCPGATE_SECRET_KEY=",
		"BROWSER="+browser,
	)
	return d, nil
}

// result is one mcpgate invocation.
type result struct {
	code           int
	stdout, stderr string
}

// mcpgate runs one command with stdin and returns what it did.
func (d *driver) mcpgate(stdin string, args ...string) result {
	cmd := exec.Command(d.bin, args...)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		}
	}
	fmt.Fprintf(os.Stderr, "$ mcpgate %s\n%s%s(exit %d)\n", strings.Join(args, " "), out.String(), errOut.String(), code)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// must runs a command that has to succeed.
func (d *driver) must(stdin string, args ...string) (string, error) {
	r := d.mcpgate(stdin, args...)
	if r.code != 0 {
		return "", fmt.Errorf("mcpgate %s: exit %d", args[0], r.code)
	}
	return r.stdout, nil
}

// signedIn runs a command that reaches the server, signing in (mcpgate
// auth) each time mcpgate says authorization is needed (exit 4), as a
// person would. mcpgate decides when to stop asking: the driver gives up
// only after far more rounds than any correct client needs.
func (d *driver) signedIn(stdin string, args ...string) (string, error) {
	for round := 0; round < 8; round++ {
		r := d.mcpgate(stdin, args...)
		switch r.code {
		case 0:
			return r.stdout, nil
		case 4:
			if _, err := d.must("", "auth", server, "--timeout", "20s"); err != nil {
				return "", err
			}
			continue
		}
		return "", fmt.Errorf("mcpgate %s: exit %d", args[0], r.code)
	}
	return "", errors.New("still asked to sign in after 8 sign-ins")
}

func (d *driver) str(key string) string {
	s, _ := d.ctx[key].(string)
	return s
}

// file writes content to a file of this run and returns its path.
func (d *driver) file(name, content string) (string, error) {
	p := filepath.Join(d.dir, name)
	return p, os.WriteFile(p, []byte(content), 0o600)
}

// secretEnv puts a secret from the scenario's context into the
// environment of mcpgate and returns the variable's name.
func (d *driver) secretEnv(name, key string) string {
	d.env = append(d.env, name+"="+d.str(key))
	return name
}

func (d *driver) run(scenario string) error {
	switch {
	case scenario == "":
		return errors.New("MCP_CONFORMANCE_SCENARIO is not set")
	case strings.HasPrefix(scenario, "auth/"):
		return d.auth(scenario)
	}
	if _, err := d.must("", "add", server, d.url); err != nil {
		return err
	}
	switch scenario {
	case "initialize", "request-metadata", "json-schema-ref-no-deref":
		_, err := d.must("", "list", server, "--json")
		return err
	case "tools_call":
		_, err := d.must("", "call", server, "add_numbers", `{"a":5,"b":3}`)
		return err
	case "sse-retry":
		_, err := d.must("", "call", server, "test_reconnection")
		return err
	case "elicitation-sep1034-client-defaults":
		_, err := d.must("", "call", server, "test_client_elicitation_defaults", "--elicit", "accept-defaults")
		return err
	case "sep-2322-client-request-state":
		return d.mrtr()
	case "http-standard-headers":
		return d.everyVerb()
	case "http-custom-headers":
		return d.customHeaders()
	case "http-invalid-tool-headers":
		return d.invalidToolHeaders()
	case "json-schema-2020-12-preservation":
		return d.schemaEcho()
	}
	return fmt.Errorf("no steps for scenario %q", scenario)
}

// mrtr calls the multi round-trip tools, answering each question the
// server asks (a yes to "confirmed") on stdin as a person would.
func (d *driver) mrtr() error {
	for _, tool := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
		if _, err := d.must("true\n", "call", server, tool, "--elicit", "ask"); err != nil {
			return err
		}
	}
	return nil
}

type toolsJSON struct {
	Servers []struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	} `json:"servers"`
}

func (d *driver) listJSON(what string) (*toolsJSON, error) {
	out, err := d.must("", what, server, "--json")
	if err != nil {
		return nil, err
	}
	var v toolsJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Servers) != 1 {
		return nil, fmt.Errorf("mcpgate %s --json: unexpected output", what)
	}
	return &v, nil
}

// everyVerb uses each kind of request once: the first tool, resource and
// prompt.
func (d *driver) everyVerb() error {
	tools, err := d.listJSON("list")
	if err != nil {
		return err
	}
	if ts := tools.Servers[0].Tools; len(ts) > 0 {
		if _, err := d.must("", "call", server, ts[0].Name); err != nil {
			return err
		}
	}
	res, err := d.listJSON("resources")
	if err != nil {
		return err
	}
	if rs := res.Servers[0].Resources; len(rs) > 0 {
		if _, err := d.must("", "read", server, rs[0].URI); err != nil {
			return err
		}
	}
	prompts, err := d.listJSON("prompts")
	if err != nil {
		return err
	}
	if ps := prompts.Servers[0].Prompts; len(ps) > 0 {
		if _, err := d.must("", "prompt", server, ps[0].Name); err != nil {
			return err
		}
	}
	return nil
}

// customHeaders makes the tool calls the scenario names.
func (d *driver) customHeaders() error {
	calls, _ := d.ctx["toolCalls"].([]any)
	if len(calls) == 0 {
		return errors.New("the scenario named no tool calls")
	}
	if _, err := d.listJSON("list"); err != nil {
		return err
	}
	for _, c := range calls {
		call, _ := c.(map[string]any)
		name, _ := call["name"].(string)
		args, err := json.Marshal(call["arguments"])
		if err != nil || name == "" {
			return errors.New("a tool call of the scenario is malformed")
		}
		if _, err := d.must("", "call", server, name, string(args)); err != nil {
			return err
		}
	}
	return nil
}

// invalidToolHeaders calls every tool mcpgate lists; the ones with invalid
// header declarations must not be among them.
func (d *driver) invalidToolHeaders() error {
	tools, err := d.listJSON("list")
	if err != nil {
		return err
	}
	for _, t := range tools.Servers[0].Tools {
		if _, err := d.must("", "call", server, t.Name, `{"region":"us-west1"}`); err != nil {
			return err
		}
	}
	return nil
}

// schemaEcho sends the focal tool's input schema, as mcpgate listed it,
// back to the server.
func (d *driver) schemaEcho() error {
	tools, err := d.listJSON("list")
	if err != nil {
		return err
	}
	for _, t := range tools.Servers[0].Tools {
		if t.Name != "json_schema_2020_12_tool" {
			continue
		}
		args := `{"schema":` + string(t.InputSchema) + `}`
		_, err := d.must("", "call", server, "json_schema_echo", args)
		return err
	}
	return errors.New("mcpgate did not list json_schema_2020_12_tool")
}

// issuer is the authorization server the scenario's pre-registered client
// belongs to: the context's issuer when the scenario gives one, else the
// first the server's protected resource metadata (RFC 9728, path-aware
// then root location) names.
func (d *driver) issuer() (string, error) {
	if is := d.str("issuer"); is != "" {
		return is, nil
	}
	u, err := url.Parse(d.url)
	if err != nil {
		return "", err
	}
	base := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	client := &http.Client{Timeout: 10 * time.Second}
	for _, loc := range []string{base + strings.TrimSuffix(u.EscapedPath(), "/"), base} {
		resp, err := client.Get(loc)
		if err != nil {
			return "", err
		}
		var prm struct {
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&prm)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && err == nil && len(prm.AuthorizationServers) > 0 {
			return prm.AuthorizationServers[0], nil
		}
	}
	return "", errors.New("the server's protected resource metadata names no authorization server for the pre-registered client")
}

// cimdURL is the Client ID Metadata Document URL the suite's authorization
// servers accept.
const cimdURL = "https://conformance-test.local/client-metadata.json"

// auth adds the server with the sign-in the scenario calls for, then lists
// and calls its tool, signing in whenever mcpgate asks.
func (d *driver) auth(scenario string) error {
	add := []string{"add", server, d.url, "--auth", "oauth"}
	switch scenario {
	case "auth/pre-registration", "auth/client-credentials-basic", "auth/client-credentials-jwt", "auth/wif-jwt-bearer", "auth/enterprise-managed-authorization":
		issuer, err := d.issuer()
		if err != nil {
			return err
		}
		add = append(add, "--issuer", issuer)
	}
	switch scenario {
	case "auth/pre-registration":
		add = append(add, "--client-id", d.str("client_id"), "--client-secret-env", d.secretEnv("CONF_CLIENT_SECRET", "client_secret"))
	case "auth/client-credentials-basic":
		add = append(add, "--grant", "client_credentials", "--client-id", d.str("client_id"),
			"--client-secret-env", d.secretEnv("CONF_CLIENT_SECRET", "client_secret"))
	case "auth/client-credentials-jwt":
		key, err := d.file("client-key.pem", d.str("private_key_pem"))
		if err != nil {
			return err
		}
		add = append(add, "--grant", "client_credentials", "--client-id", d.str("client_id"), "--private-key-file", key)
		if alg := d.str("signing_algorithm"); alg != "" {
			add = append(add, "--private-key-alg", alg)
		}
	case "auth/wif-jwt-bearer":
		// The platform writes the workload's JWT to a file mcpgate reads.
		jwt, err := d.file("workload-token", d.str("valid_jwt"))
		if err != nil {
			return err
		}
		add = append(add, "--grant", "jwt_bearer", "--client-id", d.str("client_id"), "--assertion-file", jwt)
	case "auth/enterprise-managed-authorization":
		// The person's ID token from the company's identity provider, as
		// a desktop agent or the platform team's tooling leaves it.
		idToken, err := d.file("id-token", d.str("idp_id_token"))
		if err != nil {
			return err
		}
		add = append(add, "--grant", "enterprise", "--client-id", d.str("client_id"),
			"--client-secret-env", d.secretEnv("CONF_CLIENT_SECRET", "client_secret"),
			"--id-token-file", idToken, "--idp-token-endpoint", d.str("idp_token_endpoint"), "--idp-client-id", d.str("idp_client_id"))
	case "auth/dpop", "auth/dpop-nonce":
		// The platform team knows the server takes only sender-constrained
		// tokens.
		add = append(add, "--client-metadata-url", cimdURL, "--dpop")
	default:
		add = append(add, "--client-metadata-url", cimdURL)
	}
	if _, err := d.must("", add...); err != nil {
		return err
	}
	if _, err := d.signedIn("", "list", server); err != nil {
		return err
	}
	_, err := d.signedIn("", "call", server, "test-tool")
	return err
}
