package ops

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpExporter sends spans to a collector as OTLP over HTTP with protobuf
// bodies (the OTLP specification's http/protobuf), configured by the
// standard OTEL_EXPORTER_OTLP_* variables.
//
// It is ours rather than otlptracehttp because that exporter brings gRPC,
// grpc-gateway and their generated packages into every mcpgate process,
// which speaks no gRPC: a tenth of each process's start went to loading
// and initialising them. The messages are the official generated ones
// (go.opentelemetry.io/proto/otlp), so the wire format is theirs.
type otlpExporter struct {
	url     *url.URL
	headers http.Header
	gzip    bool
	timeout time.Duration // the whole export, retries included
	client  *http.Client
	// backoff is the first wait before a retry; it doubles up to
	// maxBackoff. A collector's Retry-After wins over it.
	backoff, maxBackoff time.Duration
	// report receives what a collector says it dropped of an export it
	// accepted (a partial success): not an export error, but worth telling.
	report  func(error)
	stopped atomic.Bool
}

const (
	otlpDefaultTimeout = 10 * time.Second
	otlpMaxResponse    = 64 << 10
)

var errExporterStopped = errors.New("the OTLP exporter is shut down")

// otlpFromEnv makes the exporter the OTEL_EXPORTER_OTLP_* variables
// describe; the caller has checked that one of the endpoints is set. Each
// setting may be given for traces alone (OTEL_EXPORTER_OTLP_TRACES_…),
// which wins over the general one. Errors name the variable, never its
// value: headers carry credentials and endpoints may.
func otlpFromEnv(getenv func(string) string) (*otlpExporter, error) {
	setting := func(name string) (string, string) {
		specific := "OTEL_EXPORTER_OTLP_TRACES_" + name
		if v := strings.TrimSpace(getenv(specific)); v != "" {
			return v, specific
		}
		general := "OTEL_EXPORTER_OTLP_" + name
		return strings.TrimSpace(getenv(general)), general
	}
	u, err := otlpURL(getenv)
	if err != nil {
		return nil, err
	}
	e := &otlpExporter{
		url:        u,
		timeout:    otlpDefaultTimeout,
		backoff:    5 * time.Second,
		maxBackoff: 30 * time.Second,
		report:     otel.Handle,
	}
	if v, name := setting("HEADERS"); v != "" {
		if e.headers, err = otlpHeaders(v, name); err != nil {
			return nil, err
		}
	}
	if v, name := setting("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s must be a number of milliseconds above 0", name)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := setting("COMPRESSION"); v {
	case "gzip":
		e.gzip = true
	case "", "none":
	default:
		return nil, fmt.Errorf("%s=%q: mcpgate compresses with gzip or none", name, mcpgate.Sanitize(v, 40))
	}
	tlsConfig, err := otlpTLS(setting)
	if err != nil {
		return nil, err
	}
	// A transport of its own: the collector's TLS settings are not the
	// process's, and a program embedding mcpgate may have replaced
	// http.DefaultTransport with something that is not an *http.Transport.
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tlsConfig,
	}
	e.client = &http.Client{
		Transport: transport,
		// A collector that moves answers with its new address; following
		// it would send the headers (credentials) wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return e, nil
}

