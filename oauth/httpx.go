package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
)

// Bounds on what an authorization server can make us read or wait for.
const (
	maxMetadataBytes = 1 << 20
	maxTokenBytes    = 1 << 20
	requestTimeout   = 30 * time.Second
)

// errTooLarge is returned when a response exceeds its bound.
var errTooLarge = errors.New("response too large")

// errMalformed is wrapped by the error of an answer that arrived but is
// not the JSON the endpoint must answer: a fault of the server's, not of
// the network.
var errMalformed = errors.New("malformed answer")

// checkEndpoint enforces the endpoint rules: an absolute http(s) URL with a
// host, https unless the host is loopback, no credentials, no fragment.
func checkEndpoint(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, discoveryErrorf("%s is not an absolute URL", name)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !mcpgate.IsLoopbackHost(u.Hostname()) {
			return nil, discoveryErrorf("%s uses http to a non-loopback host (%s); https is required", name, u.Host)
		}
	default:
		return nil, discoveryErrorf("%s has scheme %q; only https (or http on loopback) is allowed", name, u.Scheme)
	}
	if u.User != nil || u.Fragment != "" {
		return nil, discoveryErrorf("%s must not carry credentials or a fragment", name)
	}
	if strings.ContainsAny(raw, " \t\r\n\x00") {
		return nil, discoveryErrorf("%s contains whitespace or control characters", name)
	}
	return u, nil
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// canonicalResource is the form of a server URL used as the RFC 8707
// resource and compared with protected resource metadata: scheme and host
// lower-cased, default port dropped, no fragment, "/" for an empty path
// left as the person wrote it.
func canonicalResource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && !(u.Scheme == "https" && p == "443") && !(u.Scheme == "http" && p == "80") {
		host += ":" + p
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	u.Fragment = ""
	return u.String()
}

// client returns an HTTP client that never follows redirects: an
// authorization server's endpoints are used exactly as published.
func noRedirects(base *http.Client) *http.Client {
	c := *base
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// getJSON fetches a JSON document with a bound on its size. A non-200
// status is an *httpStatus error.
func (c *Client) getJSON(ctx context.Context, rawURL string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &httpStatus{code: resp.StatusCode}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%w: the content type is not application/json", errMalformed)
	}
	body, err := readBounded(resp.Body, maxMetadataBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", errMalformed, err)
	}
	return nil
}

type httpStatus struct{ code int }

func (e *httpStatus) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

func readBounded(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// postForm sends a form to an endpoint and decodes the JSON answer into v.
// RFC 6749 errors come back as *ProtocolError.
func (c *Client) postForm(ctx context.Context, endpoint string, form url.Values, basicUser, basicPass string, v any) error {
	_, err := c.postFormHeader(ctx, endpoint, form, basicUser, basicPass, nil, v)
	return err
}

// postFormHeader is postForm with extra request headers, returning the
// response's headers (nil when no response arrived).
func (c *Client) postFormHeader(ctx context.Context, endpoint string, form url.Values, basicUser, basicPass string, header http.Header, v any) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basicUser != "" {
		// RFC 6749 §2.3.1: form-encode before Basic.
		req.SetBasicAuth(url.QueryEscape(basicUser), url.QueryEscape(basicPass))
	}
	return c.doHeader(req, v)
}

// postJSON sends a JSON body (dynamic client registration).
func (c *Client) postJSON(ctx context.Context, endpoint string, body any, v any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return c.do(req, v)
}

func (c *Client) do(req *http.Request, v any) error {
	_, err := c.doHeader(req, v)
	return err
}

func (c *Client) doHeader(req *http.Request, v any) (http.Header, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, maxTokenBytes)
	if err != nil {
		return resp.Header, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		pe := &ProtocolError{HTTPStatus: resp.StatusCode}
		_ = json.Unmarshal(body, pe)
		pe.ErrorCode = providerCode(pe.ErrorCode)
		return resp.Header, pe
	}
	if v == nil {
		return resp.Header, nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.Header, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return resp.Header, nil
}

// providerCode is an error code a remote server sent, when it looks like
// one (RFC 6749 codes are short ASCII words), else "": it reaches error
// categories and models, so remote text of any other shape is dropped.
func providerCode(code string) string { return mcpgate.SafeCode(code) }

// ProtocolError is an OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2).
// ErrorCode is kept only when it has the shape of a code (see
// providerCode). ErrorDescription is remote text: show it to people only
// after sanitizing, never to a model.
type ProtocolError struct {
	HTTPStatus       int    `json:"-"`
	ErrorCode        string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}

func (e *ProtocolError) Error() string {
	if e.ErrorCode == "" {
		return fmt.Sprintf("HTTP %d", e.HTTPStatus)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.ErrorCode, e.HTTPStatus)
}
