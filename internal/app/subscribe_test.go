package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestSubscribeOnlyServedResources: a subscription, resources/subscribe
// (2025) or subscriptions/listen (2026), is kept only for a resource the
// app serves (a template, or a file a template lists that is there), and
// anything else is refused with the revision's resource-not-found error,
// naming the URI.
func TestSubscribeOnlyServedResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{"docs/guide.md": "# Guide", "notes.txt": "listed by no template"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTemplate(t, dir, "Write", `{"metadata":{"name":"Write","description":"Writes","version":"1.0.0"},"variables":[],`+
		`"results":[{"name":"s","content":"Write it."}],"resources":["docs/guide.md","docs/gone.md"]}`)
	e, _ := newDirEngine(t, dir)
	tests := []struct {
		uri    string
		served bool
	}{
		{"template://Write", true},
		{"template-file:///docs/guide.md", true},
		{"template://Nothing", false},
		{"template-file:///docs/gone.md", false}, // listed, not there
		{"template-file:///notes.txt", false},    // there, listed by no template
		{"https://example.com/Write", false},
	}
	for i, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			check := func(era string, m mcptest.Message, notFound int64) {
				t.Helper()
				if tc.served {
					if m.Error != nil {
						t.Fatalf("%s: got %s, want it kept", era, m.Raw)
					}
					return
				}
				var env struct {
					Error struct {
						Code int64 `json:"code"`
						Data struct {
							Code string `json:"code"`
							URI  string `json:"uri"`
						} `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal(m.Raw, &env); err != nil || env.Error.Code != notFound ||
					env.Error.Data.Code != fault.ResourceNotFound || env.Error.Data.URI == "" {
					t.Fatalf("%s: got %s, want %d %s naming the uri", era, m.Raw, notFound, fault.ResourceNotFound)
				}
			}
			check("resources/subscribe", c.Request(t, 1, mcp.MethodResourcesSubscribe, map[string]string{"uri": tc.uri}), -32002)

			c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{`+
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`+
				`"notifications":{"resourceSubscriptions":[%q]}}}`, 100+i, tc.uri))
			m := c.Next(t)
			if tc.served && m.Method != mcp.NotificationSubscriptionsAcknowledged {
				t.Fatalf("subscriptions/listen: got %s, want the acknowledgement", m.Raw)
			}
			if !tc.served {
				check("subscriptions/listen", m, -32602)
			}
		})
	}
}
