package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/xeipuuv/gojsonschema"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
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
	e := mcptest.Engine(t, a.Server(), mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	return c, outputSchemas(t, a)
}

func TestFlowWalk(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	// Another process, started without the same keys, seals with its own.
	elsewhere, err := seal.Random().Seal("flow-handle", map[string]any{"f": "post"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const keys = "FLOWYPROMPT_STATE_KEYS (or --state-keys)"
	tests := []struct {
		name, handle, why string
		how               string // "" when the how-to-fix must not speak of keys
	}{
		{"tampered", string(tampered), "was changed", keys},
		{"expired", expired, "expired", ""},
		{"other purpose", other, "was changed", keys},
		{"not a token", "nope", "was changed", keys},
		{"sealed by another process", elsewhere, "not minted by this server", keys},
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
			how, _ := sc["how"].(string)
			if tt.how != "" && !strings.Contains(how, tt.how) || tt.how == "" && strings.Contains(how, "STATE_KEYS") {
				t.Errorf("how %q, want it to name %q", how, tt.how)
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
	t.Parallel()
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
	t.Parallel()
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	tests := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unknown flow", map[string]any{"name": "pots"}, "TEMPLATE_NOT_FOUND"},
		{"missing argument", map[string]any{"name": "post"}, "MISSING_REQUIRED_VARIABLE"},
		{"unknown argument", map[string]any{"name": "post", "arguments": map[string]string{"topic": "x", "topik": "y"}}, "INVALID_ARGUMENT"},
		{"arguments without a name", map[string]any{"arguments": map[string]string{"topic": "x"}}, "INVALID_ARGUMENT"},
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

// TestFlowGolden walks the support_reply flow of testdata/flowlib as a
// client would, through prompts and tools, and compares every answer with
// testdata/flows.golden.json (as JSON). Handles differ on every run (they
// carry an expiry), so each is replaced by "HANDLE" before comparing; a
// step is sent the handle of the latest result that handed one out.
func TestFlowGolden(t *testing.T) {
	t.Parallel()
	c, schemas := flowEngine(t, filepath.Join("testdata", "flowlib"), seal.Random())
	ticket := "The export button does nothing since the last update. <Firefox 132>"
	cases := []struct {
		name   string
		method string
		params map[string]any
	}{
		{"prompts/list", "prompts/list", nil},
		{"prompts/get flow:support_reply", "prompts/get", map[string]any{"name": "flow:support_reply",
			"arguments": map[string]string{"ticket": ticket, "tone": "formal"}}},
		{"prompts/get flow:support_reply without its ticket", "prompts/get", map[string]any{"name": "flow:support_reply"}},
		{"start_flow lists the flows", "tools/call", map[string]any{"name": "flowyprompt_start_flow", "arguments": map[string]any{}}},
		{"start_flow", "tools/call", map[string]any{"name": "flowyprompt_start_flow",
			"arguments": map[string]any{"name": "support_reply", "arguments": map[string]string{"ticket": ticket}}}},
		// "maybe" is not one of Draft_Reply's kinds: the step is refused
		// and the same handle is used again below.
		{"next step, an output the next template refuses", "tools/call", map[string]any{"name": "flowyprompt_next_flow_step",
			"arguments": map[string]any{"output": "maybe"}}},
		{"next step: draft", "tools/call", map[string]any{"name": "flowyprompt_next_flow_step", "arguments": map[string]any{"output": "bug"}}},
		{"next step: polish", "tools/call", map[string]any{"name": "flowyprompt_next_flow_step",
			"arguments": map[string]any{"output": "Thanks for the report: the export button is broken in 4.2 and a fix ships on Friday."}}},
		{"next step: done", "tools/call", map[string]any{"name": "flowyprompt_next_flow_step",
			"arguments": map[string]any{"output": "Dear customer, thank you for your report."}}},
	}
	got := map[string]json.RawMessage{}
	handle := ""
	for i, ex := range cases {
		if ex.params != nil {
			if args, ok := ex.params["arguments"].(map[string]any); ok && ex.params["name"] == "flowyprompt_next_flow_step" {
				args["handle"] = handle
			}
		}
		m := c.Request(t, i+1, ex.method, ex.params)
		raw := string(m.Raw)
		var res toolResult
		if ex.method == "tools/call" {
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatalf("%s: %v: %s", ex.name, err, m.Raw)
			}
			name, _ := ex.params["name"].(string)
			if r, err := schemas[name].Validate(gojsonschema.NewGoLoader(res.StructuredContent)); err != nil || !r.Valid() {
				t.Errorf("%s: structuredContent violates the outputSchema: %v %v", ex.name, err, r.Errors())
			}
		}
		if h, _ := res.StructuredContent["handle"].(string); h != "" {
			handle = h
			raw = strings.ReplaceAll(raw, h, "HANDLE")
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "id")
		delete(v, "jsonrpc")
		got[ex.name] = mustJSON(t, v)
	}
	golden.JSON(t, filepath.Join("testdata", "flows.golden.json"), got)
}

// TestFlowPromptIsAConversation: the flow's prompt is an opening message
// with the plan and a message for each step, in order, rendered with the
// flow's arguments; a result a step needs stands as a reference to the
// step that makes it.
func TestFlowPromptIsAConversation(t *testing.T) {
	t.Parallel()
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	m := c.Request(t, 1, "prompts/get", map[string]any{"name": "flow:post", "arguments": map[string]string{"topic": "caching"}})
	var res mcp.GetPromptResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("%v: %s", err, m.Raw)
	}
	want := [][]string{
		{"Run the flow post", "1. outline (template outline)", "3. polish (template polish)", `{"arguments":{"topic":"caching"},"name":"post"}`},
		{"## Step 1 of 3: outline", "OUTLINE <caching>"},
		{"## Step 2 of 3: draft", "DRAFT <[your result of step 1, outline]>"},
		{"## Step 3 of 3: polish", "POLISH <[your result of step 2, draft] on caching>"},
	}
	if len(res.Messages) != len(want) {
		t.Fatalf("%d messages, want %d: %s", len(res.Messages), len(want), m.Raw)
	}
	for i, msg := range res.Messages {
		if msg.Role != "user" {
			t.Errorf("message %d: role %q, want user", i, msg.Role)
		}
		for _, w := range want[i] {
			if !strings.Contains(msg.Content.Text, w) {
				t.Errorf("message %d lacks %q: %s", i, w, msg.Content.Text)
			}
		}
	}
}

// TestStartFlowLists: without a name, start_flow lists the library's
// flows, or says there are none and how to add one.
func TestStartFlowLists(t *testing.T) {
	t.Parallel()
	noFlows := t.TempDir()
	writeTemplate(t, noFlows, "outline", `{"metadata":{"name":"outline","version":"1.0.0","description":"d"},"results":[{"name":"r","content":"x"}]}`)
	tests := []struct {
		name  string
		dir   string
		count int
		want  string
	}{
		{"a flow", flowDir(t), 1, "- argument topic (string, required): t"},
		{"no flows", noFlows, 0, "A flow is a file in a flows/ folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := templates.NewLibrary(folder.New(tt.dir, templates.BuildOptions{}), slog.New(slog.DiscardHandler))
			if err := lib.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			a := app.New(app.Options{Library: lib, Version: "test"})
			e := mcp.NewEngine(a.Server(), mcp.EngineOptions{})
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			res := call(t, c, 1, "flowyprompt_start_flow", map[string]any{})
			if res.IsError || res.StructuredContent["count"] != float64(tt.count) {
				t.Fatalf("got %v, want %d flows listed", res.StructuredContent, tt.count)
			}
			if !strings.Contains(res.Content[0].Text, tt.want) {
				t.Errorf("text lacks %q: %s", tt.want, res.Content[0].Text)
			}
		})
	}
}

// gatherDir is a library whose flow carries three outputs to its last
// step, and whose fourth template is long: the handle and the prompt
// compete for one result.
func gatherDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTemplate(t, dir, "part", `{"metadata":{"name":"part","version":"1.0.0","description":"d"},
		"variables":[{"name":"input","type":"string","description":"d","required":true}],"results":[{"name":"r","content":"PART {{input}}"}]}`)
	writeTemplate(t, dir, "join", fmt.Sprintf(`{"metadata":{"name":"join","version":"1.0.0","description":"d"},
		"variables":[{"name":"a","type":"string","description":"d","required":true},{"name":"b","type":"string","description":"d","required":true},
		{"name":"c","type":"string","description":"d","required":true}],"results":[{"name":"r","content":"JOIN %s\n{{a}}\n{{b}}\n{{c}}"}]}`,
		strings.Repeat("Keep every part. ", 1000)))
	if err := os.Mkdir(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	flow := `{"name":"gather","description":"d","arguments":[{"name":"x","description":"d","required":true}],"steps":[
		{"name":"a","template":"part","variables":{"input":"{{x}}"}},
		{"name":"b","template":"part","variables":{"input":"{{x}}"}},
		{"name":"c","template":"part","variables":{"input":"{{x}}"}},
		{"name":"d","template":"join","variables":{"a":"{{steps.a.output}}","b":"{{steps.b.output}}","c":"{{steps.c.output}}"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "flows", "gather.json"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFlowResultBudget: a step's result, handle and prompt each carried
// twice, stays within ResultBudget, the prompt cut to make room and saying
// so; outputs too long for a handle are refused with the handle still
// good for a shorter output.
func TestFlowResultBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		outputLen int  // of each of the three outputs
		refused   bool // the last step is not handed out
		truncated bool
	}{
		{"short outputs, whole prompt", 1000, false, false},
		{"long outputs, prompt cut beside a big handle", 6500, false, true},
		{"outputs too long for a handle", 10000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := flowEngine(t, gatherDir(t), seal.Random())
			res := call(t, c, 1, "flowyprompt_start_flow", map[string]any{"name": "gather", "arguments": map[string]string{"x": "go"}})
			// '<' is six bytes in JSON that escapes HTML: the outputs are
			// code-like on purpose.
			output := strings.Repeat("a < b && c > d\n", tt.outputLen/15+1)[:tt.outputLen]
			var last toolResult
			var lastHandle string
			for i := range 3 {
				lastHandle, _ = res.StructuredContent["handle"].(string)
				last = call(t, c, 2+i, "flowyprompt_next_flow_step", map[string]any{"handle": lastHandle, "output": output})
				if i < 2 && last.IsError {
					t.Fatalf("step %d: %s", i+2, last.Content[0].Text)
				}
				res = last
			}
			sc := last.StructuredContent
			if last.IsError != tt.refused {
				t.Fatalf("last step refused = %t, want %t: %v", last.IsError, tt.refused, sc)
			}
			if tt.refused {
				if sc["code"] != "INVALID_ARGUMENT" || !strings.Contains(fmt.Sprint(sc["how"]), "shorter output") {
					t.Errorf("refusal %v, want INVALID_ARGUMENT asking for a shorter output", sc)
				}
				again := call(t, c, 9, "flowyprompt_next_flow_step", map[string]any{"handle": lastHandle, "output": "short"})
				if again.IsError || again.StructuredContent["step"] != float64(4) {
					t.Errorf("the same handle with a short output: %v, want step 4", again.StructuredContent)
				}
				return
			}
			// Counted as the client receives it: the wire escapes no HTML.
			var wire bytes.Buffer
			enc := json.NewEncoder(&wire)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(sc); err != nil {
				t.Fatal(err)
			}
			size := utf8.RuneCountInString(last.Content[0].Text) + utf8.RuneCount(wire.Bytes())
			if size > app.ResultBudget {
				t.Errorf("result is %d characters, over the budget of %d", size, app.ResultBudget)
			}
			if got := sc["truncated"] == true; got != tt.truncated {
				t.Errorf("truncated = %t, want %t (prompt %d characters, handle %d)", got, tt.truncated,
					utf8.RuneCountInString(fmt.Sprint(sc["prompt"])), len(fmt.Sprint(sc["handle"])))
			}
			if tt.truncated && (!strings.Contains(last.Content[0].Text, "Truncated") || sc["total_characters"] == nil) {
				t.Errorf("a cut prompt does not say so: %v", sc["total_characters"])
			}
		})
	}
}

// TestFlowInputRequired: a 2026 client that can show a form is asked for a
// flow's missing required argument, by the flow's prompt and by
// start_flow alike, and the retry with the answer goes on; a client
// without forms gets the error naming it.
func TestFlowInputRequired(t *testing.T) {
	t.Parallel()
	c, _ := flowEngine(t, flowDir(t), seal.Random())
	accept := map[string]any{"variables": map[string]any{"action": "accept", "content": map[string]any{"topic": "caching"}}}
	tests := []struct {
		name   string
		method string
		params func(retry map[string]any) map[string]any
		want   string // in the answer to the retry
	}{
		{"prompt", mcp.MethodPromptsGet, func(retry map[string]any) map[string]any {
			p := map[string]any{"name": "flow:post", "arguments": map[string]string{}}
			maps.Copy(p, retry)
			return p
		}, "OUTLINE <caching>"},
		{"start_flow", mcp.MethodToolsCall, func(retry map[string]any) map[string]any {
			p := map[string]any{"name": "flowyprompt_start_flow", "arguments": map[string]any{"name": "post"}}
			maps.Copy(p, retry)
			return p
		}, "OUTLINE <caching>"},
	}
	id := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id++
			ir := decodeInputRequired(t, c.Request(t, id, tt.method, modern(withElicitation, tt.params(nil))))
			q := ir.InputRequests["variables"]
			if strings.Join(q.Params.RequestedSchema.Required, ",") != "topic" || !strings.Contains(q.Params.Message, "flow post") {
				t.Fatalf("the form asks %q for %v, want the flow post's topic", q.Params.Message, q.Params.RequestedSchema.Required)
			}
			id++
			m := c.Request(t, id, tt.method, modern(withElicitation, tt.params(map[string]any{"inputResponses": accept, "requestState": ir.RequestState})))
			if m.Error != nil || !strings.Contains(string(m.Result), tt.want) || strings.Contains(string(m.Result), `"isError":true`) {
				t.Fatalf("the retry: %s, want it to hold %q", m.Raw, tt.want)
			}
			id++
			m = c.Request(t, id, tt.method, modern(map[string]any{}, tt.params(nil)))
			if !strings.Contains(string(m.Raw), "MISSING_REQUIRED_VARIABLE") || !strings.Contains(string(m.Raw), "topic") {
				t.Fatalf("without forms: %s, want MISSING_REQUIRED_VARIABLE naming topic", m.Raw)
			}
		})
	}
}
