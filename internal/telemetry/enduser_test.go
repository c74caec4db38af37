//go:build !desktop

package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/otlptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestEndUser: a request a member asked carries enduser.id, the subject
// of their token, on its span, and nothing else of them (not the email,
// not the issuer); a request without a member carries none; the metrics
// never do. What the OTLP receiver holds after Shutdown, which flushes,
// is what was exported.
func TestEndUser(t *testing.T) {
	recv := otlptest.New()
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	tel, err := Setup(context.Background(), Options{
		Getenv: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := &auth.Member{Issuer: "https://id.example.com/realms/team", Subject: "f3c1a2b4-alice",
		Email: "alice@example.com", Scopes: []string{auth.ScopeRead}}
	requests := []struct {
		id     string
		member *auth.Member
		want   string // enduser.id; "" : absent
	}{
		{id: "member", member: alice, want: alice.Subject},
		{id: "nobody"},
	}
	for _, r := range requests {
		ctx := context.Background()
		if r.member != nil {
			ctx = auth.WithMember(ctx, r.member)
		}
		_, end := tel.Observer.StartRequest(ctx, &mcp.RequestInfo{Method: mcp.MethodPromptsGet, Target: "Commit_Message",
			ID: r.id, ProtocolVersion: "2025-11-25"})
		end(mcp.Outcome{})
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := map[string]otlptest.Span{}
	for _, s := range recv.Spans() {
		spans[s.Attrs["jsonrpc.request.id"]] = s
	}
	for _, r := range requests {
		s, ok := spans[r.id]
		if !ok {
			t.Fatalf("no span of request %s among %v", r.id, recv.Spans())
		}
		got, has := s.Attrs["enduser.id"]
		if r.want == "" && has {
			t.Errorf("request %s: enduser.id %q, want none", r.id, got)
		}
		if r.want != "" && got != r.want {
			t.Errorf("request %s: enduser.id %q, want %q", r.id, got, r.want)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, alice.Email) || strings.Contains(v, alice.Issuer) {
				t.Errorf("request %s: span attribute %s = %q names the member beyond the subject", r.id, k, v)
			}
		}
	}
	points := recv.Points()
	if len(points) == 0 {
		t.Fatal("no metrics exported")
	}
	for _, p := range points {
		if v, ok := p.Attrs["enduser.id"]; ok {
			t.Errorf("%s carries enduser.id %q: a series per member", p.Metric, v)
		}
	}
}
