package ops

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"
)

// collector is an OTLP/HTTP receiver on loopback: it decodes each export
// with the official generated messages (an ExportTraceServiceRequest has
// the wire form of TracesData) and answers what answer says.
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	exports  []*tracepb.TracesData
	answer   func(n int, w http.ResponseWriter) // n counts from 1
	t        *testing.T
}

func newCollector(t *testing.T, tls bool, answer func(n int, w http.ResponseWriter)) *collector {
	t.Helper()
	c := &collector{answer: answer, t: t}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("gzip body: %v", err)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var td tracepb.TracesData
		if err := proto.Unmarshal(raw, &td); err != nil {
			t.Errorf("the body is no OTLP export: %v", err)
		}
		c.mu.Lock()
		c.requests = append(c.requests, r)
		c.exports = append(c.exports, &td)
		n := len(c.requests)
		c.mu.Unlock()
		if c.answer != nil {
			c.answer(n, w)
		}
	})
	if tls {
		c.Server = httptest.NewUnstartedServer(h)
	} else {
		c.Server = httptest.NewServer(h)
	}
	t.Cleanup(c.Server.Close)
	return c
}

func (c *collector) seen() ([]*http.Request, []*tracepb.TracesData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*http.Request(nil), c.requests...), append([]*tracepb.TracesData(nil), c.exports...)
}

// env makes a getenv of the given variables.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func exporterFor(t *testing.T, vars map[string]string) *otlpExporter {
	t.Helper()
	e, err := otlpFromEnv(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

var (
	traceA  = trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	traceB  = trace.TraceID{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	spanOne = trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}
	spanTwo = trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}
	parent  = trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}
	linked  = trace.SpanID{7, 7, 7, 7, 7, 7, 7, 7}
)

