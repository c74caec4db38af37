package github

import (
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// tracingTransport makes each HTTP request to GitHub a CLIENT span of the
// global tracer provider, which is OpenTelemetry's no-op until the server
// installs one (internal/telemetry). It sits below authTransport and reads
// neither headers nor query strings: the token travels in a header, and
// the archive's redirect URL carries a temporary one in its query, so the
// span's url.full is the URL without its query.
type tracingTransport struct{ base http.RoundTripper }

func (t tracingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tracer := otel.GetTracerProvider().Tracer("github.com/flowyprompt/flowyprompt/github")
	ctx, span := tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.HTTPRequestMethodKey.String(r.Method),
			semconv.URLFull(queryless(r.URL)),
			semconv.ServerAddress(r.URL.Hostname()),
		))
	defer span.End()
	if span.IsRecording() {
		r = r.WithContext(ctx)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String("request_failed"))
		span.SetStatus(codes.Error, "request failed")
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
	return resp, nil
}

// queryless is u without its query, fragment and user info.
func queryless(u *url.URL) string {
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return c.String()
}
