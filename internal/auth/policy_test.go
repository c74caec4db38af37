package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

var sources = []string{"ops", "team", "examples"}

func TestParsePolicyRefuses(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string // in the error, besides the file's name
	}{
		{"not JSON", `{"claim": "groups",`, []string{"(document)", "line 1, column 19"}},
		{"syntax on line 3", "{\n\"claim\": \"groups\",\n\"read\": [}\n", []string{"line 3"}},
		{"a list", `[]`, []string{"(document)", "not a JSON object"}},
		{"no claim", `{"read": []}`, []string{"/claim", "missing"}},
		{"empty claim", `{"claim": " "}`, []string{"/claim", "non-empty string"}},
		{"claim not a string", `{"claim": ["groups"]}`, []string{"/claim"}},
		{"unknown member", `{"claim": "groups", "reed": []}`, []string{"/reed", `unknown member "reed"`}},
		{"rules not a list", `{"claim": "groups", "read": {"match": "*"}}`, []string{"/read", "a list of rules"}},
		{"unknown source", `{"claim": "groups", "read": [{"match": "*", "sources": ["team"]}, {"match": "sre", "sources": ["ops", "opz"]}]}`,
			[]string{"/read/1/sources/1", `unknown source "opz"`, "ops, team, examples"}},
		{"unknown write source", `{"claim": "groups", "write": [{"match": "a", "sources": ["default"]}]}`, []string{"/write/0/sources/0", `"default"`}},
		{"no match", `{"claim": "groups", "read": [{"sources": ["team"]}]}`, []string{"/read/0/match", "missing"}},
		{"empty match", `{"claim": "groups", "read": [{"match": "", "sources": ["team"]}]}`, []string{"/read/0/match"}},
		{"no sources", `{"claim": "groups", "read": [{"match": "*"}]}`, []string{"/read/0/sources", "missing"}},
		{"empty sources", `{"claim": "groups", "read": [{"match": "*", "sources": []}]}`, []string{"/read/0/sources", "non-empty"}},
		{"unknown rule member", `{"claim": "groups", "read": [{"match": "*", "sources": ["team"], "mode": "x"}]}`, []string{"/read/0/mode"}},
		{"a label in a write rule", `{"claim": "groups", "write": [{"match": "a", "sources": ["team"], "label": "staging"}]}`,
			[]string{"/write/0/label", "a write rule names no label"}},
		{"a label that is no label's name", `{"claim": "groups", "read": [{"match": "a", "sources": ["team"], "label": "Stag ing"}]}`,
			[]string{"/read/0/label", "want a label's name"}},
		{"too large", `{"claim": "groups", "x": "` + strings.Repeat("a", 1<<20) + `"}`, []string{"more than"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := auth.ParsePolicy("/etc/fp/policy.json", []byte(tc.data), sources)
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			for _, w := range append(tc.want, "policy file /etc/fp/policy.json") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPolicyMatches(t *testing.T) {
	p, err := auth.ParsePolicy("p.json", []byte(`{
		"claim": "groups",
		"read":  [ {"match": "sre", "sources": ["ops", "team"]}, {"match": "*", "sources": ["team"]},
		           {"match": "ada@example.com", "sources": ["examples"]} ],
		"write": [ {"match": "prompt-authors", "sources": ["team"]} ]
	}`), sources)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		m         *auth.Member
		reads     []string
		writeTeam bool
	}{
		{"nobody", nil, nil, false},
		{"any member", &auth.Member{Subject: "u"}, []string{"team"}, false},
		{"sre", &auth.Member{Subject: "u", Groups: []string{"dev", "sre"}}, []string{"ops", "team"}, false},
		{"author", &auth.Member{Subject: "u", Groups: []string{"prompt-authors"}}, []string{"team"}, true},
		{"a value of another claim", &auth.Member{Subject: "sre", Email: "sre"}, []string{"team"}, false},
		{"every rule", &auth.Member{Subject: "u", Groups: []string{"ada@example.com", "sre", "prompt-authors"}}, []string{"examples", "ops", "team"}, true},
		{"case matters", &auth.Member{Subject: "u", Groups: []string{"SRE"}}, []string{"team"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.reads, p.Reads(tc.m), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Reads (-want +got):\n%s", d)
			}
			if got := p.Writes(tc.m, "team"); got != tc.writeTeam {
				t.Errorf("Writes(team) = %v, want %v", got, tc.writeTeam)
			}
			if p.Writes(tc.m, "ops") {
				t.Error("Writes(ops) = true; no rule names it")
			}
		})
	}
}

// TestPolicyLabel: a member is served the label of the first read rule
// that matches them and names one; none when no such rule matches.
func TestPolicyLabel(t *testing.T) {
	p, err := auth.ParsePolicy("p.json", []byte(`{
		"claim": "groups",
		"read":  [ {"match": "sre", "sources": ["ops"]},
		           {"match": "beta", "sources": ["team"], "label": "staging"},
		           {"match": "*", "sources": ["team"], "label": "production"},
		           {"match": "sre", "sources": ["team"], "label": "canary"} ]
	}`), sources)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		m    *auth.Member
		want string
	}{
		{"nobody", nil, ""},
		{"a beta tester: the first rule with a label", &auth.Member{Subject: "u", Groups: []string{"beta"}}, "staging"},
		{"anyone else: the catch-all's", &auth.Member{Subject: "u", Groups: []string{"sre"}}, "production"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Label(tc.m); got != tc.want {
				t.Errorf("Label = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClaimValues: a string claim is one value, a list its strings.
func TestClaimValues(t *testing.T) {
	tests := []struct {
		raw  string
		want []string
	}{
		{`"sre"`, []string{"sre"}},
		{`["sre", "dev"]`, []string{"sre", "dev"}},
		{`["sre", 3, {"a": 1}, "dev"]`, []string{"sre", "dev"}},
		{`[]`, []string{}},
		{`42`, nil},
		{``, nil},
		{`{"sre": true}`, nil},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, auth.ClaimValues([]byte(tc.raw))); d != "" {
			t.Errorf("ClaimValues(%s) (-want +got):\n%s", tc.raw, d)
		}
	}
}

// TestVerifyReadsTheClaim: the claim the policy names reaches the member,
// whatever it is, and a change of claim applies to the next token.
func TestVerifyReadsTheClaim(t *testing.T) {
	key := newKey(t)
	srv := issuer(t, key, func(self string) string { return self })
	iss := srv.URL + "/realms/team"
	claim := "groups"
	v, err := auth.New(auth.Options{Issuer: iss, Audience: "https://p.example.com/mcp", Claim: func() string { return claim }})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	ready(t, v)
	tok := sign(t, key, map[string]any{"iss": iss, "sub": "u1", "aud": "https://p.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix(),
		"email": "u1@example.com", "groups": []string{"sre", "dev"}, "role": "admin"})
	tests := []struct {
		claim string
		want  []string
	}{
		{"groups", []string{"sre", "dev"}},
		{"role", []string{"admin"}},
		{"sub", []string{"u1"}},
		{"email", []string{"u1@example.com"}},
		{"absent", nil},
	}
	for _, tc := range tests {
		claim = tc.claim
		m, err := v.Verify(t.Context(), tok)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, m.Groups); d != "" {
			t.Errorf("claim %s: Groups (-want +got):\n%s", tc.claim, d)
		}
	}
}

// records is a slog handler that hands each record to a channel.
type records chan slog.Record

func (records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	r <- rec
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// TestPolicyFileReloads: the file is read again on SIGHUP and when it
// changes; a bad version is refused, logged, and the previous policy kept.
func TestPolicyFileReloads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	write := func(s string) {
		t.Helper()
		// Written aside and renamed into place, as editors and deployments do.
		tmp := filepath.Join(dir, ".policy.tmp")
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(src string) string {
		return `{"claim": "groups", "read": [{"match": "*", "sources": ["` + src + `"]}]}`
	}
	write(policy("team"))
	if _, err := auth.LoadPolicyFile(filepath.Join(dir, "missing.json"), sources, nil, nil); err == nil || !strings.Contains(err.Error(), "--auth-policy") {
		t.Errorf("a missing file: %v, want an error naming --auth-policy", err)
	}
	logs := make(records, 16)
	f, err := auth.LoadPolicyFile(path, sources, []string{"staging"}, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	reads := func(p *auth.Policy) []string { return p.Reads(&auth.Member{Subject: "u"}) }
	if d := cmp.Diff([]string{"team"}, reads(f.Policy())); d != "" {
		t.Fatalf("first policy (-want +got):\n%s", d)
	}
	changed := make(chan *auth.Policy, 4)
	hup := make(chan os.Signal, 1)
	if err := f.Watch(t.Context(), hup, func(p *auth.Policy) { changed <- p }); err != nil {
		t.Fatal(err)
	}
	next := func(what string) *auth.Policy {
		t.Helper()
		select {
		case p := <-changed:
			return p
		case <-time.After(10 * time.Second):
			t.Fatalf("no reload after %s", what)
		}
		return nil
	}

	write(policy("ops"))
	if d := cmp.Diff([]string{"ops"}, reads(next("a change of the file"))); d != "" {
		t.Errorf("after the change (-want +got):\n%s", d)
	}

	// A bad version is logged and refused: an unknown source, or a label
	// the sources do not name, as at start.
	for _, bad := range []struct{ file, why string }{
		{`{"claim": "groups", "read": [{"match": "*", "sources": ["nope"]}]}`, `unknown source "nope"`},
		{`{"claim": "groups", "read": [{"match": "*", "sources": ["team"], "label": "prod"}]}`, `unknown label "prod": the labels are staging`},
	} {
		write(bad.file)
		// One change may be heard more than once: the refusal of this
		// version is the one that says why.
		for refused := false; !refused; {
			select {
			case rec := <-logs:
				if rec.Level != slog.LevelError {
					continue
				}
				if !strings.Contains(rec.Message, "previous policy stays") {
					t.Errorf("log %q", rec.Message)
				}
				rec.Attrs(func(a slog.Attr) bool {
					refused = refused || a.Key == "err" && strings.Contains(a.Value.String(), bad.why)
					return true
				})
			case <-time.After(10 * time.Second):
				t.Fatalf("no refusal saying %s", bad.why)
			}
		}
		if d := cmp.Diff([]string{"ops"}, reads(f.Policy())); d != "" {
			t.Errorf("after a bad version (-want +got):\n%s", d)
		}
	}

	// SIGHUP reads it again: the fixed version, whether or not its change
	// was seen first.
	if err := os.WriteFile(path, []byte(policy("examples")), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- syscall.SIGHUP
	if d := cmp.Diff([]string{"examples"}, reads(next("SIGHUP"))); d != "" {
		t.Errorf("after SIGHUP (-want +got):\n%s", d)
	}
}

func newKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