// TestOTLPSpansAsTheOfficialMessagesDecode: every field a span carries
// reaches the collector where OTLP puts it, read back with the generated
// messages; in particular the status codes, whose numbers differ between
// OpenTelemetry Go and OTLP, and the flags that say a parent or a link
// came from another process.
func TestOTLPSpansAsTheOfficialMessagesDecode(t *testing.T) {
	c := newCollector(t, false, nil)
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})

	start := time.Unix(1_700_000_000, 123)
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "mcpgate"))
	ts, err := trace.ParseTraceState("vendor=value")
	if err != nil {
		t.Fatal(err)
	}
	scope := instrumentation.Scope{Name: "github.com/mcpgate/mcpgate/serve/ops", Version: "v1", SchemaURL: "https://example.test/s", Attributes: attribute.NewSet(attribute.Bool("scoped", true))}
	server := tracetest.SpanStub{
		Name:        "tools/call search",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceA, SpanID: spanOne, TraceFlags: trace.FlagsSampled, TraceState: ts}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceA, SpanID: parent, TraceFlags: trace.FlagsSampled, Remote: true}),
		SpanKind:    trace.SpanKindServer,
		StartTime:   start,
		EndTime:     start.Add(time.Millisecond),
		Attributes: []attribute.KeyValue{
			attribute.String("mcp.method.name", "tools/call"),
			attribute.Int64("n", -3),
			attribute.Float64("f", 1.5),
			attribute.Bool("b", true),
			attribute.StringSlice("ss", []string{"x", "y"}),
			attribute.Int64Slice("is", []int64{1, 2}),
			attribute.BoolSlice("bs", []bool{false}),
			attribute.Float64Slice("fs", []float64{0.25}),
		},
		Events: []sdktrace.Event{{Name: "retry", Time: start.Add(time.Microsecond), Attributes: []attribute.KeyValue{attribute.Int("attempt", 2)}, DroppedAttributeCount: 1}},
		Links: []sdktrace.Link{{
			SpanContext:           trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceB, SpanID: linked, Remote: true}),
			Attributes:            []attribute.KeyValue{attribute.String("why", "transport")},
			DroppedAttributeCount: 2,
		}},
		Status:               sdktrace.Status{Code: codes.Error, Description: "upstream failed"},
		DroppedAttributes:    4,
		DroppedEvents:        5,
		DroppedLinks:         6,
		Resource:             res,
		InstrumentationScope: scope,
	}
	client := tracetest.SpanStub{
		Name:                 "tools/call",
		SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceA, SpanID: spanTwo}),
		Parent:               server.SpanContext,
		SpanKind:             trace.SpanKindClient,
		StartTime:            start,
		EndTime:              start.Add(2 * time.Millisecond),
		Status:               sdktrace.Status{Code: codes.Ok},
		Resource:             res,
		InstrumentationScope: instrumentation.Scope{Name: "other"},
	}
	if err := e.ExportSpans(context.Background(), tracetest.SpanStubs{server, client}.Snapshots()); err != nil {
		t.Fatal(err)
	}

	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	integer := func(n int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
	}
	boolean := func(b bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
	}
	double := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	array := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	nano := func(t time.Time) uint64 { return uint64(t.UnixNano()) }
	want := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("mcpgate"))}},
		SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope:     &commonpb.InstrumentationScope{Name: scope.Name, Version: "v1", Attributes: []*commonpb.KeyValue{kv("scoped", boolean(true))}},
			SchemaUrl: "https://example.test/s",
			Spans: []*tracepb.Span{{
				TraceId:           traceA[:],
				SpanId:            spanOne[:],
				TraceState:        "vendor=value",
				ParentSpanId:      parent[:],
				Flags:             0x01 | 0x100 | 0x200, // sampled; the parent is known to be remote
				Name:              "tools/call search",
				Kind:              tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: nano(start),
				EndTimeUnixNano:   nano(start.Add(time.Millisecond)),
				Attributes: []*commonpb.KeyValue{
					kv("mcp.method.name", str("tools/call")),
					kv("n", integer(-3)),
					kv("f", double(1.5)),
					kv("b", boolean(true)),
					kv("ss", array(str("x"), str("y"))),
					kv("is", array(integer(1), integer(2))),
					kv("bs", array(boolean(false))),
					kv("fs", array(double(0.25))),
				},
				DroppedAttributesCount: 4,
				Events: []*tracepb.Span_Event{{
					TimeUnixNano: nano(start.Add(time.Microsecond)), Name: "retry",
					Attributes: []*commonpb.KeyValue{kv("attempt", integer(2))}, DroppedAttributesCount: 1,
				}},
				DroppedEventsCount: 5,
				Links: []*tracepb.Span_Link{{
					TraceId: traceB[:], SpanId: linked[:], Flags: 0x100 | 0x200,
					Attributes: []*commonpb.KeyValue{kv("why", str("transport"))}, DroppedAttributesCount: 2,
				}},
				DroppedLinksCount: 6,
				Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream failed"},
			}},
		}, {
			Scope: &commonpb.InstrumentationScope{Name: "other"},
			Spans: []*tracepb.Span{{
				TraceId:           traceA[:],
				SpanId:            spanTwo[:],
				ParentSpanId:      spanOne[:],
				Flags:             0x100, // not sampled; the parent is local
				Name:              "tools/call",
				Kind:              tracepb.Span_SPAN_KIND_CLIENT,
				StartTimeUnixNano: nano(start),
				EndTimeUnixNano:   nano(start.Add(2 * time.Millisecond)),
				Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
			}},
		}},
	}}}
	reqs, got := c.seen()
	if len(got) != 1 {
		t.Fatalf("%d exports, want 1", len(got))
	}
	if diff := cmp.Diff(want, got[0], protocmp.Transform()); diff != "" {
		t.Errorf("the collector read (-want +got):\n%s", diff)
	}
	if r := reqs[0]; r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("request %s %s %q, want POST /v1/traces application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
}

