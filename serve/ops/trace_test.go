package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const (
	hostTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	hostSpan  = "00f067aa0ba902b7"
	canary    = "canary-secret-8f41c2d9"
)

// upstreamServer is a remote MCP server over Streamable HTTP on loopback
// that keeps the _meta of each tools/call it receives.
type upstreamServer struct {
	URL   string
	mu    sync.Mutex
	metas []map[string]any
}

func startUpstream(t *testing.T) *upstreamServer {
	t.Helper()
	u := &upstreamServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		u.metas = append(u.metas, req.Params.Meta)
		u.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

func (u *upstreamServer) lastMeta(t *testing.T) map[string]any {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.metas) == 0 {
		t.Fatal("the upstream server saw no call")
	}
	return u.metas[len(u.metas)-1]
}

// connect opens a client session to url whose requests pass mw.
func connect(t *testing.T, url string, mw ...mcp.Middleware) *mcp.ClientSession {
	t.Helper()
	return connectAs(t, url, "", mw...)
}

// connectAs is connect for a host of tenant (see asTenant).
func connectAs(t *testing.T, url, tenant string, mw ...mcp.Middleware) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	c.AddSendingMiddleware(mw...)
	hc := &http.Client{Transport: tenantHeader{tenant}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestTraceContextReachesTheUpstreamServer runs host → gateway front →
// remote server over loopback HTTP: the host's trace context in _meta is
// the parent of the front's span, which is the parent of the upstream
// call's span, whose context is what the remote server finds in _meta.
func TestTraceContextReachesTheUpstreamServer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr, err := ops.NewTracing(&ops.TracingOptions{SpanProcessor: rec, Who: who})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())

	up := startUpstream(t)
	upstream := connect(t, up.URL, tr.ClientMiddleware("docs"))

	front := mcp.NewServer(&mcp.Implementation{Name: "mcpgate", Version: "test"}, nil)
	front.AddReceivingMiddleware(tr.ServerMiddleware())
	front.AddTool(&mcp.Tool{Name: "mcp", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Tool string }
		json.Unmarshal(req.Params.Arguments, &in)
		// What the manager does with its hook: a fresh _meta of its own.
		return upstream.CallTool(ctx, &mcp.CallToolParams{Name: in.Tool, Arguments: map[string]any{"q": canary}, Meta: mcp.Meta{"io.mcpgate/own": "kept"}})
	})
	metrics := newTestMetrics() // the whole chain of a front, streams and all
	fsrv := httptest.NewServer(tr.Wrap("/mcp", metrics.Wrap("mcp", asTenant(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return front }, nil)))))
	t.Cleanup(fsrv.Close) // after the host's session has ended
	host := connectAs(t, fsrv.URL, "acme")

	hostParent := "00-" + hostTrace + "-" + hostSpan + "-01"
	res, err := host.CallTool(context.Background(), &mcp.CallToolParams{
		Name:      "mcp",
		Arguments: map[string]any{"tool": "echo", "token": canary},
		Meta:      mcp.Meta{"traceparent": hostParent, "tracestate": "vendor=abc", "baggage": "team=blue"},
	})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}

	if n := value(t, scrape(t, metrics.Handler()), "mcpgate_http_requests_total", map[string]string{"handler": "mcp", "code": "200"}); n == 0 {
		t.Error("the front's requests were not counted")
	}

	meta := up.lastMeta(t)
	got, _ := meta[ops.MetaTraceparent].(string)
	parts := strings.Split(got, "-")
	if len(parts) != 4 || parts[0] != "00" || parts[1] != hostTrace || parts[3] != "01" {
		t.Fatalf("traceparent at the remote server = %q, want the host's trace %s, sampled", got, hostTrace)
	}
	if meta[ops.MetaTracestate] != "vendor=abc" || meta[ops.MetaBaggage] != "team=blue" {
		t.Errorf("tracestate, baggage at the remote server = %v, %v", meta[ops.MetaTracestate], meta[ops.MetaBaggage])
	}
	if meta["io.mcpgate/own"] != "kept" {
		t.Errorf("the manager's own _meta key was lost: %v", meta)
	}

	spans := rec.Ended()
	inbound := findSpan(t, spans, "tools/call mcp", trace.SpanKindServer)
	outbound := findSpan(t, spans, "tools/call echo", trace.SpanKindClient)
	if p := inbound.Parent(); p.TraceID().String() != hostTrace || p.SpanID().String() != hostSpan || !p.IsRemote() {
		t.Errorf("inbound span's parent = %s/%s, want the host's span from _meta", p.TraceID(), p.SpanID())
	}
	if outbound.Parent().SpanID() != inbound.SpanContext().SpanID() {
		t.Errorf("upstream span's parent = %s, want the inbound span %s", outbound.Parent().SpanID(), inbound.SpanContext().SpanID())
	}
	if parts[2] != outbound.SpanContext().SpanID().String() {
		t.Errorf("traceparent's parent-id = %s, want the upstream span's ID %s", parts[2], outbound.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range outbound.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "mcpgate.server": "docs"} {
		if attrs[k] != want {
			t.Errorf("upstream span %s = %q, want %q", k, attrs[k], want)
		}
	}
	if attr(inbound, "mcpgate.tenant") != "acme" || attr(outbound, "mcpgate.tenant") != "acme" {
		t.Errorf("tenant on the spans = %q, %q, want acme (from inbound authentication)", attr(inbound, "mcpgate.tenant"), attr(outbound, "mcpgate.tenant"))
	}
	// The HTTP request's span, which had no parent of its own, is linked.
	linked := false
	for _, s := range spans {
		if l := inbound.Links(); s.Name() == "POST /mcp" && len(l) == 1 && l[0].SpanContext.SpanID() == s.SpanContext().SpanID() {
			linked = true
		}
	}
	if !linked {
		t.Errorf("inbound span links = %+v, want the HTTP request's span", inbound.Links())
	}
	assertNoCanary(t, spans)
}

func TestToolErrorMarksTheUpstreamSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr, err := ops.NewTracing(&ops.TracingOptions{SpanProcessor: rec})
	if err != nil {
		t.Fatal(err)
	}
	up := startUpstream(t)
	cs := connect(t, up.URL, tr.ClientMiddleware("docs"))
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Fatal("calling an unknown tool succeeded")
	}
	span := findSpan(t, rec.Ended(), "tools/call fail", trace.SpanKindClient)
	if typ := attr(span, "error.type"); typ != "tool_error" || span.Status().Description != "tool_error" {
		t.Errorf("isError result: error.type %q, status %+v", typ, span.Status())
	}
	span = findSpan(t, rec.Ended(), "tools/call no-such-tool", trace.SpanKindClient)
	if typ := attr(span, "error.type"); typ == "" || strings.Contains(span.Status().Description, "no-such-tool") {
		t.Errorf("JSON-RPC error: error.type %q, status %+v (never the error's text)", typ, span.Status())
	}
}

// TestHeadersParentWhenMetaHasNone: a host that sends its trace context
// as HTTP headers only gets the request span as the parent of what the
// gateway sends on.
func TestHeadersParentWhenMetaHasNone(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr, err := ops.NewTracing(&ops.TracingOptions{SpanProcessor: rec})
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	h := tr.Wrap("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw := tr.ServerMiddleware()(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			sent = map[string]any{}
			ops.InjectMeta(ctx, sent)
			return &mcp.CallToolResult{}, nil
		})
		mw(r.Context(), "tools/call", &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: &mcp.CallToolParamsRaw{Name: "mcp"}})
		w.WriteHeader(http.StatusAccepted)
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("traceparent", "00-"+hostTrace+"-"+hostSpan+"-01")
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := rec.Ended()
	httpSpan := findSpan(t, spans, "POST /mcp", trace.SpanKindServer)
	mcpSpan := findSpan(t, spans, "tools/call mcp", trace.SpanKindServer)
	if httpSpan.Parent().SpanID().String() != hostSpan {
		t.Errorf("HTTP span's parent = %s, want the header's %s", httpSpan.Parent().SpanID(), hostSpan)
	}
	if mcpSpan.Parent().SpanID() != httpSpan.SpanContext().SpanID() {
		t.Errorf("MCP span's parent = %s, want the HTTP span", mcpSpan.Parent().SpanID())
	}
	if attr(httpSpan, "http.response.status_code") != "202" {
		t.Errorf("HTTP span status attribute = %q", attr(httpSpan, "http.response.status_code"))
	}
	want := fmt.Sprintf("00-%s-%s-01", hostTrace, mcpSpan.SpanContext().SpanID())
	if sent[ops.MetaTraceparent] != want {
		t.Errorf("traceparent sent on = %v, want %s", sent[ops.MetaTraceparent], want)
	}
}

// TestMetaWinsOverHeadersAndLinksThem: when both carry a context, _meta
// describes the MCP request, the HTTP span is linked.
func TestMetaWinsOverHeadersAndLinksThem(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr, _ := ops.NewTracing(&ops.TracingOptions{SpanProcessor: rec})
	h := tr.Wrap("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw := tr.ServerMiddleware()(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
			return &mcp.CallToolResult{}, nil
		})
		mw(r.Context(), "tools/list", &mcp.ServerRequest[*mcp.ListToolsParams]{Params: &mcp.ListToolsParams{Meta: mcp.Meta{"traceparent": "00-" + hostTrace + "-" + hostSpan + "-01"}}})
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := rec.Ended()
	httpSpan := findSpan(t, spans, "POST /mcp", trace.SpanKindServer)
	mcpSpan := findSpan(t, spans, "tools/list", trace.SpanKindServer)
	if mcpSpan.Parent().TraceID().String() != hostTrace {
		t.Errorf("MCP span's trace = %s, want _meta's", mcpSpan.Parent().TraceID())
	}
	if l := mcpSpan.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != httpSpan.SpanContext().SpanID() {
		t.Errorf("MCP span links = %+v, want the HTTP span", l)
	}
}

