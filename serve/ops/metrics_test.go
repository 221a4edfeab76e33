package ops_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newTestMetrics() *ops.Metrics {
	return ops.NewMetrics(&ops.MetricsOptions{
		Tenants: []string{"acme", "globex"},
		Servers: []string{"docs", "search"},
		Version: "1.2.3",
		Who:     who,
	})
}

func TestMetricsCallsByTenantServerAndOutcome(t *testing.T) {
	m := newTestMetrics()
	acme, globex := withWho(context.Background(), "acme", "alice"), withWho(context.Background(), "globex", "bob")
	m.CallEnded(acme, "docs", "search", 200*time.Millisecond, &mcp.CallToolResult{}, nil)
	m.CallEnded(acme, "docs", "search", 300*time.Millisecond, &mcp.CallToolResult{}, nil)
	m.CallEnded(acme, "docs", "search", 10*time.Millisecond, &mcp.CallToolResult{IsError: true}, nil)
	m.CallEnded(globex, "search", "find", 60*time.Second, nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: "calling find: timed out"})
	// What callers could choose never becomes a label.
	m.CallEnded(withWho(context.Background(), "not-in-the-deployment", "mallory"), "attacker-chosen", "x", time.Millisecond, nil, mcpgate.ErrAuthRequired)
	m.CallEnded(context.Background(), "docs", "search", time.Millisecond, &mcp.CallToolResult{}, nil)

	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"tenant": "acme", "server": "docs", "outcome": "ok"}, 2},
		{map[string]string{"tenant": "acme", "server": "docs", "outcome": "tool_error"}, 1},
		{map[string]string{"tenant": "globex", "server": "search", "outcome": "timeout"}, 1},
		{map[string]string{"tenant": ops.LabelOther, "server": ops.LabelOther, "outcome": "auth"}, 1},
		{map[string]string{"tenant": ops.LabelNone, "server": "docs", "outcome": "ok"}, 1},
	} {
		if got := value(t, fams, "mcpgate_calls_total", c.labels); got != c.want {
			t.Errorf("mcpgate_calls_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := value(t, fams, "mcpgate_call_duration_seconds", map[string]string{"server": "docs"}); got != 4 {
		t.Errorf("docs call latency samples = %v, want 4", got)
	}
	h := sample(fams, "mcpgate_call_duration_seconds", map[string]string{"server": "search"}).GetHistogram()
	if h.GetSampleSum() != 60 {
		t.Errorf("search latency sum = %v s, want 60", h.GetSampleSum())
	}
	for _, label := range []string{"tenant", "server"} {
		for _, v := range labelValues(fams, "mcpgate_calls_total", label) {
			if !slices.Contains([]string{"acme", "globex", "docs", "search", ops.LabelOther, ops.LabelNone}, v) {
				t.Errorf("%s label %q is not from the deployment", label, v)
			}
		}
	}
	if got := value(t, fams, "mcpgate_build_info", map[string]string{"version": "1.2.3"}); got != 1 {
		t.Errorf("build_info = %v", got)
	}
	if fams["go_goroutines"] == nil || fams["process_start_time_seconds"] == nil {
		t.Error("the Go and process collectors are missing")
	}
}

func TestMetricsUpstreamRefreshesStreamsAndSessions(t *testing.T) {
	m := newTestMetrics()
	m.RequestLogged(manager.RequestLogEntry{Server: "docs", Method: "tools/call", Tool: "search", Outcome: "ok", Duration: 40 * time.Millisecond})
	m.RequestLogged(manager.RequestLogEntry{Server: "docs", Method: "tools/list", Outcome: "http", HTTPStatus: 502})
	m.RequestLogged(manager.RequestLogEntry{Server: "docs", Method: "made/up", Outcome: "made-up"})
	m.Refreshed("acme", "docs", ops.RefreshOK)
	m.Refreshed("acme", "docs", ops.RefreshInvalidGrant)
	m.Refreshed("acme", "docs", "anything else")
	m.EventStream("docs", true)
	m.EventStream("docs", true)
	m.EventStream("docs", false)

	s := m.Sessions()
	s.StateChanged(manager.Status{ID: "docs", State: mcpgate.StateReady, ConnectionID: 1})
	s.StateChanged(manager.Status{ID: "docs", State: mcpgate.StateReady, ConnectionID: 2}) // replaced: still one
	s.StateChanged(manager.Status{ID: "search", State: mcpgate.StateReady, ConnectionID: 3})
	s.StateChanged(manager.Status{ID: "search", State: mcpgate.StateNeedsAuth})
	s.StateChanged(manager.Status{ID: "search", State: mcpgate.StateNeedsAuth}) // no double count down

	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mcpgate_upstream_requests_total", map[string]string{"server": "docs", "method": "tools/call", "outcome": "ok"}, 1},
		{"mcpgate_upstream_requests_total", map[string]string{"server": "docs", "method": "tools/list", "outcome": "http"}, 1},
		{"mcpgate_upstream_requests_total", map[string]string{"server": "docs", "method": "other", "outcome": "other"}, 1},
		{"mcpgate_upstream_request_duration_seconds", map[string]string{"server": "docs"}, 3},
		{"mcpgate_token_refreshes_total", map[string]string{"tenant": "acme", "server": "docs", "outcome": "ok"}, 1},
		{"mcpgate_token_refreshes_total", map[string]string{"tenant": "acme", "server": "docs", "outcome": "invalid_grant"}, 1},
		{"mcpgate_token_refreshes_total", map[string]string{"tenant": "acme", "server": "docs", "outcome": "failed"}, 1},
		{"mcpgate_upstream_streams_active", map[string]string{"server": "docs"}, 1},
		{"mcpgate_upstream_sessions_active", map[string]string{"server": "docs"}, 1},
		{"mcpgate_upstream_sessions_active", map[string]string{"server": "search"}, 0},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	s.Close() // the manager closed
	fams = scrape(t, m.Handler())
	if got := value(t, fams, "mcpgate_upstream_sessions_active", map[string]string{"server": "docs"}); got != 0 {
		t.Errorf("sessions after Close = %v, want 0", got)
	}
}

func TestMetricsInboundRequestsAndStreams(t *testing.T) {
	m := newTestMetrics()
	started, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		close(started)
		<-release
	})
	srv := httptest.NewServer(m.Wrap("mcp", mux))
	defer srv.Close()

	for _, path := range []string{"/ok", "/ok", "/missing"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	resp, err := srv.Client().Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first event arrives while the stream is open: the wrapper flushes.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "data: first" {
		t.Fatalf("first event: %q, %v", line, err)
	}
	<-started
	fams := scrape(t, m.Handler())
	if got := value(t, fams, "mcpgate_http_streams_active", map[string]string{"handler": "mcp"}); got != 1 {
		t.Errorf("streams while open = %v, want 1", got)
	}
	if got := value(t, fams, "mcpgate_http_requests_in_flight", map[string]string{"handler": "mcp"}); got != 1 {
		t.Errorf("in flight while the stream is open = %v, want 1", got)
	}
	close(release)
	io.Copy(io.Discard, resp.Body)

	waitFor(t, func() bool {
		f := scrape(t, m.Handler())
		return value(t, f, "mcpgate_http_streams_active", map[string]string{"handler": "mcp"}) == 0
	})
	fams = scrape(t, m.Handler())
	if got := value(t, fams, "mcpgate_http_requests_total", map[string]string{"handler": "mcp", "code": "200"}); got != 3 {
		t.Errorf("200s = %v, want 3 (two plain, one stream)", got)
	}
	if got := value(t, fams, "mcpgate_http_requests_total", map[string]string{"handler": "mcp", "code": "404"}); got != 1 {
		t.Errorf("404s = %v, want 1", got)
	}
	if got := value(t, fams, "mcpgate_http_request_duration_seconds", map[string]string{"handler": "mcp"}); got != 3 {
		t.Errorf("latency samples = %v, want 3: the stream is not a latency", got)
	}
}

func TestMetricsNilIsSafe(t *testing.T) {
	var m *ops.Metrics
	m.CallEnded(context.Background(), "docs", "t", time.Second, nil, nil)
	m.RequestLogged(manager.RequestLogEntry{})
	m.Refreshed("", "", "")
	m.EventStream("docs", true)
	m.Sessions().StateChanged(manager.Status{ID: "docs", ConnectionID: 1})
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if m.Wrap("x", h) == nil {
		t.Fatal("Wrap on nil metrics dropped the handler")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