// TestOTLPNewerAttributeKinds: byte strings, nested lists, maps and the
// empty value have AnyValue forms of their own.
func TestOTLPNewerAttributeKinds(t *testing.T) {
	got := otlpKeyValues([]attribute.KeyValue{
		attribute.ByteSlice("raw", []byte{0, 1}),
		attribute.Slice("mixed", attribute.StringValue("a"), attribute.IntValue(1)),
		attribute.Map("m", attribute.String("k", "v")),
		{Key: "empty"},
	})
	want := []*commonpb.KeyValue{
		{Key: "raw", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}}},
		{Key: "mixed", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
			{Value: &commonpb.AnyValue_StringValue{StringValue: "a"}},
			{Value: &commonpb.AnyValue_IntValue{IntValue: 1}},
		}}}}},
		{Key: "m", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}},
		}}}}},
		{Key: "empty", Value: &commonpb.AnyValue{}},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func oneSpan() []sdktrace.ReadOnlySpan {
	return tracetest.SpanStubs{{
		Name:        "GET /mcp",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceA, SpanID: spanOne}),
		StartTime:   time.Unix(1, 0),
		EndTime:     time.Unix(2, 0),
	}}.Snapshots()
}

// TestOTLPSettingsFromEnvironment: where spans go, and the headers,
// timeout and compression, as the OTLP exporter specification reads the
// variables; a value that cannot be honoured is an error naming the
// variable and never showing a header's value.
func TestOTLPSettingsFromEnvironment(t *testing.T) {
	const secret = "Bearer s3cr3t-value"
	for _, c := range []struct {
		name    string
		vars    map[string]string
		url     string
		headers http.Header
		timeout time.Duration
		gzip    bool
		err     string // part of the error; "" for none
	}{
		{name: "base", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, url: "http://127.0.0.1:4318/v1/traces"},
		{name: "base with slash", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}, url: "http://127.0.0.1:4318/v1/traces"},
		{name: "base with a path", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.test/otlp/"}, url: "https://collector.test/otlp/v1/traces"},
		{name: "traces endpoint as it is", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b.test/custom"}, url: "http://b.test/custom"},
		{name: "traces endpoint without a path", vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b.test"}, url: "http://b.test/"},
		{name: "no scheme", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"},
		{name: "another scheme", vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://b.test/x"}, err: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be"},
		{
			name:    "headers, percent-decoded",
			vars:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cr3t-value, x-tenant = acme ,"},
			url:     "http://a.test/v1/traces",
			headers: http.Header{"Authorization": {secret}, "X-Tenant": {"acme"}},
		},
		{
			name:    "traces headers win",
			vars:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"},
			url:     "http://a.test/v1/traces",
			headers: http.Header{"B": {"2"}},
		},
		{name: "a header without =", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,Bearer s3cr3t-value"}, err: "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value"},
		{name: "a header badly encoded", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%zzs3cr3t-value"}, err: "OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of authorization is not"},
		{name: "a header value with a newline", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%0As3cr3t-value"}, err: "the value of authorization is not"},
		{name: "timeout", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "250"}, url: "http://a.test/v1/traces", timeout: 250 * time.Millisecond},
		{name: "timeout not a number", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, err: "OTEL_EXPORTER_OTLP_TIMEOUT must be a number of milliseconds"},
		{name: "gzip", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, url: "http://a.test/v1/traces", gzip: true},
		{name: "none", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, url: "http://a.test/v1/traces"},
		{name: "zstd", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: `OTEL_EXPORTER_OTLP_COMPRESSION="zstd"`},
		{name: "a client certificate without its key", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent.pem"}, err: "go together"},
		{name: "roots that are not there", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.test", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem"}, err: "OTEL_EXPORTER_OTLP_CERTIFICATE:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := otlpFromEnv(env(c.vars))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("the error shows a header's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			if e.url.String() != c.url {
				t.Errorf("url %s, want %s", e.url, c.url)
			}
			if c.headers == nil {
				c.headers = http.Header{}
			}
			if e.headers == nil {
				e.headers = http.Header{}
			}
			if diff := cmp.Diff(c.headers, e.headers); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if c.timeout == 0 {
				c.timeout = otlpDefaultTimeout
			}
			if e.timeout != c.timeout || e.gzip != c.gzip {
				t.Errorf("timeout %v gzip %v, want %v %v", e.timeout, e.gzip, c.timeout, c.gzip)
			}
		})
	}
}

// TestOTLPHeadersAndGzipReachTheCollector: the configured headers go with
// every export, and a gzip body is one the collector can read.
func TestOTLPHeadersAndGzipReachTheCollector(t *testing.T) {
	c := newCollector(t, false, nil)
	e := exporterFor(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    c.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":     "authorization=Bearer%20abc",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	})
	if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
		t.Fatal(err)
	}
	reqs, exports := c.seen()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer abc" {
		t.Errorf("Authorization %q", got)
	}
	if got := reqs[0].Header.Get("Content-Encoding"); got != "gzip" {
		t.Errorf("Content-Encoding %q", got)
	}
	if spans := exports[0].GetResourceSpans()[0].GetScopeSpans()[0].GetSpans(); len(spans) != 1 || spans[0].GetName() != "GET /mcp" {
		t.Errorf("the collector read %v", spans)
	}
}

// TestOTLPRetriesWhatTheCollectorAsksFor: 429, 502, 503 and 504 are tried
// again (at the collector's Retry-After when it gives one), anything else
// is an error at once, and the timeout bounds the whole export.
func TestOTLPRetriesWhatTheCollectorAsksFor(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		c := newCollector(t, false, func(n int, w http.ResponseWriter) {
			if n == 1 {
				if code == http.StatusServiceUnavailable {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(code)
			}
		})
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})
		e.backoff = time.Millisecond
		if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
			t.Errorf("%d then 200: %v", code, err)
		}
		if reqs, _ := c.seen(); len(reqs) != 2 {
			t.Errorf("%d then 200: %d requests, want 2", code, len(reqs))
		}
	}

	c := newCollector(t, false, func(n int, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "token\x1b[31m expired")
	})
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL + "/?api_key=s3cr3t", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=s3cr3t"})
	err := e.ExportSpans(context.Background(), oneSpan())
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "expired") {
		t.Errorf("401: err = %v, want the status and the collector's text", err)
	}
	if err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "\x1b")) {
		t.Errorf("the error shows a credential or a control character: %q", err)
	}
	if reqs, _ := c.seen(); len(reqs) != 1 {
		t.Errorf("401: %d requests, want 1", len(reqs))
	}

	// Always 503, asked to come back in half a minute; the export's
	// timeout ends it long before.
	c = newCollector(t, false, func(n int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	e = exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "200"})
	start := time.Now()
	if err := e.ExportSpans(context.Background(), oneSpan()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("always 503: err = %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("the export waited %v past its timeout", waited)
	}
}

