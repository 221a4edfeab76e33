package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The _meta keys MCP 2026-07-28 reserves for OpenTelemetry trace context
// (basic/index, "OpenTelemetry trace context"): W3C Trace Context and W3C
// Baggage values, under these names exactly, without a prefix.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
	MetaBaggage     = "baggage"
)

// propagator reads and writes W3C Trace Context and Baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

const tracerName = "github.com/mcpgate/mcpgate/serve/ops"

// TracingOptions configure [NewTracing]; the struct is copied.
type TracingOptions struct {
	// SpanProcessor, when set, receives every span and no exporter is
	// made (tests pass a tracetest.SpanRecorder).
	SpanProcessor sdktrace.SpanProcessor
	// Exporter, when set, receives the spans in batches. When neither is
	// set, spans go to OTLP over HTTP if the standard environment names
	// an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; see [NewTracing]), else nowhere.
	Exporter sdktrace.SpanExporter
	// ServiceName and ServiceVersion describe the process in every span's
	// resource; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over
	// them. The default name is "mcpgate".
	ServiceName, ServiceVersion string
	// Who puts the tenant on MCP spans (mcpgate.tenant); nil leaves it out.
	Who Who
}

// Tracing makes the spans of inbound and upstream MCP requests and
// carries the W3C trace context between them: in from an inbound request's
// HTTP headers or its _meta, out in the _meta of each request to a remote
// server. Without an exporter nothing is recorded and nothing leaves the
// process, but a trace context that arrives is still passed on unchanged,
// so a host's trace reaches the remote servers through the gateway.
//
// Spans carry method, tool or prompt name, server and tenant IDs, protocol
// version and an error's type; never arguments, results, URIs, session IDs,
// error text or anything from headers. Methods on a nil *Tracing pass
// everything through.
type Tracing struct {
	sdk    *sdktrace.TracerProvider // nil when nothing records
	tracer trace.Tracer
	who    Who
}

// NewTracing sets up tracing. With no SpanProcessor and no Exporter it
// reads the standard OpenTelemetry environment: OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn exporting off; otherwise
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns
// on OTLP over HTTP (protobuf), configured by the rest of the OTEL_*
// variables (headers, timeout, compression, certificates). A protocol or
// exporter mcpgate does not ship (grpc, http/json, zipkin...) is an error
// rather than silence. OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// choose the sampler (default: parent-based, always on). The provider is
// not made global.
func NewTracing(opts *TracingOptions) (*Tracing, error) {
	var o TracingOptions
	if opts != nil {
		o = *opts
	}
	proc := o.SpanProcessor
	if proc == nil {
		exp := o.Exporter
		if exp == nil {
			var err error
			if exp, err = exporterFromEnv(os.Getenv); err != nil {
				return nil, err
			}
		}
		if exp != nil {
			proc = sdktrace.NewBatchSpanProcessor(exp)
		}
	}
	if proc == nil {
		return &Tracing{tracer: noop.NewTracerProvider().Tracer(tracerName), who: o.Who}, nil
	}
	name := o.ServiceName
	if name == "" {
		name = "mcpgate"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Detectors apply in order, later ones winning: the environment names
	// the service over the code.
	res, err := resource.New(context.Background(), resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if res == nil {
		return nil, fmt.Errorf("describing the tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc), sdktrace.WithResource(res))
	return &Tracing{sdk: tp, tracer: tp.Tracer(tracerName), who: o.Who}, nil
}

// exporterFromEnv makes the OTLP/HTTP exporter the environment asks for,
// or returns nil when it asks for none.
func exporterFromEnv(getenv func(string) string) (sdktrace.SpanExporter, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: mcpgate exports traces with otlp only (or none)", mcpgate.Sanitize(e, 40))
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if p := strings.TrimSpace(proto); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: mcpgate exports OTLP over HTTP only; use http/protobuf", mcpgate.Sanitize(p, 40))
	}
	exp, err := otlpFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("configuring the OTLP trace exporter: %w", err)
	}
	return exp, nil
}

// Recording reports whether spans are recorded and exported.
func (t *Tracing) Recording() bool { return t != nil && t.sdk != nil }

// TracerProvider is the provider behind the spans, for instrumenting other
// parts (a database driver) into the same traces.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if t == nil || t.sdk == nil {
		return noop.NewTracerProvider()
	}
	return t.sdk
}

// Shutdown exports what is still buffered and stops; ctx bounds the wait.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Wrap makes a span for each HTTP request next serves, named by its
// method and route (the front's name for the endpoint, such as "/mcp";
// never the path a caller sent), as the child of the trace context in the
// request's traceparent, tracestate and baggage headers when there is one.
// MCP requests inside then get spans of their own (see
// [Tracing.ServerMiddleware]).
func (t *Tracing) Wrap(route string, next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), checkedCarrier{propagation.HeaderCarrier(r.Header)})
		method := httpMethod(r.Method)
		ctx, span := t.tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", method),
			attribute.String("http.route", route),
		))
		defer span.End()
		rec := wrapWriter(w, nil)
		next.ServeHTTP(rec, r.WithContext(ctx))
		code := rec.status()
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		if code >= 500 {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(code)))
			span.SetStatus(codes.Error, strconv.Itoa(code))
		}
	})
}

func httpMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch:
		return m
	}
	return "_OTHER"
}

