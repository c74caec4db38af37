package app_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// Members of the tests: alice, alice again with another token (other
// scopes, another email), bob, and a subject alice of another issuer.
var (
	alice      = &auth.Member{Issuer: "https://id.example.com", Subject: "alice", Email: "alice@example.com", Scopes: []string{auth.ScopeRead}}
	aliceAgain = &auth.Member{Issuer: "https://id.example.com", Subject: "alice", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}}
	bob        = &auth.Member{Issuer: "https://id.example.com", Subject: "bob", Email: "bob@example.com", Scopes: []string{auth.ScopeRead}}
	otherAlice = &auth.Member{Issuer: "https://other.example.com", Subject: "alice", Scopes: []string{auth.ScopeRead}}
)

// requestAs sends a request as member asks it over HTTP (nil: a request
// without a member), and returns its response.
func requestAs(t *testing.T, c *mcptest.Client, member *auth.Member, id int, method string, params any) mcptest.Message {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	in, err := mcp.ParseInbound(b)
	if err != nil {
		t.Fatal(err)
	}
	from := context.Background()
	if member != nil {
		from = auth.WithMember(from, member)
	}
	c.S.DeliverInbound(from, in, nil)
	idRaw, _ := json.Marshal(id)
	return c.Response(t, idRaw)
}

// callAs calls a tool as member.
func callAs(t *testing.T, c *mcptest.Client, member *auth.Member, id int, name string, args any) toolResult {
	t.Helper()
	m := requestAs(t, c, member, id, mcp.MethodToolsCall, map[string]any{"name": name, "arguments": args})
	if m.Error != nil {
		t.Fatalf("%s: %s", name, m.Raw)
	}
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("%s: %.500s", name, m.Raw)
	}
	return res
}

// TestFlowHandleBoundToMember: a handle handed out to a member continues
// the flow for that member alone, whatever token they present; another
// member, the same subject of another issuer and a request without a
// member are refused, told why without being told whose it was. A handle
// handed out without a member is anyone's, as before members existed.
func TestFlowHandleBoundToMember(t *testing.T) {
	t.Parallel()
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	id := 0
	handleOf := func(t *testing.T, starter *auth.Member) string {
		t.Helper()
		id++
		res := callAs(t, c, starter, id, "flowyprompt_start_flow", map[string]any{"name": "post", "arguments": map[string]string{"topic": "caching"}})
		h, _ := res.StructuredContent["handle"].(string)
		if res.IsError || h == "" {
			t.Fatalf("start_flow: %v", res.StructuredContent)
		}
		return h
	}
	tests := []struct {
		name          string
		starter, next *auth.Member
		refused       string // in the why; "" : the flow goes on
	}{
		{name: "alice's, by alice", starter: alice, next: alice},
		{name: "alice's, by alice with another token", starter: alice, next: aliceAgain},
		{name: "alice's, by bob", starter: alice, next: bob, refused: "handed out to another member"},
		{name: "alice's, by alice of another issuer", starter: alice, next: otherAlice, refused: "handed out to another member"},
		{name: "alice's, without a member", starter: alice, refused: "carries no member's access token"},
		{name: "without a member, by alice", next: alice},
		{name: "without a member, without a member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := handleOf(t, tt.starter)
			id++
			res := callAs(t, c, tt.next, id, "flowyprompt_next_flow_step", map[string]any{"handle": h, "output": "an outline"})
			sc := res.StructuredContent
			if tt.refused == "" {
				if res.IsError || !strings.Contains(sc["prompt"].(string), "DRAFT <an outline>") {
					t.Fatalf("got %v, want the draft step", sc)
				}
				return
			}
			if !res.IsError || sc["code"] != "INVALID_ARGUMENT" {
				t.Fatalf("got %v, want an INVALID_ARGUMENT error", sc)
			}
			if why, _ := sc["why"].(string); !strings.Contains(why, tt.refused) {
				t.Errorf("why %q, want it to say %q", why, tt.refused)
			}
			if how, _ := sc["how"].(string); !strings.Contains(how, "signed in as the member who started it") {
				t.Errorf("how %q, want it to say who may continue", how)
			}
			for _, secret := range []string{"alice", "example.com"} {
				if strings.Contains(string(res.raw), secret) {
					t.Errorf("the refusal names %q: %s", secret, res.raw)
				}
			}
			// The handle still works for alice: a refusal spends nothing.
			id++
			if res := callAs(t, c, alice, id, "flowyprompt_next_flow_step", map[string]any{"handle": h, "output": "o"}); res.IsError {
				t.Errorf("alice after the refusal: %v", res.StructuredContent)
			}
		})
	}
}

// TestRequestStateBoundToMember: the requestState of an input-required
// answer to a member is taken back from that member alone; a retry by
// another member or without a member is refused with INVALID_PARAMS that
// does not say whose it was, and the same retry by the member goes on.
func TestRequestStateBoundToMember(t *testing.T) {
	t.Parallel()
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	accept := map[string]any{"variables": map[string]any{"action": "accept", "content": map[string]any{"topic": "caching"}}}
	params := func(retry map[string]any) map[string]any {
		p := map[string]any{"name": "flow:post", "arguments": map[string]string{}}
		maps.Copy(p, retry)
		return modern(withElicitation, p)
	}
	tests := []struct {
		name           string
		asker, retrier *auth.Member
		refused        string // in the error's why; "" : answered
	}{
		{name: "alice's, by alice", asker: alice, retrier: aliceAgain},
		{name: "alice's, by bob", asker: alice, retrier: bob, refused: "handed out to another member"},
		{name: "alice's, without a member", asker: alice, refused: "carries no member's access token"},
		{name: "without a member, by bob", retrier: bob},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ir := decodeInputRequired(t, requestAs(t, c, tt.asker, 100+10*i, mcp.MethodPromptsGet, params(nil)))
			retry := params(map[string]any{"inputResponses": accept, "requestState": ir.RequestState})
			m := requestAs(t, c, tt.retrier, 101+10*i, mcp.MethodPromptsGet, retry)
			if tt.refused == "" {
				if m.Error != nil || !strings.Contains(string(m.Result), "OUTLINE <caching>") {
					t.Fatalf("the retry: %s, want the outline", m.Raw)
				}
				return
			}
			if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Data.Why, tt.refused) {
				t.Fatalf("the retry: %s, want INVALID_PARAMS saying %q", m.Raw, tt.refused)
			}
			if strings.Contains(string(m.Raw), "alice") || strings.Contains(string(m.Raw), "example.com") {
				t.Errorf("the refusal names the member: %s", m.Raw)
			}
			m = requestAs(t, c, tt.asker, 102+10*i, mcp.MethodPromptsGet, retry)
			if m.Error != nil || !strings.Contains(string(m.Result), "OUTLINE <caching>") {
				t.Fatalf("the same retry by the asker: %s, want the outline", m.Raw)
			}
		})
	}
}