// otlpURL is where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is
// (its root when it has no path), else v1/traces under the path of
// OTEL_EXPORTER_OTLP_ENDPOINT.
func otlpURL(getenv func(string) string) (*url.URL, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	raw := strings.TrimSpace(getenv(name))
	specific := raw != ""
	if !specific {
		name = "OTEL_EXPORTER_OTLP_ENDPOINT"
		raw = strings.TrimSpace(getenv(name))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s must be an http:// or https:// URL", name)
	}
	u.Fragment, u.RawFragment = "", ""
	if specific {
		if u.Path == "" {
			u.Path, u.RawPath = "/", ""
		}
		return u, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	if u.RawPath != "" {
		u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/v1/traces"
	}
	return u, nil
}

// otlpHeaders reads key=value pairs separated by commas, the values
// percent-encoded (the OTLP exporter specification's format, that of W3C
// Baggage).
func otlpHeaders(v, name string) (http.Header, error) {
	h := http.Header{}
	for i, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		key, value, ok := strings.Cut(entry, "=")
		key = strings.TrimSpace(key)
		if !ok || !httpguts.ValidHeaderFieldName(key) {
			return nil, fmt.Errorf("%s: entry %d is not key=value with a header name for key", name, i+1)
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil || !httpguts.ValidHeaderFieldValue(decoded) {
			return nil, fmt.Errorf("%s: the value of %s is not a percent-encoded header value", name, key)
		}
		h.Add(key, decoded)
	}
	return h, nil
}

// otlpTLS is the TLS the CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY
// settings ask for: the collector's certificate checked against the given
// roots instead of the system's, and a client certificate to show it.
func otlpTLS(setting func(string) (string, string)) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if file, name := setting("CERTIFICATE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", name, file)
		}
		cfg.RootCAs = pool
	}
	certFile, certName := setting("CLIENT_CERTIFICATE")
	keyFile, keyName := setting("CLIENT_KEY")
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return nil, fmt.Errorf("%s and %s go together: set both or neither", certName, keyName)
	default:
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			// tls says which file it could not use, never what a key holds.
			return nil, fmt.Errorf("%s and %s: %w", certName, keyName, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ExportSpans sends one batch, retrying what the collector asks to have
// again (429, 502, 503, 504, or no answer at all) until the timeout.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errExporterStopped
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: otlpResourceSpans(spans)})
	if err != nil {
		return fmt.Errorf("encoding spans: %w", err)
	}
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body) // a bytes.Buffer takes everything
		zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	wait := e.backoff
	for {
		after, err := e.send(ctx, body)
		var again retryable
		if err == nil || !errors.As(err, &again) {
			return err
		}
		next := wait/2 + rand.N(wait/2+1) // jitter, so replicas do not retry in step
		if after >= 0 {
			next = after
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, e.maxBackoff)
	}
}

// retryable is an export failure worth trying again.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// send makes one request. after is the collector's Retry-After, or -1.
func (e *otlpExporter) send(ctx context.Context, body []byte) (after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url.String(), bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "mcpgate OTLP exporter")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	where := e.url.Scheme + "://" + e.url.Host + e.url.Path // never the query or user: they may hold credentials
	resp, err := e.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		err = fmt.Errorf("sending spans to %s: %w", where, err)
		// A certificate that does not verify will not verify next time.
		var cert *tls.CertificateVerificationError
		if ctx.Err() != nil || errors.As(err, &cert) {
			return -1, err
		}
		return -1, retryable{err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, otlpMaxResponse))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			if n, msg := partialSuccess(answer); n != 0 || msg != "" {
				e.report(fmt.Errorf("the collector at %s dropped %d spans: %s", where, n, mcpgate.Sanitize(msg, 200)))
			}
		}
		return -1, nil
	}
	err = fmt.Errorf("the collector at %s answered %s", where, resp.Status)
	if text := mcpgate.Sanitize(strings.TrimSpace(string(answer)), 200); text != "" && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		err = fmt.Errorf("%w: %s", err, text)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After")), retryable{err}
	}
	return -1, err
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), -1 when
// there is none to honour.
func retryAfter(v string) time.Duration {
	if v == "" {
		return -1
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// partialSuccess reads ExportTraceServiceResponse.partial_success
// (field 1: rejected_spans = 1, error_message = 2) from an answer. The
// message type lives in the collector package with the gRPC service, so
// its three fields are read here. A malformed answer reads as none.
func partialSuccess(b []byte) (rejected int64, msg string) {
	ok := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != 1 || typ != protowire.BytesType {
			return true
		}
		inner, _ := protowire.ConsumeBytes(v)
		return eachField(inner, func(num protowire.Number, typ protowire.Type, v []byte) bool {
			switch {
			case num == 1 && typ == protowire.VarintType:
				n, _ := protowire.ConsumeVarint(v)
				rejected = int64(n)
			case num == 2 && typ == protowire.BytesType:
				s, _ := protowire.ConsumeBytes(v)
				msg = string(s)
			}
			return true
		})
	})
	if !ok {
		return 0, ""
	}
	return rejected, msg
}