// TestOTLPRetriesWhenNoAnswerCame: a connection closed without an
// answer (a collector restarting) is tried again.
func TestOTLPRetriesWhenNoAnswerCame(t *testing.T) {
	c := newCollector(t, false, func(n int, w http.ResponseWriter) {
		if n == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		}
	})
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})
	e.backoff = time.Millisecond
	if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
		t.Errorf("the export failed after one lost answer: %v", err)
	}
	if reqs, _ := c.seen(); len(reqs) != 2 {
		t.Errorf("%d requests, want 2", len(reqs))
	}
}

// TestOTLPPartialSuccessIsReported: a collector that accepts an export
// but drops spans says so in the answer; that is told, not an error.
func TestOTLPPartialSuccessIsReported(t *testing.T) {
	var inner []byte
	inner = protowire.AppendTag(inner, 1, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 3)
	inner = protowire.AppendTag(inner, 2, protowire.BytesType)
	inner = protowire.AppendString(inner, "spans too old")
	var answer []byte
	answer = protowire.AppendTag(answer, 9, protowire.VarintType) // a field from a newer collector
	answer = protowire.AppendVarint(answer, 1)
	answer = protowire.AppendTag(answer, 1, protowire.BytesType)
	answer = protowire.AppendBytes(answer, inner)
	c := newCollector(t, false, func(n int, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(answer)
	})
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})
	var reported []error
	e.report = func(err error) { reported = append(reported, err) }
	if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
		t.Fatal(err)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "dropped 3 spans: spans too old") {
		t.Errorf("reported %v", reported)
	}
	for _, bad := range [][]byte{
		{0x0a, 0x05, 0x08}, // the partial success cut short
		{0x0a, 0x06, 0x08, 0x03, 0x12, 0x05, 'a', 'b'}, // its message cut short, after a count
	} {
		if n, msg := partialSuccess(bad); n != 0 || msg != "" {
			t.Errorf("the malformed answer %x read as %d %q", bad, n, msg)
		}
	}
}

