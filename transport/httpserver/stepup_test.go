package httpserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// TestOAuthStepUp: a member whose token lacks prompts:write is not shown
// the save tool, and calling it is answered 403 with the step-up
// challenge before it runs, on /mcp in both eras and on /sse/message; a
// token with the scope saves.
func TestOAuthStepUp(t *testing.T) {
	is := newIssuer(t)
	dir := t.TempDir()
	src := folder.New(dir, templates.BuildOptions{Logger: quiet})
	lib := templates.NewLibrary(src, quiet)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Logger: quiet, AllowWrite: true, Writer: src})
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{Logger: quiet})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil), RequiredScope: a.RequiredScope})
	reader := bearerOf(is.valid(t, tokenClaims{}))
	writer := bearerOf(is.valid(t, tokenClaims{Scope: "prompts:read prompts:write"}))
	const stepUp = `Bearer error="insufficient_scope", scope="prompts:write", resource_metadata="` + publicURL + `/.well-known/oauth-protected-resource/mcp"`
	save := func(id int, name string) string {
		return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":"flowyprompt_save_template","arguments":{"message":"m",` +
			`"template":"{\"metadata\":{\"name\":\"` + name + `\",\"description\":\"d\",\"version\":\"1.0.0\"},\"variables\":[],\"results\":[{\"name\":\"s\",\"content\":\"hi\"}]}"}}}`
	}
	modern := func(body string) string {
		return strings.Replace(body, `"params":{`, `"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`, 1)
	}
	modernHeaders := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "flowyprompt_save_template"}
	id := c.openMCP(t, reader...)
	list := c.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, append([]string{"Mcp-Session-Id", id}, reader...)...)
	if list.status != http.StatusOK || strings.Contains(list.body, `"name":"flowyprompt_save_template"`) || !strings.Contains(list.body, "flowyprompt_list_templates") {
		t.Fatalf("tools/list for a reader: %d %.300s", list.status, list.body)
	}
	wlist := c.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, append([]string{"Mcp-Session-Id", id}, writer...)...)
	if !strings.Contains(wlist.body, `"name":"flowyprompt_save_template"`) {
		t.Fatalf("tools/list for a writer lacks the save tool: %.300s", wlist.body)
	}

	ev := c.stream(t, "/sse", reader...)
	defer ev.close()
	m := sessionRE.FindStringSubmatch(ev.next(t).data)
	if m == nil {
		t.Fatal("no endpoint")
	}
	message := "/sse/message?session_id=" + m[1]
	if r := c.do(t, "POST", message, initMCP, reader...); r.status != http.StatusAccepted {
		t.Fatalf("initialize over /sse: %d %s", r.status, r.body)
	}
	ev.message(t)

	tests := []struct {
		name   string
		path   string
		body   string
		header []string
		status int
	}{
		{"2025 session, reader", "/mcp", save(3, "Refused_One"), append([]string{"Mcp-Session-Id", id}, reader...), http.StatusForbidden},
		{"2026 era, reader", "/mcp", modern(save(4, "Refused_Two")), append(modernHeaders, reader...), http.StatusForbidden},
		{"/sse/message, reader", message, save(5, "Refused_Three"), reader, http.StatusForbidden},
		{"2025 session, writer", "/mcp", save(6, "Saved_One"), append([]string{"Mcp-Session-Id", id}, writer...), http.StatusOK},
		{"2026 era, writer", "/mcp", modern(save(7, "Saved_Two")), append(modernHeaders, writer...), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(t, "POST", tt.path, tt.body, tt.header...)
			if r.status != tt.status {
				t.Fatalf("%d %.400s, want %d", r.status, r.body, tt.status)
			}
			if tt.status == http.StatusForbidden {
				if got := r.header.Get("WWW-Authenticate"); got != stepUp {
					t.Errorf("WWW-Authenticate %q, want %q", got, stepUp)
				}
				if d := errData(t, r.body); d.Code != mcp.CodeInsufficientScope {
					t.Errorf("error %+v, want %s", d, mcp.CodeInsufficientScope)
				}
				return
			}
			if !strings.Contains(r.body, "Created template") {
				t.Errorf("a writer's save: %.400s", r.body)
			}
		})
	}
	// Nothing refused ran: only the writers' templates were saved.
	if _, err := lib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range lib.Catalog().Templates() {
		names = append(names, e.Template.Metadata.Name)
	}
	if strings.Join(names, " ") != "Saved_One Saved_Two" {
		t.Errorf("templates saved: %v, want Saved_One and Saved_Two", names)
	}
}
