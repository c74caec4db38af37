package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// missingResources knows no resource: reading one fails as providers
// report it, with or without the uri in the fault's details.
type missingResources struct{ details map[string]any }

func (missingResources) ListResources(context.Context, *mcp.Request) ([]mcp.Resource, error) {
	return nil, nil
}

func (missingResources) ListResourceTemplates(context.Context, *mcp.Request) ([]mcp.ResourceTemplate, error) {
	return nil, nil
}

func (m missingResources) ReadResource(_ context.Context, _ *mcp.Request, uri string) (*mcp.ReadResourceResult, error) {
	return nil, &fault.Error{Code: fault.ResourceNotFound, What: "unknown resource " + uri, Details: m.details}
}

func (m missingResources) CheckResource(_ context.Context, _ *mcp.Request, uri string) error {
	return &fault.Error{Code: fault.ResourceNotFound, What: "unknown resource " + uri, Details: m.details}
}

// TestResourceNotFoundNamesURI: a resource-not-found error carries the uri
// asked for at the top of error.data, in both eras (the 2025 revisions'
// -32002 and the modern -32602), whether or not the provider named it.
func TestResourceNotFoundNamesURI(t *testing.T) {
	const uri = "test://nonexistent"
	modernMeta := map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}}
	tests := []struct {
		name     string
		details  map[string]any
		modern   bool
		wantCode int64
		wantURI  string
	}{
		{"legacy, provider silent", nil, false, -32002, uri},
		{"modern, provider silent", nil, true, -32602, uri},
		{"modern, provider's own details kept", map[string]any{"reason": "gone"}, true, -32602, uri},
		{"provider's uri wins", map[string]any{"uri": "test://other"}, true, -32602, "test://other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"},
				Resources: missingResources{details: tc.details}}, mcp.EngineOptions{})
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			c := mcptest.Connect(t, e)
			params := map[string]any{"uri": uri}
			if tc.modern {
				params["_meta"] = modernMeta
			} else {
				c.Initialize(t, mcp.LatestVersion)
			}
			m := c.Request(t, 1, mcp.MethodResourcesRead, params)
			if m.Error == nil || m.Error.Code != tc.wantCode {
				t.Fatalf("got %s, want error %d", m.Raw, tc.wantCode)
			}
			var data map[string]any
			var env struct {
				Error struct {
					Data json.RawMessage `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(m.Raw, &env); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(env.Error.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data["uri"] != tc.wantURI || data["code"] != fault.ResourceNotFound {
				t.Errorf("error.data %s: want uri %q and code %s at its top", env.Error.Data, tc.wantURI, fault.ResourceNotFound)
			}
			if tc.details != nil {
				details, _ := data["details"].(map[string]any)
				for k, v := range tc.details {
					if !cmp.Equal(details[k], v) {
						t.Errorf("error.data.details %v: lost the provider's %s=%v", details, k, v)
					}
				}
			}
		})
	}
}