// TestOTLPDoesNotFollowRedirects: the headers (credentials) go to the
// configured collector only.
func TestOTLPDoesNotFollowRedirects(t *testing.T) {
	elsewhere := newCollector(t, false, nil)
	c := newCollector(t, false, func(n int, w http.ResponseWriter) {
		w.Header().Set("Location", elsewhere.URL+"/v1/traces")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=abc"})
	if err := e.ExportSpans(context.Background(), oneSpan()); err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("err = %v, want the 307", err)
	}
	if reqs, _ := elsewhere.seen(); len(reqs) != 0 {
		t.Errorf("the redirect was followed")
	}
}

// TestOTLPOverTLS: the collector's certificate is checked against the
// roots OTEL_EXPORTER_OTLP_CERTIFICATE names, and a client certificate is
// shown when one is set.
func TestOTLPOverTLS(t *testing.T) {
	dir := t.TempDir()
	c := newCollector(t, true, nil)
	c.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	c.StartTLS()
	roots := filepath.Join(dir, "roots.pem")
	writePEM(t, roots, "CERTIFICATE", c.Certificate().Raw)
	certFile, keyFile := clientCert(t, dir)

	// The system's roots do not know the collector.
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "2000"})
	e.backoff = 50 * time.Millisecond
	if err := e.ExportSpans(context.Background(), oneSpan()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the roots: err = %v", err)
	}

	e = exporterFor(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           c.URL,
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        roots,
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": certFile,
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":         keyFile,
	})
	if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
		t.Fatal(err)
	}
	reqs, _ := c.seen()
	if len(reqs) != 1 || reqs[0].TLS == nil || len(reqs[0].TLS.PeerCertificates) != 1 || reqs[0].TLS.PeerCertificates[0].Subject.CommonName != "mcpgate-test-client" {
		t.Errorf("the collector did not see the client certificate")
	}
}

// TestOTLPStopsAtShutdown: nothing is sent after Shutdown.
func TestOTLPStopsAtShutdown(t *testing.T) {
	c := newCollector(t, false, nil)
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), oneSpan()); err != errExporterStopped {
		t.Errorf("err = %v", err)
	}
	if reqs, _ := c.seen(); len(reqs) != 0 {
		t.Errorf("%d requests after Shutdown", len(reqs))
	}
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientCert writes a self-signed client certificate and its key.
func clientCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mcpgate-test-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOTLPWithAnotherDefaultTransport: a program embedding mcpgate may
// have replaced http.DefaultTransport (with an instrumented one, say);
// the exporter keeps a transport of its own and still works.
func TestOTLPWithAnotherDefaultTransport(t *testing.T) {
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	http.DefaultTransport = roundTripperFunc(saved.RoundTrip)
	c := newCollector(t, false, nil)
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL})
	if err := e.ExportSpans(context.Background(), oneSpan()); err != nil {
		t.Fatal(err)
	}
}
