//go:build !desktop

package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// ErrorTypeTool is error.type for a tools/call answered with a result
// whose isError is true, as the MCP conventions name it.
const ErrorTypeTool = "tool_error"

// buckets are the bucket boundaries, in seconds, the MCP conventions
// advise for both histograms.
var buckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// propagator reads a request's _meta trace context.
var propagator = propagation.TraceContext{}

// serverKind is built once: an option is an interface value, and boxing
// it allocates.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// observer turns each request into a SERVER span and a duration sample.
type observer struct {
	tracer  trace.Tracer
	tracing bool
	op      mcpconv.ServerOperationDuration
	session mcpconv.ServerSessionDuration

	// sets caches the attribute set of each kind of sample (opKey), so
	// that recording one allocates nothing.
	sets  sync.Map
	nsets atomic.Int64
}

var _ mcp.Observer = (*observer)(nil)

func newObserver(tracer trace.Tracer, meter metric.Meter, tracing bool) (*observer, error) {
	op, err := mcpconv.NewServerOperationDuration(meter, metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		return nil, fmt.Errorf("operation duration histogram: %w", err)
	}
	sd, err := mcpconv.NewServerSessionDuration(meter, metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		return nil, fmt.Errorf("session duration histogram: %w", err)
	}
	return &observer{tracer: tracer, tracing: tracing, op: op, session: sd}, nil
}

// SpanName is a request's span name: "{method} {target}" for a prompt or
// a tool, else the method alone. A resource URI is no target here: the
// conventions keep span names low in cardinality, and a URI is only an
// attribute.
func SpanName(info *mcp.RequestInfo) string {
	if info.Target == "" || (info.Method != mcp.MethodPromptsGet && info.Method != mcp.MethodToolsCall) {
		return info.Method
	}
	return info.Method + " " + info.Target
}

// endUser is the enduser.id of a request m asked: the subject its
// access token names, as the audit line's member field does, so that a
// span and its line are found by the same value. The subject alone, not
// qualified by the issuer: a server trusts one issuer (--auth-issuer),
// within which a subject names one member for good. Never the email: a
// trace goes to backends a team may share with vendors, and the subject
// is the identifier the issuer meant for other systems to keep; the audit
// log, which stays with the operator, has the email. The span carries no
// enduser.id for a request without a member (stdio, the static token).
// Metrics never carry it: one series per member would grow without bound.
func endUser(m *auth.Member) string { return m.Subject }

// targetKey is the attribute that names a request's target, if any.
func targetKey(method string) attribute.Key {
	switch method {
	case mcp.MethodPromptsGet:
		return semconv.GenAIPromptNameKey
	case mcp.MethodToolsCall:
		return semconv.GenAIToolNameKey
	case mcp.MethodResourcesRead:
		return semconv.McpResourceURIKey
	}
	return ""
}

// StartRequest implements mcp.Observer.
func (o *observer) StartRequest(ctx context.Context, info *mcp.RequestInfo) (context.Context, func(mcp.Outcome)) {
	start := time.Now()
	var span trace.Span
	if o.tracing {
		if info.TraceParent != "" {
			carrier := propagation.MapCarrier{"traceparent": info.TraceParent}
			if info.TraceState != "" {
				carrier["tracestate"] = info.TraceState
			}
			ctx = propagator.Extract(ctx, carrier)
		}
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, semconv.McpMethodNameKey.String(info.Method))
		if k := targetKey(info.Method); k != "" && info.Target != "" {
			attrs = append(attrs, k.String(info.Target))
		}
		if info.Method == mcp.MethodToolsCall {
			attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
		}
		if info.ID != "" && info.ID != "null" {
			attrs = append(attrs, semconv.JSONRPCRequestIDKey.String(info.ID))
		}
		if info.ProtocolVersion != "" {
			attrs = append(attrs, semconv.McpProtocolVersionKey.String(info.ProtocolVersion))
		}
		if info.SessionID != "" {
			// The digest logs name the session by, never the id: a
			// 2025-era id is what a client sends to act in its session,
			// and a trace backend is read by more people than the server.
			attrs = append(attrs, semconv.McpSessionIDKey.String(logid.Digest(info.SessionID)))
		}
		if info.Transport != "" {
			attrs = append(attrs, semconv.NetworkTransportKey.String(info.Transport))
		}
		if m := auth.MemberOf(ctx); m != nil {
			attrs = append(attrs, semconv.EnduserID(endUser(m)))
		}
		ctx, span = o.tracer.Start(ctx, SpanName(info), serverKind, trace.WithAttributes(attrs...))
	}
	return ctx, func(out mcp.Outcome) {
		errType, code := "", ""
		switch {
		case out.Code != 0:
			code = strconv.FormatInt(out.Code, 10)
			errType = code
		case out.ToolError:
			errType = ErrorTypeTool
		}
		if span != nil {
			if errType != "" {
				span.SetAttributes(semconv.ErrorTypeKey.String(errType))
				if code != "" {
					span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(code))
				}
				// The symbolic code, not the message: a message may quote
				// what the client sent.
				desc := errType
				if f := fault.As(out.Err); f != nil {
					desc = f.Code
				}
				span.SetStatus(codes.Error, desc)
			}
			span.End()
		}
		o.recordOperation(ctx, info, errType, code, time.Since(start))
	}
}