// ServerMiddleware makes a span for each MCP request the front receives,
// for mcp.Server.AddReceivingMiddleware. Its parent is the trace context
// in the request's _meta when it carries one (2026-07-28: what the host's
// own MCP span was), linked to the HTTP request's span; otherwise the
// HTTP request's span (see [Tracing.Wrap]). Requests to remote servers
// made while serving it are its children.
func (t *Tracing) ServerMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if t == nil {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			transport := trace.SpanContextFromContext(ctx)
			var opts []trace.SpanStartOption
			if meta := metaOf(req); meta != nil {
				ctx = ExtractMeta(ctx, meta)
				if sc := trace.SpanContextFromContext(ctx); transport.IsValid() && !sc.Equal(transport) {
					opts = append(opts, trace.WithLinks(trace.Link{SpanContext: transport}))
				}
			}
			name, attrs := describe(method, req)
			if tenant, _ := t.who.of(ctx); tenant != "" {
				attrs = append(attrs, attribute.String("mcpgate.tenant", tenant))
			}
			opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			ctx, span := t.tracer.Start(ctx, name, opts...)
			defer span.End()
			res, err := next(ctx, method, req)
			finish(span, res, err)
			return res, err
		}
	}
}

// ClientMiddleware makes a span for each MCP request sent to server, and
// puts the span's trace context (and the baggage in ctx) into the
// request's _meta as 2026-07-28 describes. It is for
// mcp.Client.AddSendingMiddleware on the client of server's sessions, and
// has the shape of the manager hook that installs it (see the package
// documentation). The request's _meta is copied, never changed in place:
// the manager may share it between the rounds of one call.
func (t *Tracing) ClientMiddleware(server string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if t == nil {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			name, attrs := describe(method, req)
			attrs = append(attrs, attribute.String("mcpgate.server", server),
				attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
			if tenant, _ := t.who.of(ctx); tenant != "" {
				attrs = append(attrs, attribute.String("mcpgate.tenant", tenant))
			}
			ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			defer span.End()
			if p := paramsOf(req); p != nil {
				meta := maps.Clone(p.GetMeta())
				if meta == nil {
					meta = map[string]any{}
				}
				InjectMeta(ctx, meta)
				if len(meta) > 0 {
					p.SetMeta(meta)
				}
			}
			res, err := next(ctx, method, req)
			finish(span, res, err)
			return res, err
		}
	}
}

// InjectMeta writes ctx's trace context into a request's _meta:
// traceparent for the current span when it has a valid one, tracestate and
// baggage when there are any. Keys it has nothing for are left alone.
func InjectMeta(ctx context.Context, meta map[string]any) {
	if meta == nil {
		return
	}
	propagator.Inject(ctx, metaCarrier(meta))
}

// ExtractMeta returns ctx carrying the remote trace context and baggage of
// a request's _meta. A missing or malformed traceparent leaves ctx's span
// context as it was; malformed baggage is ignored.
func ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, checkedCarrier{metaCarrier(meta)})
}

// metaCarrier is a _meta map as a propagation carrier: only string values
// count.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string { s, _ := c[key].(string); return s }
func (c metaCarrier) Set(key, value string) { c[key] = value }
func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// checkedCarrier hides baggage that does not parse: the propagator would
// hand the parse error, with the caller's text in it, to OpenTelemetry's
// global error handler, which logs it.
type checkedCarrier struct{ propagation.TextMapCarrier }

func (c checkedCarrier) Get(key string) string {
	v := c.TextMapCarrier.Get(key)
	if strings.EqualFold(key, MetaBaggage) && v != "" {
		if _, err := baggage.Parse(v); err != nil {
			return ""
		}
	}
	return v
}

// paramsOf returns a request's params, or nil when it has none.
func paramsOf(req mcp.Request) mcp.Params {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

func metaOf(req mcp.Request) map[string]any {
	if p := paramsOf(req); p != nil {
		return p.GetMeta()
	}
	return nil
}

// describe names a span as the OpenTelemetry MCP conventions say,
// "{mcp.method.name} {target}" with the tool's or prompt's name as the
// target, and gives its attributes. A resource URI is never the target nor
// an attribute: it may carry what its server keeps private.
func describe(method string, req mcp.Request) (string, []attribute.KeyValue) {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	var target string
	switch p := paramsOf(req).(type) {
	case *mcp.CallToolParams:
		target = p.Name
	case *mcp.CallToolParamsRaw:
		target = p.Name
	case *mcp.GetPromptParams:
		target = p.Name
	}
	target = strings.TrimSpace(mcpgate.Sanitize(target, 128))
	switch method {
	case "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"))
		if target != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", target))
		}
	case "prompts/get":
		if target != "" {
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
		}
	}
	if v, _ := metaOf(req)[mcp.MetaKeyProtocolVersion].(string); v != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", mcpgate.Sanitize(v, 32)))
	}
	if target == "" {
		return method, attrs
	}
	return method + " " + target, attrs
}

// finish records how a request ended: error.type (the JSON-RPC code for a
// JSON-RPC error, tool_error for a result with isError, else a category),
// never the error's text, which may hold the remote server's words.
func finish(span trace.Span, res mcp.Result, err error) {
	var typ string
	var rpc *jsonrpc.Error
	switch {
	case err == nil:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			typ = OutcomeToolError
		}
	case errors.As(err, &rpc):
		typ = strconv.FormatInt(rpc.Code, 10)
		span.SetAttributes(attribute.String("rpc.response.status_code", typ))
	case errors.Is(err, context.Canceled):
		typ = string(mcpgate.CategoryCancelled)
	case errors.Is(err, context.DeadlineExceeded):
		typ = string(mcpgate.CategoryTimeout)
	default:
		var me *mcpgate.Error
		if errors.As(err, &me) {
			typ = outcomeLabel(string(me.Category))
		} else {
			typ = "_OTHER"
		}
	}
	if typ != "" {
		span.SetAttributes(attribute.String("error.type", typ))
		span.SetStatus(codes.Error, typ)
	}
}