// TestNoExporterPassesTheContextOn: with no exporter configured nothing is
// recorded, and the host's trace context reaches the remote server as it
// came, so the trace is not broken by the gateway.
func TestNoExporterPassesTheContextOn(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := ops.NewTracing(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Recording() {
		t.Fatal("tracing records without an exporter")
	}
	parent := "00-" + hostTrace + "-" + hostSpan + "-01"
	var sent mcp.Meta
	client := tr.ClientMiddleware("docs")(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		sent = req.GetParams().GetMeta()
		return &mcp.CallToolResult{}, nil
	})
	server := tr.ServerMiddleware()(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		return client(ctx, "tools/call", &mcp.ClientRequest[*mcp.CallToolParams]{Params: &mcp.CallToolParams{Name: "echo"}})
	})
	if _, err := server(context.Background(), "tools/call", &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: &mcp.CallToolParamsRaw{Name: "mcp", Meta: mcp.Meta{"traceparent": parent}}}); err != nil {
		t.Fatal(err)
	}
	if sent[ops.MetaTraceparent] != parent {
		t.Errorf("traceparent sent on = %v, want %s unchanged", sent[ops.MetaTraceparent], parent)
	}

	// And with no context at all, nothing is added.
	sent = nil
	client(context.Background(), "tools/call", &mcp.ClientRequest[*mcp.CallToolParams]{Params: &mcp.CallToolParams{Name: "echo"}})
	if _, ok := sent[ops.MetaTraceparent]; ok {
		t.Errorf("a traceparent was made up: %v", sent)
	}
}

// TestMalformedContextIsIgnored: garbage in _meta neither breaks the
// request nor becomes a parent, and bad baggage is not passed on.
func TestMalformedContextIsIgnored(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr, _ := ops.NewTracing(&ops.TracingOptions{SpanProcessor: rec})
	var sent map[string]any
	mw := tr.ServerMiddleware()(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		sent = map[string]any{}
		ops.InjectMeta(ctx, sent)
		return &mcp.CallToolResult{}, nil
	})
	meta := mcp.Meta{"traceparent": "not-a-traceparent " + canary, "baggage": "=;;" + canary, "tracestate": 42}
	if _, err := mw(context.Background(), "tools/call", &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: &mcp.CallToolParamsRaw{Name: "mcp", Meta: meta}}); err != nil {
		t.Fatal(err)
	}
	span := findSpan(t, rec.Ended(), "tools/call mcp", trace.SpanKindServer)
	if span.Parent().IsValid() {
		t.Errorf("a malformed traceparent became the parent: %v", span.Parent())
	}
	if _, ok := sent[ops.MetaBaggage]; ok {
		t.Errorf("malformed baggage passed on: %v", sent)
	}
	assertNoCanary(t, rec.Ended())
}

// TestOTLPExporterFromEnvironment: the standard endpoint variable turns on
// OTLP over HTTP; spans reach a collector (here on loopback) on Shutdown.
func TestOTLPExporterFromEnvironment(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var spans []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData // the wire form of ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &td); err != nil {
			t.Errorf("not an OTLP export: %v", err)
		}
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		for _, rs := range td.GetResourceSpans() {
			var service []string
			for _, kv := range rs.GetResource().GetAttributes() {
				if strings.HasPrefix(kv.GetKey(), "service.") {
					service = append(service, kv.GetKey()+"="+kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					spans = append(spans, fmt.Sprintf("%s %s %v", sp.GetName(), sp.GetKind(), service))
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	tr, err := ops.NewTracing(&ops.TracingOptions{ServiceVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Recording() {
		t.Fatal("not recording with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	tr.Wrap("/mcp", http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "POST /v1/traces application/x-protobuf" {
		t.Errorf("collector saw %q, want one OTLP/HTTP export", got)
	}
	if want := "POST /mcp SPAN_KIND_SERVER [service.name=mcpgate service.version=test]"; len(spans) != 1 || spans[0] != want {
		t.Errorf("collector read the spans %q, want %q", spans, want)
	}
}

func TestExporterSettingsMcpgateCannotHonourAreErrors(t *testing.T) {
	for _, c := range []struct {
		env       map[string]string
		err       bool
		recording bool
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, err: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
	} {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
			t.Setenv(k, c.env[k])
		}
		tr, err := ops.NewTracing(nil)
		if (err != nil) != c.err {
			t.Errorf("%v: err = %v, want error %v", c.env, err, c.err)
			continue
		}
		if err == nil {
			if tr.Recording() != c.recording {
				t.Errorf("%v: recording = %v", c.env, tr.Recording())
			}
			tr.Shutdown(context.Background())
		}
	}
}

// tenantHeader names the host's tenant to asTenant.
type tenantHeader struct{ tenant string }

func (h tenantHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.tenant != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Test-Tenant", h.tenant)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func findSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name()+"/"+s.SpanKind().String())
	}
	t.Fatalf("no %s span %q among %v", kind, name, names)
	return nil
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// assertNoCanary fails if the canary is in any span's name, attributes,
// status, events or links.
func assertNoCanary(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		text := fmt.Sprint(s.Name(), s.Attributes(), s.Status(), s.Events(), s.Links(), s.Resource().Attributes())
		if strings.Contains(text, canary) {
			t.Errorf("span %q carries the canary: %s", s.Name(), text)
		}
	}
}
