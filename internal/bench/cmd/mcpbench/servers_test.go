package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestListen: each server is started on the transport a scenario asks
// for; the peers serve the stateless variant with -stateless.
func TestListen(t *testing.T) {
	all := servers("/bin", "/tpl", nil, "")
	byName := map[string]*server{}
	for _, s := range all {
		byName[s.name] = s
	}
	tests := []struct {
		server, transport string
		want              []string
	}{
		{mcpGo, "sse", []string{"/bin/peer-mcpgo", "-addr", "127.0.0.1:1", "-templates", "/tpl", "-transport", "sse"}},
		{goSDK, "http", []string{"/bin/peer-gosdk", "-addr", "127.0.0.1:1", "-templates", "/tpl", "-transport", "http"}},
		{goSDK, transportStateless, []string{"/bin/peer-gosdk", "-addr", "127.0.0.1:1", "-templates", "/tpl", "-transport", "http", "-stateless"}},
		{mcpGo, transportStateless, []string{"/bin/peer-mcpgo", "-addr", "127.0.0.1:1", "-templates", "/tpl", "-transport", "http", "-stateless"}},
		{mcpGoValidate, "http", []string{"/bin/peer-mcpgo", "-validate", "-addr", "127.0.0.1:1", "-templates", "/tpl", "-transport", "http"}},
		// flowyprompt at its defaults, and quiet: without the audit log.
		{flowyprompt, transportStateless, []string{"/bin/flowyprompt", "serve", "--transport", "http", "--addr", "127.0.0.1:1", "--templates", "/tpl"}},
		{httpFloor, "http", []string{"/bin/httpfloor", "-addr", "127.0.0.1:1", "-templates", "/tpl"}},
		{flowypromptQuiet, "sse", []string{"/bin/flowyprompt", "serve", "--transport", "http", "--addr", "127.0.0.1:1", "--templates", "/tpl", "--log-level", "error"}},
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.transport, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, byName[tt.server].listen(tt.transport, "127.0.0.1:1")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestScenarioTransport: every HTTP scenario's endpoint and transport; the
// stateless one is served at /mcp by a server started for it.
func TestScenarioTransport(t *testing.T) {
	got := map[string][2]string{}
	for _, sc := range scenarios(1) {
		if sc.kind != kindStdio {
			got[sc.id] = [2]string{sc.transport(), sc.path()}
		}
	}
	want := map[string][2]string{
		"sse-get-50": {"sse", "/sse"}, "http-get-50": {"http", "/mcp"}, "http-stateless-get-50": {transportStateless, "/mcp"},
		"sse-idle-1000": {"sse", "/sse"}, "http-idle-1000": {"http", "/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStdio: flowyprompt runs over stdio at its defaults, quiet with
// --log-level error, each with the extra arguments last.
func TestStdio(t *testing.T) {
	byName := map[string]*server{}
	for _, s := range servers("/bin", "/tpl", []string{"--procs", "1"}, "/old/flowyprompt") {
		byName[s.name] = s
	}
	tests := []struct {
		server string
		want   []string
	}{
		{flowyprompt, []string{"/bin/flowyprompt", "serve", "--templates", "/tpl", "--procs", "1"}},
		{flowypromptQuiet, []string{"/bin/flowyprompt", "serve", "--templates", "/tpl", "--log-level", "error", "--procs", "1"}},
		{flowypromptBefore, []string{"/old/flowyprompt", "serve", "--templates", "/tpl", "--procs", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, byName[tt.server].stdio()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRuns: the tools-only variant joins the tool scenarios alone, the
// floor the Streamable HTTP request scenario alone; the others all.
func TestRuns(t *testing.T) {
	byName := map[string]*server{}
	for _, s := range servers("/bin", "/tpl", nil, "") {
		byName[s.name] = s
	}
	want := map[string][]string{
		flowyprompt:   {"stdio-get-1", "stdio-get-32", "stdio-tool-32", "sse-get-50", "http-get-50", "http-stateless-get-50", "sse-idle-1000", "http-idle-1000"},
		mcpGoValidate: {"stdio-tool-32"},
		httpFloor:     {"http-get-50"},
	}
	for name, ids := range want {
		var got []string
		for _, sc := range scenarios(1) {
			if byName[name].runs(sc) {
				got = append(got, sc.id)
			}
		}
		if diff := cmp.Diff(ids, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
