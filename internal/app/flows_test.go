package app_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/xeipuuv/gojsonschema"
)

// flowDir writes three one-variable templates and a flow that chains
// them: outline from the topic, draft from the outline, polish from the
// draft and the topic.
func flowDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"outline", "draft", "polish"} {
		data := fmt.Sprintf(`{"metadata":{"name":%q,"version":"1.0.0","description":"d"},
			"variables":[{"name":"input","type":"string","description":"d","required":true}],
			"results":[{"name":"r","content":"%s <{{input}}>"}]}`, name, strings.ToUpper(name))
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	flow := `{"name":"post","description":"Write a post","arguments":[{"name":"topic","description":"t","required":true}],"steps":[
		{"name":"outline","template":"outline","variables":{"input":"{{topic}}"}},
		{"name":"draft","template":"draft","variables":{"input":"{{steps.outline.output}}"}},
		{"name":"polish","template":"polish","variables":{"input":"{{steps.draft.output}} on {{topic}}"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "flows", "post.json"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// flowEngine serves dir with a sealer the test holds, so it can mint an
// expired handle.
func flowEngine(t *testing.T, dir string, sealer *seal.Sealer) (*mcptest.Client, map[string]*gojsonschema.Schema) {
	t.Helper()
	lib := templates.NewLibrary(folder.New(dir, templates.BuildOptions{}), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(lib.Catalog().Flows()); n != 1 {
		t.Fatalf("flows = %d, want 1; invalid: %v", n, lib.Catalog().Invalid())
	}
	a := app.New(app.Options{Library: lib, Version: "test", State: sealer})
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	return c, outputSchemas(t, a)
}

func TestFlowWalk(t *testing.T) {
	c, schemas := flowEngine(t, flowDir(t), seal.Random())
	steps := []struct {
		tool   string
		args   map[string]any
		prompt string // "" when the flow is done
	}{
		{"flowyprompt_start_flow", map[string]any{"name": "post", "arguments": map[string]string{"topic": "caching"}}, "OUTLINE <caching>"},
		{"flowyprompt_next_flow_step", map[string]any{"output": "1. why 2. how"}, "DRAFT <1. why 2. how>"},
		// An output holding a reference is text, not a reference.
		{"flowyprompt_next_flow_step", map[string]any{"output": "a draft about {{topic}}"}, "POLISH <a draft about {{topic}} on caching>"},
		{"flowyprompt_next_flow_step", map[string]any{"output": "final"}, ""},
	}
	handle := ""
	for i, s := range steps {
		if handle != "" {
			s.args["handle"] = handle
		}
		res := call(t, c, i+1, s.tool, s.args)
		sc := res.StructuredContent
		if res.IsError {
			t.Fatalf("step %d: %s", i+1, res.Content[0].Text)
		}
		if r, err := schemas[s.tool].Validate(gojsonschema.NewGoLoader(sc)); err != nil || !r.Valid() {
			t.Errorf("step %d: structuredContent violates outputSchema: %v %v", i+1, err, r.Errors())
		}
		if s.prompt == "" {
			if sc["done"] != true || sc["handle"] != nil {
				t.Fatalf("step %d: %v, want done without a handle", i+1, sc)
			}
			continue
		}
		if sc["done"] != false || sc["step"] != float64(i+1) || sc["steps"] != float64(3) {
			t.Errorf("step %d: done/step/steps = %v/%v/%v, want false/%d/3", i+1, sc["done"], sc["step"], sc["steps"], i+1)
		}
		if got, _ := sc["prompt"].(string); !strings.Contains(got, s.prompt) {
			t.Errorf("step %d: prompt %q, want it to contain %q", i+1, got, s.prompt)
		}
		handle, _ = sc["handle"].(string)
		if handle == "" || !strings.Contains(res.Content[0].Text, handle) {
			t.Fatalf("step %d: no handle in %v", i+1, sc)
		}
		// A sealed token is readable: the last step's handle must not
		// carry the outline, which no step after the draft refers to.
		head, _, _ := strings.Cut(handle, ".")
		payload, err := base64.RawURLEncoding.DecodeString(head)
		if err != nil {
			t.Fatal(err)
		}
		if carries := strings.Contains(string(payload), "why 2. how"); carries != (i == 1) {
			t.Errorf("step %d: handle carries the outline = %t, want %t: %s", i+1, carries, i == 1, payload)
		}
	}
}

func TestFlowHandleRefused(t *testing.T) {
	key := []byte(strings.Repeat("k", seal.MinKeyBytes))
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := flowDir(t)
	c, _ := flowEngine(t, dir, sealer)
	start := call(t, c, 1, "flowyprompt_start_flow", map[string]any{"name": "post", "arguments": map[string]string{"topic": "x"}})
	good, _ := start.StructuredContent["handle"].(string)
	expired, err := sealer.Seal("flow-handle", map[string]any{"f": "post"}, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sealer.Seal("input:tools/call:post", map[string]any{"f": "post"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(good)
	tampered[len(tampered)/3] ^= 1
	tests := []struct {
		name, handle, why string
	}{
		{"tampered", string(tampered), "was changed"},
		{"expired", expired, "expired"},
		{"other purpose", other, "was changed"},
		{"not a token", "nope", "was changed"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, c, 10+i, "flowyprompt_next_flow_step", map[string]any{"handle": tt.handle, "output": "o"})
			sc := res.StructuredContent
			if !res.IsError || sc["code"] != "INVALID_ARGUMENT" {
				t.Fatalf("got %v, want an INVALID_ARGUMENT error", sc)
			}
			if why, _ := sc["why"].(string); !strings.Contains(why, tt.why) {
				t.Errorf("why %q, want it to say %q", why, tt.why)
			}
		})
	}
	// A changed template makes the handle stale, though it is genuine.
	if err := os.WriteFile(filepath.Join(dir, "draft.json"), []byte(`{"metadata":{"name":"draft","version":"1.0.1","description":"d"},
		"variables":[{"name":"input","type":"string","description":"d","required":true}],"results":[{"name":"r","content":"NEW <{{input}}>"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := call(t, c, 20, "flowyprompt_refresh_templates", map[string]any{}); res.IsError {
		t.Fatal(res.Content[0].Text)
	}
	res := call(t, c, 21, "flowyprompt_next_flow_step", map[string]any{"handle": good, "output": "o"})
	if why, _ := res.StructuredContent["why"].(string); !res.IsError || !strings.Contains(why, "changed") {
		t.Fatalf("after a template change: %v, want the handle refused", res.StructuredContent)
	}
}

// TestFlowStepNotRendered: an empty output cannot fill the next step's
// required variable; the error names the step, and the same handle works
// with a real output.
func TestFlowStepNotRendered(t *testing.T) {
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	start := call(t, c, 1, "flowyprompt_start_flow", map[string]any{"name": "post", "arguments": map[string]string{"topic": "x"}})
	handle, _ := start.StructuredContent["handle"].(string)
	tests := []struct {
		output  string
		isError bool
		want    string // in what, or in the prompt
	}{
		{"", true, "step 2 (draft) of flow post"},
		{"an outline", false, "DRAFT <an outline>"},
	}
	for i, tt := range tests {
		res := call(t, c, 2+i, "flowyprompt_next_flow_step", map[string]any{"handle": handle, "output": tt.output})
		sc := res.StructuredContent
		if res.IsError != tt.isError {
			t.Fatalf("output %q: isError %t, want %t: %v", tt.output, res.IsError, tt.isError, sc)
		}
		got, _ := sc["prompt"].(string)
		if tt.isError {
			got, _ = sc["what"].(string)
			if sc["code"] != "MISSING_REQUIRED_VARIABLE" {
				t.Errorf("output %q: code %v, want MISSING_REQUIRED_VARIABLE", tt.output, sc["code"])
			}
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("output %q: %q, want it to contain %q", tt.output, got, tt.want)
		}
	}
}

func TestStartFlowErrors(t *testing.T) {
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	tests := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unknown flow", map[string]any{"name": "pots"}, "TEMPLATE_NOT_FOUND"},
		{"missing argument", map[string]any{"name": "post"}, "MISSING_REQUIRED_VARIABLE"},
		{"unknown argument", map[string]any{"name": "post", "arguments": map[string]string{"topic": "x", "topik": "y"}}, "INVALID_ARGUMENT"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, c, i+1, "flowyprompt_start_flow", tt.args)
			if !res.IsError || res.StructuredContent["code"] != tt.code {
				t.Fatalf("got %v, want %s", res.StructuredContent, tt.code)
			}
		})
	}
}

func TestFlowPrompt(t *testing.T) {
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	list := c.Request(t, 1, "prompts/list", nil)
	if !strings.Contains(string(list.Result), `"name":"flow:post"`) {
		t.Fatalf("prompts/list lacks flow:post: %s", list.Result)
	}
	tests := []struct {
		name    string
		args    map[string]string
		isError bool
		want    []string
	}{
		{"rendered", map[string]string{"topic": "caching"}, false,
			[]string{"1. outline (template outline)", "3. polish (template polish)", `{"arguments":{"topic":"caching"},"name":"post"}`, "flowyprompt_next_flow_step"}},
		{"missing argument", nil, true, []string{"topic"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.Request(t, 2+i, "prompts/get", map[string]any{"name": "flow:post", "arguments": tt.args})
			if (m.Error != nil) != tt.isError {
				t.Fatalf("error = %v, want an error: %t; %s", m.Error, tt.isError, m.Raw)
			}
			for _, want := range tt.want {
				if !strings.Contains(strings.ReplaceAll(string(m.Raw), `\"`, `"`), want) {
					t.Errorf("%s lacks %q", m.Raw, want)
				}
			}
		})
	}
}
