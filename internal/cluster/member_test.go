package cluster

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

// TestForwardCarriesTheMember: the member the forwarder's guard admitted
// reaches the holder's handler in the request's context, every field of
// it, and a request without a member reaches it without one. The token
// that named the member does not cross.
func TestForwardCarriesTheMember(t *testing.T) {
	type seen struct {
		Member        *auth.Member
		Authorization string
	}
	got := make(chan seen, 1)
	p := newFwdPair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{Member: auth.MemberOf(r.Context()), Authorization: r.Header.Get("Authorization")}
		w.WriteHeader(http.StatusNoContent)
	}), RouterOptions{})
	alice := &auth.Member{Issuer: "https://id.example.com/realms/team", Subject: "alice", Email: "alice@example.com",
		Scopes: []string{"openid", auth.ScopeRead, auth.ScopeWrite}}
	bob := &auth.Member{Issuer: "https://id.example.com/realms/team", Subject: "bob", Scopes: []string{auth.ScopeRead}}
	tests := []struct {
		name   string
		member *auth.Member
	}{
		{name: "alice", member: alice},
		{name: "bob, no email", member: bob},
		{name: "nobody"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The forwarding replica's guard, reduced to what it leaves on
			// the request: the member its token named.
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if tc.member != nil {
					r = r.WithContext(auth.WithMember(r.Context(), tc.member))
				}
				if !p.forwarder.Forward(w, r, sessionID, body) {
					http.Error(w, "unknown session", http.StatusNotFound)
				}
			}))
			defer hs.Close()
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer secret-token")
			resp, err := p.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, resp); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			s := <-got
			if diff := cmp.Diff(tc.member, s.Member); diff != "" {
				t.Errorf("the holder's member (-sent +seen):\n%s", diff)
			}
			if s.Authorization != "" {
				t.Errorf("the token crossed: Authorization %q", s.Authorization)
			}
		})
	}
}

// TestMemberOnWire: a member and its wire form are the same member both
// ways, every field of it (a field auth.Member gains fails this test
// until the wire carries it too), nil for nil; the JSON names no token.
func TestMemberOnWire(t *testing.T) {
	m := &auth.Member{}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch x := v.Field(i); {
		case x.Kind() == reflect.String:
			x.SetString("a " + f.Name)
		case x.Type() == reflect.TypeFor[[]string]():
			x.Set(reflect.ValueOf([]string{"one " + f.Name, "two"}))
		default:
			t.Fatalf("auth.Member.%s (%s): carry it in wireMember, and fill it here", f.Name, f.Type)
		}
	}
	if diff := cmp.Diff(m, memberOnWire(m).member()); diff != "" {
		t.Errorf("round trip (-member +again):\n%s", diff)
	}
	if memberOnWire(nil) != nil || (*wireMember)(nil).member() != nil {
		t.Error("nil is not nil on the wire")
	}
	b, _ := json.Marshal(memberOnWire(m))
	var keys map[string]any
	_ = json.Unmarshal(b, &keys)
	if diff := cmp.Diff([]string{"email", "groups", "iss", "scopes", "sub"}, slices.Sorted(maps.Keys(keys))); diff != "" {
		t.Errorf("wire member's fields (-want +got):\n%s", diff)
	}
}