// eachField calls visit with each field of a protobuf message in turn,
// its value still encoded (and whole: ConsumeFieldValue has checked it),
// and says whether the message parsed and every visit returned true.
func eachField(b []byte, visit func(num protowire.Number, typ protowire.Type, value []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 || !visit(num, typ, b[n:n+m]) {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// Shutdown stops exporting; the batch processor has flushed before it
// calls this.
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return ctx.Err()
}

// otlpResourceSpans groups spans by resource, then by instrumentation
// scope, in the order they came.
func otlpResourceSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var out []*tracepb.ResourceSpans
	byRes := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		key := scopeKey{res: res.Equivalent(), scope: s.InstrumentationScope()}
		rs := byRes[key.res]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
			if res != nil {
				rs.Resource.Attributes = otlpKeyValues(res.Attributes())
				rs.SchemaUrl = res.SchemaURL()
			}
			byRes[key.res] = rs
			out = append(out, rs)
		}
		ss := byScope[key]
		if ss == nil {
			ss = &tracepb.ScopeSpans{
				Scope: &commonpb.InstrumentationScope{
					Name:       key.scope.Name,
					Version:    key.scope.Version,
					Attributes: otlpKeyValues(key.scope.Attributes.ToSlice()),
				},
				SchemaUrl: key.scope.SchemaURL,
			}
			byScope[key] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, otlpSpan(s))
	}
	return out
}

func otlpSpan(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	span := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  otlpFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   otlpKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             otlpKeyValues(s.Attributes()),
		DroppedAttributesCount: clampCount(s.DroppedAttributes()),
		DroppedEventsCount:     clampCount(s.DroppedEvents()),
		DroppedLinksCount:      clampCount(s.DroppedLinks()),
		Status:                 otlpStatus(s.Status()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		span.ParentSpanId = psid[:]
	}
	for _, ev := range s.Events() {
		span.Events = append(span.Events, &tracepb.Span_Event{
			TimeUnixNano:           unixNano(ev.Time),
			Name:                   ev.Name,
			Attributes:             otlpKeyValues(ev.Attributes),
			DroppedAttributesCount: clampCount(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		span.Links = append(span.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             otlpKeyValues(l.Attributes),
			DroppedAttributesCount: clampCount(l.DroppedAttributeCount),
			Flags:                  otlpFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return span
}

// otlpFlags carries the W3C trace flags in the low byte, and says whether
// the other context (the parent, or a link's) came from another process.
func otlpFlags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if other.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func otlpKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

// otlpStatus maps OpenTelemetry Go's codes, whose numbers differ from
// OTLP's (Go: Error 1, Ok 2; OTLP: Ok 1, Error 2).
func otlpStatus(st sdktrace.Status) *tracepb.Status {
	switch st.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_UNSET}
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(t.UnixNano(), 0))
}

func clampCount(n int) uint32 { return uint32(min(max(n, 0), 1<<32-1)) }

func otlpKeyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)}
	}
	return out
}

func otlpValue(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		av.Value = otlpArray(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
		})
	case attribute.INT64SLICE:
		av.Value = otlpArray(v.AsInt64Slice(), func(n int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
		})
	case attribute.FLOAT64SLICE:
		av.Value = otlpArray(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
		})
	case attribute.STRINGSLICE:
		av.Value = otlpArray(v.AsStringSlice(), func(s string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
		})
	case attribute.SLICE:
		av.Value = otlpArray(v.AsSlice(), otlpValue)
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: otlpKeyValues(v.AsMap())}}
	case attribute.EMPTY:
		// An empty value is a value: AnyValue with nothing set.
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return av
}

func otlpArray[T any](vs []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = one(v)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: arr}
}
