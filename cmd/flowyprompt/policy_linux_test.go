//go:build linux

package main

// The access policy (--auth-policy) through the built binary: members of
// an authorization server see the sources their groups are given, in
// their lists and in /healthz, and a change of the policy file applies
// without a restart.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBinaryAccessPolicy: two members see different prompt lists and
// /healthz details; an anonymous /healthz shows no library; a change of
// the policy file shows the second member more.
func TestBinaryAccessPolicy(t *testing.T) {
	t.Parallel()
	is := newMemberIssuer(t)
	ops, team := t.TempDir(), t.TempDir()
	for dir, name := range map[string]string{ops: "Runbook", team: "Team_Note"} {
		body := `{"metadata":{"name":"` + name + `","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	writePolicy := func(anyone string) {
		t.Helper()
		p := `{"claim": "groups", "read": [{"match": "sre", "sources": ["ops", "team"]}, {"match": "*", "sources": [` + anyone + `]}]}`
		if err := os.WriteFile(policyFile, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(`"team"`)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + addr
	cmd := append([]string{"env", "-i"}, serverEnv(t, "FLOWYPROMPT_SOURCES=name=ops,dir="+ops+";name=team,dir="+team,
		"FLOWYPROMPT_AUTH_ISSUER="+is.srv.URL, "FLOWYPROMPT_AUTH_POLICY="+policyFile)...)
	p, err := startProcess(append(cmd, binary(t), "serve", "--transport", "http", "--addr", addr, "--public-url", public), addr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	s := &httpServer{process: p, addr: addr}
	// Tokens are checked once the issuer's metadata was read: wait for
	// the line saying so, which may have been written already.
	reached := s.expect("authorization server reached")
	if !strings.Contains(s.Output(), "authorization server reached") {
		s.await(t, reached, "the authorization server to be reached")
	}
	alice := is.token(t, public+"/mcp", "alice", "sre")
	bob := is.token(t, public+"/mcp", "bob", "dev")

	prompts := func(token string) []string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequest(http.MethodPost, public+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/list", "Authorization": "Bearer " + token} {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			s.fatalf(t, "prompts/list: %v", err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var answer struct {
			Result struct {
				Prompts []struct{ Name string } `json:"prompts"`
			} `json:"result"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil {
			s.fatalf(t, "prompts/list: %d %s", res.StatusCode, raw)
		}
		if !strings.Contains(string(raw), `"private"`) {
			t.Errorf("prompts/list is not marked private to its caller: %s", raw)
		}
		var names []string
		for _, p := range answer.Result.Prompts {
			names = append(names, p.Name)
		}
		return names
	}
	if got := strings.Join(prompts(alice), " "); got != "ops/Runbook team/Team_Note" {
		t.Errorf("alice's prompts: %s", got)
	}
	if got := strings.Join(prompts(bob), " "); got != "team/Team_Note" {
		t.Errorf("bob's prompts: %s", got)
	}
	for _, tc := range []struct {
		who, token string
		templates  float64
	}{{"alice", alice, 2}, {"bob", bob, 1}, {"anyone", "", 0}} {
		report := s.healthWith(t, tc.token)
		if report["templates"] != tc.templates {
			t.Errorf("/healthz for %s: %v templates, want %v", tc.who, report["templates"], tc.templates)
		}
		if tc.who != "alice" && strings.Contains(mustMarshal(t, report), "ops") {
			t.Errorf("/healthz for %s names ops: %v", tc.who, report)
		}
	}

	reloaded := s.expect("access policy reloaded")
	writePolicy(`"team", "ops"`)
	s.await(t, reloaded, "the policy to be reloaded")
	if got := strings.Join(prompts(bob), " "); got != "ops/Runbook team/Team_Note" {
		t.Errorf("bob's prompts after the policy changed: %s", got)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeRefusesABadPolicy: a policy without an issuer, or one that
// names a source or a label the server does not serve, stops serve before
// it starts, saying where and how to fix it.
func TestServeRefusesABadPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(`{"claim": "groups", "read": [{"match": "*", "sources": ["team"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	labelled := filepath.Join(dir, "labelled.json")
	if err := os.WriteFile(labelled, []byte(`{"claim": "groups", "read": [{"match": "*", "sources": ["examples"], "label": "staging"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		code int
		want []string
	}{
		{"no issuer", map[string]string{"FLOWYPROMPT_AUTH_POLICY": file}, 2, []string{"--auth-policy (FLOWYPROMPT_AUTH_POLICY) is set without --auth-issuer"}},
		{"unknown source", map[string]string{"FLOWYPROMPT_AUTH_POLICY": file, "FLOWYPROMPT_AUTH_ISSUER": "https://id.example.com"}, 1,
			[]string{"policy file " + file, "/read/0/sources/0", `unknown source "team"`, "examples", "how to fix"}},
		{"unknown label", map[string]string{"FLOWYPROMPT_AUTH_POLICY": labelled, "FLOWYPROMPT_AUTH_ISSUER": "https://id.example.com"}, 1,
			[]string{"policy file " + labelled, "/read/0/label", `unknown label "staging"`, "name no labels", "how to fix"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.env, "", "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--public-url", "https://p.example.com")
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
