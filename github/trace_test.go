package github

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// TestSpansHoldNoSecret: every request to GitHub, the archive download
// and its redirect included, is a CLIENT span, and no span's name or
// attribute holds the token, the archive's temporary token or any query
// string.
//
// Not parallel: it installs the global tracer provider, which would record
// the other tests' spans.
func TestSpansHoldNoSecret(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(ctxT(t))
	})

	h := newHarness(t, fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 20}))
	if _, err := h.source().Load(ctxT(t)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(h.fake.DownloadRequests()) == 0 {
		t.Fatal("the cold start downloaded no archive: the redirect was not exercised")
	}
	spans := rec.Ended()
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	secrets := append([]string{testToken, "?", "token="}, h.fake.ArchiveTokens()...)
	var download bool
	for _, s := range spans {
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %q is %v, want a client span", s.Name(), s.SpanKind())
		}
		text := s.Name()
		for _, kv := range s.Attributes() {
			text += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.String())
			if kv.Key == "url.full" && strings.Contains(kv.Value.AsString(), "_codeload") {
				download = true
			}
		}
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("span holds %q: %s", secret, text)
			}
		}
	}
	if !download {
		t.Errorf("no span for the archive download among %d spans", len(spans))
	}
}