// opKey is what a sample of mcp.server.operation.duration is told apart
// by: the request's method, its prompt or tool name when it counts, its
// error, its revision and its transport.
type opKey struct{ method, target, errType, code, version, transport string }

// maxSets bounds the cache of attribute sets. Its keys are few (names of
// templates and tools that exist, error codes, revisions), but a library
// renamed often could add new ones forever; past the bound a set is
// built for each sample instead.
const maxSets = 4096

// recordOperation adds one sample to mcp.server.operation.duration. A
// prompt or tool name is an attribute only when the request succeeded or
// failed as a tool: then it names one that exists, so the series stay as
// few as the library's templates and tools; an unknown name a client
// made up never becomes a series. Resource URIs never do.
func (o *observer) recordOperation(ctx context.Context, info *mcp.RequestInfo, errType, code string, d time.Duration) {
	k := opKey{method: info.Method, errType: errType, code: code, version: info.ProtocolVersion, transport: info.Transport}
	if code == "" && (info.Method == mcp.MethodPromptsGet || info.Method == mcp.MethodToolsCall) {
		k.target = info.Target
	}
	if set, ok := o.sets.Load(k); ok {
		o.op.RecordSet(ctx, d.Seconds(), set.(attribute.Set))
		return
	}
	set := o.opSet(k)
	if o.nsets.Load() < maxSets {
		if _, loaded := o.sets.LoadOrStore(k, set); !loaded {
			o.nsets.Add(1)
		}
	}
	o.op.RecordSet(ctx, d.Seconds(), set)
}

func (o *observer) opSet(k opKey) attribute.Set {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, semconv.McpMethodNameKey.String(k.method))
	if k.target != "" {
		switch k.method {
		case mcp.MethodPromptsGet:
			attrs = append(attrs, o.op.AttrGenAIPromptName(k.target))
		case mcp.MethodToolsCall:
			attrs = append(attrs, o.op.AttrGenAIToolName(k.target))
		}
	}
	if k.errType != "" {
		attrs = append(attrs, o.op.AttrErrorType(mcpconv.ErrorTypeAttr(k.errType)))
	}
	if k.code != "" {
		attrs = append(attrs, o.op.AttrRPCResponseStatusCode(k.code))
	}
	if k.version != "" {
		attrs = append(attrs, o.op.AttrProtocolVersion(k.version))
	}
	if k.transport != "" {
		attrs = append(attrs, o.op.AttrNetworkTransport(mcpconv.NetworkTransportAttr(k.transport)))
	}
	return attribute.NewSet(attrs...)
}

// SessionEnded implements mcp.Observer.
func (o *observer) SessionEnded(si mcp.SessionInfo) {
	attrs := make([]attribute.KeyValue, 0, 2)
	if si.ProtocolVersion != "" {
		attrs = append(attrs, o.session.AttrProtocolVersion(si.ProtocolVersion))
	}
	if si.Transport != "" {
		attrs = append(attrs, o.session.AttrNetworkTransport(mcpconv.NetworkTransportAttr(si.Transport)))
	}
	o.session.Record(context.Background(), si.Duration.Seconds(), attrs...)
}
