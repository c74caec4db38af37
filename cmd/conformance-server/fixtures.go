package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// The payloads the suite's scenarios name. The image is a 1×1 red PNG and
// the audio a minimal WAV header: the suite checks shapes, not pixels, and
// these are the bytes the reference everything-server sends.
const (
	testImagePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	testAudioWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

	uriStaticText     = "test://static-text"
	uriStaticBinary   = "test://static-binary"
	uriWatched        = "test://watched-resource"
	uriTemplate       = "test://template/{id}/data"
	loggerName        = "conformance-server"
	schemaDialect2020 = "https://json-schema.org/draft/2020-12/schema"
)

// stepDelay spaces the notifications of the logging and progress tools, as
// the scenarios ask (~50 ms), so a client sees them arrive during the call
// rather than in one burst with the result.
var stepDelay = 50 * time.Millisecond

// reconnectDelay is how long test_reconnection waits after closing its
// stream before answering, so the answer is produced while the client is
// between streams and has to come from the replay.
var reconnectDelay = 100 * time.Millisecond

// fixtures implements every provider the conformance suite's server
// scenarios exercise. One value serves all sessions and modern requests;
// its state is the watched resource's revision, the transient tool's and
// prompt's (see the trigger tools), and the key that seals requestState.
type fixtures struct {
	watchedRevision atomic.Int64
	toolRevision    atomic.Int64
	promptRevision  atomic.Int64
	states          *seal.Sealer
	// notify is the engine's Notify, set by newEngine.
	notify func(method string, params any)
}

func newFixtures() *fixtures {
	return &fixtures{states: seal.Random(), notify: func(string, any) {}}
}

func newServer(fx *fixtures) *mcp.Server {
	return &mcp.Server{
		Info: mcp.Implementation{Name: "flowyprompt-conformance-server", Title: "flowyprompt conformance fixtures", Version: "1.0.0"},
		Instructions: "Fixture server for the official MCP conformance suite: every tool, prompt and resource " +
			"here exists only to be exercised by a scenario.",
		Prompts:    fx,
		Tools:      fx,
		Resources:  fx,
		Completion: fx,
		// prompts/get is served as a method of its own, not by the
		// provider: test_input_required_result_prompt asks a 2025 client
		// with server→client requests, and the engine runs only its own
		// prompts/get (which never asks) on a transport's goroutine.
		Methods: map[string]mcp.Handler{mcp.MethodPromptsGet: fx.getPrompt},
	}
}

// newEngine starts an engine serving fx, which it tells about list
// changes.
func newEngine(fx *fixtures, opts mcp.EngineOptions) *mcp.Engine {
	e := mcp.NewEngine(newServer(fx), opts)
	fx.notify = e.Notify
	return e
}

// ---- tools ----

type toolFunc func(ctx context.Context, r *mcp.Request, args json.RawMessage) (*mcp.CallToolResult, error)

// toolDef is a tool and what runs it: run for a tool that answers at once,
// ask for one that may need the client's input first (see inputs.go).
type toolDef struct {
	tool mcp.Tool
	run  toolFunc
	ask  asker
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// json2020Schema is passed through byte for byte: the scenario checks that
// $schema, $defs, $anchor, additionalProperties, the composition (allOf,
// anyOf) and the conditional keywords (if, then, else) survive tools/list.
// It is the suite's own schema.
var json2020Schema = json.RawMessage(`{"$schema":"` + schemaDialect2020 + `","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},` +
	`"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
	`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
	`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},` +
	`"then":{"required":["phone"]},"else":{"required":["email"]},` +
	`"additionalProperties":false}`)

// xMCPHeaderSchema mirrors region in the header Mcp-Param-Region
// (SEP-2243); level is an ordinary argument.
var xMCPHeaderSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"region":{"type":"string","description":"Mirrored in the Mcp-Param-Region header","x-mcp-header":"Region"},` +
	`"level":{"type":"integer","description":"An argument that is not mirrored"}}}`)

func (fx *fixtures) tools() []toolDef {
	return []toolDef{
		{tool: mcp.Tool{Name: "test_simple_text", Description: "Returns one text content block", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return textResult("This is a simple text response for testing."), nil
			}},
		{tool: mcp.Tool{Name: "test_image_content", Description: "Returns one image content block (a 1x1 PNG)", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "image", Data: testImagePNG, MimeType: "image/png"}}}, nil
			}},
		{tool: mcp.Tool{Name: "test_audio_content", Description: "Returns one audio content block (a minimal WAV)", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "audio", Data: testAudioWAV, MimeType: "audio/wav"}}}, nil
			}},
		{tool: mcp.Tool{Name: "test_embedded_resource", Description: "Returns one embedded text resource", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "resource", Resource: &mcp.ResourceContents{
					URI: "test://embedded-resource", MimeType: "text/plain", Text: "This is an embedded resource content."}}}}, nil
			}},
		{tool: mcp.Tool{Name: "test_multiple_content_types", Description: "Returns text, image and embedded resource blocks", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					mcp.TextContent("Multiple content types test:"),
					{Type: "image", Data: testImagePNG, MimeType: "image/png"},
					{Type: "resource", Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource",
						MimeType: "application/json", Text: `{"test":"data","value":123}`}},
				}}, nil
			}},
		{tool: mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three info log notifications while it runs", InputSchema: emptySchema},
			run: toolWithLogging},
		{tool: mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 when asked for progress", InputSchema: emptySchema},
			run: toolWithProgress},
		{tool: mcp.Tool{Name: "test_error_handling", Description: "Always fails, as a tool error (isError)", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return errorResult("This tool intentionally returns an error for testing"), nil
			}},
		{tool: mcp.Tool{Name: "test_reconnection", Description: "Closes its response stream mid-call and answers after the client resumes (SEP-1699)", InputSchema: emptySchema},
			run: toolReconnection},
		{tool: mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM to answer a prompt (sampling/createMessage)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
			run: toolSampling},
		{tool: mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email (elicitation/create)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)},
			run: toolElicitation},
		{tool: mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields carry default values (SEP-1034)", InputSchema: emptySchema},
			run: elicitForm("Please review and update the form fields with defaults", sep1034Schema)},
		{tool: mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits a form with the five enum shapes (SEP-1330)", InputSchema: emptySchema},
			run: elicitForm("Please select options from the enum fields", sep1330Schema)},
		{tool: mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features (SEP-1613, SEP-2106)", InputSchema: json2020Schema},
			run: func(_ context.Context, _ *mcp.Request, args json.RawMessage) (*mcp.CallToolResult, error) {
				if len(args) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				return textResult("JSON Schema 2020-12 tool called with: " + string(args)), nil
			}},
		{tool: mcp.Tool{Name: "test_x_mcp_header", Description: "Mirrors its region argument in the Mcp-Param-Region header (SEP-2243)", InputSchema: xMCPHeaderSchema},
			run: toolXMCPHeader},

		// The diagnostics of SEP-2575 (revision 2026-07-28).
		{tool: mcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability: refused with -32021 when the request does not declare it", InputSchema: emptySchema},
			run: toolMissingCapability},
		{tool: mcp.Tool{Name: "test_streaming_elicitation", Description: "Answers on its response stream with the result alone, no request to the client", InputSchema: emptySchema},
			run: func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return textResult("stream observed: result frames only, no top-level requests"), nil
			}},
		{tool: mcp.Tool{Name: "test_logging_tool", Description: "Logs one info message, which reaches only a client that asked for that level", InputSchema: emptySchema},
			run: func(_ context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
				r.Log(mcp.LevelInfo, loggerName, "test_logging_tool executed")
				return textResult("test_logging_tool executed"), nil
			}},
		{tool: mcp.Tool{Name: "test_trigger_tool_change", Description: "Changes the tool list (a transient tool), which sends notifications/tools/list_changed", InputSchema: emptySchema},
			run: fx.triggerToolChange},
		{tool: mcp.Tool{Name: "test_trigger_prompt_change", Description: "Changes the prompt list (a transient prompt), which sends notifications/prompts/list_changed", InputSchema: emptySchema},
			run: fx.triggerPromptChange},

		// Input-required results (SEP-2322), see inputs.go.
		{tool: mcp.Tool{Name: "test_input_required_result_elicitation", Description: "Asks the user's name (elicitation, key user_name)", InputSchema: emptySchema},
			ask: askName},
		{tool: mcp.Tool{Name: "test_input_required_result_sampling", Description: "Asks the client's LLM a question (sampling, key capital_question)", InputSchema: emptySchema},
			ask: askCapital},
		{tool: mcp.Tool{Name: "test_input_required_result_list_roots", Description: "Asks the client's roots (roots/list, key client_roots)", InputSchema: emptySchema},
			ask: askRoots},
		{tool: mcp.Tool{Name: "test_input_required_result_request_state", Description: "Asks for a confirmation and completes only with the requestState it issued", InputSchema: emptySchema},
			ask: askConfirm},
		{tool: mcp.Tool{Name: "test_input_required_result_multiple_inputs", Description: "Asks an elicitation, a sampling and a roots/list at once", InputSchema: emptySchema},
			ask: askMany},
		{tool: mcp.Tool{Name: "test_input_required_result_multi_round", Description: "Asks two questions one after the other, its progress in requestState", InputSchema: emptySchema},
			ask: askRounds},
		{tool: mcp.Tool{Name: "test_input_required_result_tampered_state", Description: "Asks for a confirmation; a requestState altered by the client is refused", InputSchema: emptySchema},
			ask: askConfirm},
		{tool: mcp.Tool{Name: "test_input_required_result_capabilities", Description: "Asks only what the request's client capabilities declare", InputSchema: emptySchema},
			ask: askDeclared},
	}
}

// The transient tool and prompt appear at the first trigger; every
// trigger after that changes their description.
const (
	transientTool   = "test_transient_tool"
	transientPrompt = "test_transient_prompt"
)

// ListTools implements mcp.ToolProvider.
func (fx *fixtures) ListTools(context.Context, *mcp.Request) ([]mcp.Tool, error) {
	defs := fx.tools()
	out := make([]mcp.Tool, len(defs), len(defs)+1)
	for i, d := range defs {
		out[i] = d.tool
	}
	if n := fx.toolRevision.Load(); n > 0 {
		out = append(out, mcp.Tool{Name: transientTool, InputSchema: emptySchema,
			Description: fmt.Sprintf("Added by test_trigger_tool_change (change %d); does nothing", n)})
	}
	return out, nil
}

// CallTool implements mcp.ToolProvider.
func (fx *fixtures) CallTool(ctx context.Context, r *mcp.Request, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return asResult[mcp.CallToolResult](fx.runTool(ctx, r, p))
}

// runTool runs the tool p names: its result, or an InputRequiredResult.
func (fx *fixtures) runTool(ctx context.Context, r *mcp.Request, p *mcp.CallToolParams) (any, error) {
	if p.Name == transientTool && fx.toolRevision.Load() > 0 {
		return textResult("The transient tool does nothing"), nil
	}
	for _, d := range fx.tools() {
		switch {
		case d.tool.Name != p.Name:
		case d.ask != nil:
			return asToolResult(fx.ask(ctx, r, "tool "+p.Name, p.Retry, d.ask))
		default:
			return d.run(ctx, r, p.Arguments)
		}
	}
	return nil, &fault.Error{Code: fault.ToolNotFound, What: fmt.Sprintf("unknown tool %q", p.Name),
		Why: "the conformance server has only the suite's fixture tools", How: "pick a name from tools/list"}
}

// asResult narrows a fixture's result to T; an InputRequiredResult goes to
// the engine as mcp.InputRequired, which it answers with.
func asResult[T any](res any, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	if v, ok := res.(*T); ok {
		return v, nil
	}
	if ir, ok := res.(*mcp.InputRequiredResult); ok {
		return nil, &mcp.InputRequired{Result: *ir}
	}
	return nil, &fault.Error{Code: fault.Internal, What: fmt.Sprintf("a %T where a %T was expected", res, new(T)),
		Why: "the request needs the client's input", How: "call it through the engine, which can return an input_required result"}
}

func toolXMCPHeader(_ context.Context, _ *mcp.Request, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var args struct {
		Region string `json:"region"`
		Level  *int   `json:"level"`
	}
	if bad := decodeArgs(raw, &args); bad != nil {
		return bad, nil
	}
	return textResult("region=" + args.Region), nil
}

func toolMissingCapability(_ context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
	if !r.ClientCapabilities().Has("sampling") {
		return nil, &fault.Error{Code: mcp.CodeMissingCapability,
			What:    "test_missing_capability needs the client's sampling capability",
			Why:     "the request's client capabilities do not declare sampling",
			How:     "declare sampling in the client capabilities (params._meta, or at initialize) and retry",
			Details: map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}}
	}
	return textResult("the client declared sampling"), nil
}

func (fx *fixtures) triggerToolChange(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
	n := fx.toolRevision.Add(1)
	fx.notify(mcp.NotificationToolsListChanged, nil)
	return textResult(fmt.Sprintf("tools_list_changed published (change %d)", n)), nil
}

func (fx *fixtures) triggerPromptChange(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
	n := fx.promptRevision.Add(1)
	fx.notify(mcp.NotificationPromptsListChanged, nil)
	return textResult(fmt.Sprintf("prompts_list_changed published (change %d)", n)), nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}, IsError: true}
}

// pause waits d unless the request is cancelled first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func toolWithLogging(ctx context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
	steps := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
	for i, msg := range steps {
		if i > 0 {
			if err := pause(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		r.Log(mcp.LevelInfo, loggerName, msg)
	}
	return textResult("Tool with logging executed successfully"), nil
}

func toolWithProgress(ctx context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		r.Progress(p, 100, fmt.Sprintf("Completed step %g of 100", p))
	}
	token := "none"
	if t := r.ProgressToken(); t != nil {
		token = string(t)
	}
	return textResult("Progress test completed (progress token " + token + ")"), nil
}

func toolReconnection(ctx context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
	r.EndStream()
	if err := pause(ctx, reconnectDelay); err != nil {
		return nil, err
	}
	return textResult("Reconnection test completed successfully. If you received this, the client properly " +
		"reconnected after stream closure."), nil
}

// decodeArgs reads a tool's arguments; a failure is the caller's mistake,
// reported as a tool error so the model can correct itself.
func decodeArgs(args json.RawMessage, v any) *mcp.CallToolResult {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return errorResult("invalid arguments: " + err.Error())
	}
	return nil
}

// samplingResult is the part of a sampling/createMessage answer we read.
type samplingResult struct {
	Role    string      `json:"role"`
	Content mcp.Content `json:"content"`
	Model   string      `json:"model"`
}

func toolSampling(ctx context.Context, r *mcp.Request, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var args struct {
		Prompt *string `json:"prompt"`
	}
	if bad := decodeArgs(raw, &args); bad != nil {
		return bad, nil
	}
	if args.Prompt == nil {
		return errorResult("invalid arguments: prompt is required"), nil
	}
	if r.ClientCapabilities().Sampling == nil {
		return errorResult("the client does not support sampling: it declared no sampling capability at initialize"), nil
	}
	params := map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": mcp.TextContent(*args.Prompt)}},
		"maxTokens": 100,
	}
	var res samplingResult
	if err := r.Call(ctx, mcp.MethodSamplingCreateMessage, params, &res); err != nil {
		return errorResult(fmt.Sprintf("sampling failed: %v", err)), nil
	}
	return textResult("LLM response: " + res.Content.Text), nil
}

// elicitResult is an elicitation/create answer.
type elicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

func (e elicitResult) content() string {
	if len(e.Content) == 0 || string(e.Content) == "null" {
		return "{}"
	}
	return string(e.Content)
}

func elicit(ctx context.Context, r *mcp.Request, message string, schema json.RawMessage) (*elicitResult, *mcp.CallToolResult) {
	if r.ClientCapabilities().Elicitation == nil {
		return nil, errorResult("the client does not support elicitation: it declared no elicitation capability at initialize")
	}
	var res elicitResult
	params := map[string]any{"message": message, "requestedSchema": schema}
	if err := r.Call(ctx, mcp.MethodElicitationCreate, params, &res); err != nil {
		return nil, errorResult(fmt.Sprintf("elicitation failed: %v", err))
	}
	return &res, nil
}

var userSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"username":{"type":"string","description":"User's response"},` +
	`"email":{"type":"string","description":"User's email address"}},` +
	`"required":["username","email"]}`)

func toolElicitation(ctx context.Context, r *mcp.Request, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var args struct {
		Message *string `json:"message"`
	}
	if bad := decodeArgs(raw, &args); bad != nil {
		return bad, nil
	}
	if args.Message == nil {
		return errorResult("invalid arguments: message is required"), nil
	}
	res, bad := elicit(ctx, r, *args.Message, userSchema)
	if bad != nil {
		return bad, nil
	}
	return textResult(fmt.Sprintf("User response: action=%s, content=%s", res.Action, res.content())), nil
}

// sep1034Schema has a default for every primitive type.
var sep1034Schema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"User name","default":"John Doe"},` +
	`"age":{"type":"integer","description":"User age","default":30},` +
	`"score":{"type":"number","description":"User score","default":95.5},` +
	`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
	`"verified":{"type":"boolean","description":"Verification status","default":true}},` +
	`"required":[]}`)

// sep1330Schema has the five enum shapes: untitled and titled single
// select, the deprecated enumNames form, untitled and titled multi select.
var sep1330Schema = json.RawMessage(`{"type":"object","properties":{` +
	`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},` +
	`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[` +
	`{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
	`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],` +
	`"enumNames":["Option One","Option Two","Option Three"]},` +
	`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,` +
	`"items":{"type":"string","enum":["option1","option2","option3"]}},` +
	`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,` +
	`"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},` +
	`"required":[]}`)

func elicitForm(message string, schema json.RawMessage) toolFunc {
	return func(ctx context.Context, r *mcp.Request, _ json.RawMessage) (*mcp.CallToolResult, error) {
		res, bad := elicit(ctx, r, message, schema)
		if bad != nil {
			return bad, nil
		}
		return textResult(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, res.content())), nil
	}
}

// ---- prompts ----

// promptDef is a prompt and what renders it: get for one rendered at once,
// ask for one that needs the client's input first (see inputs.go).
type promptDef struct {
	prompt mcp.Prompt
	get    func(args map[string]string) []mcp.PromptMessage
	ask    asker
}

func required(name, description string) mcp.PromptArgument {
	return mcp.PromptArgument{Name: name, Description: description, Required: true}
}

var prompts = []promptDef{
	{prompt: mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments",
		Arguments: []mcp.PromptArgument{}},
		get: func(map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("This is a simple prompt for testing.")}}
		}},
	{prompt: mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
		Arguments: []mcp.PromptArgument{required("arg1", "First test argument"), required("arg2", "Second test argument")}},
		get: func(a map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(
				fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))}}
		}},
	{prompt: mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
		Description: "A prompt that includes an embedded resource",
		Arguments:   []mcp.PromptArgument{required("resourceUri", "URI of the resource to embed")}},
		get: func(a map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{
				{Role: "user", Content: mcp.Content{Type: "resource", Resource: &mcp.ResourceContents{
					URI: a["resourceUri"], MimeType: "text/plain", Text: "Embedded resource content for testing."}}},
				{Role: "user", Content: mcp.TextContent("Please process the embedded resource above.")},
			}
		}},
	{prompt: mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content",
		Arguments: []mcp.PromptArgument{}},
		get: func(map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{
				{Role: "user", Content: mcp.Content{Type: "image", Data: testImagePNG, MimeType: "image/png"}},
				{Role: "user", Content: mcp.TextContent("Please analyze the image above.")},
			}
		}},
	{prompt: mcp.Prompt{Name: "test_input_required_result_prompt", Title: "Prompt Asking For Context",
		Description: "Asks the user for context (elicitation, key user_context) before it renders (SEP-2322)",
		Arguments:   []mcp.PromptArgument{}},
		ask: askContext},
}

// ListPrompts implements mcp.PromptProvider.
func (fx *fixtures) ListPrompts(context.Context, *mcp.Request) ([]mcp.Prompt, error) {
	out := make([]mcp.Prompt, len(prompts), len(prompts)+1)
	for i, d := range prompts {
		out[i] = d.prompt
	}
	if n := fx.promptRevision.Load(); n > 0 {
		out = append(out, mcp.Prompt{Name: transientPrompt, Arguments: []mcp.PromptArgument{},
			Description: fmt.Sprintf("Added by test_trigger_prompt_change (change %d)", n)})
	}
	return out, nil
}

// getPrompt serves prompts/get (see newServer).
func (fx *fixtures) getPrompt(ctx context.Context, r *mcp.Request) (any, error) {
	var p mcp.GetPromptParams
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	return fx.GetPrompt(ctx, r, &p)
}

// GetPrompt implements mcp.PromptProvider.
func (fx *fixtures) GetPrompt(ctx context.Context, r *mcp.Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return asResult[mcp.GetPromptResult](fx.renderPrompt(ctx, r, p))
}

// renderPrompt renders the prompt p names: its result, or an
// InputRequiredResult.
func (fx *fixtures) renderPrompt(ctx context.Context, r *mcp.Request, p *mcp.GetPromptParams) (any, error) {
	if p.Name == transientPrompt && fx.promptRevision.Load() > 0 {
		return &mcp.GetPromptResult{Description: "The transient prompt",
			Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("This prompt was added by test_trigger_prompt_change.")}}}, nil
	}
	d, ok := findPrompt(p.Name)
	if ok && d.ask != nil {
		return fx.ask(ctx, r, "prompt "+p.Name, p.Retry, d.ask)
	}
	if !ok {
		return nil, &fault.Error{Code: mcp.CodeInvalidParams, What: fmt.Sprintf("unknown prompt %q", p.Name),
			Why: "the conformance server has only the suite's fixture prompts", How: "pick a name from prompts/list"}
	}
	var missing []string
	for _, a := range d.prompt.Arguments {
		if a.Required && p.Arguments[a.Name] == "" {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &fault.Error{Code: fault.MissingRequiredVariable,
			What: fmt.Sprintf("prompt %q needs %s", p.Name, strings.Join(missing, ", ")),
			Why:  "these arguments are required", How: "pass them in params.arguments",
			Details: map[string]any{"missing": missing}}
	}
	return &mcp.GetPromptResult{Description: d.prompt.Description, Messages: d.get(p.Arguments)}, nil
}

func findPrompt(name string) (promptDef, bool) {
	for _, d := range prompts {
		if d.prompt.Name == name {
			return d, true
		}
	}
	return promptDef{}, false
}

// ---- resources ----

var templateURI = regexp.MustCompile(`^test://template/([^/]+)/data$`)

// ListResources implements mcp.ResourceProvider.
func (fx *fixtures) ListResources(context.Context, *mcp.Request) ([]mcp.Resource, error) {
	return []mcp.Resource{
		{URI: uriStaticText, Name: "static-text", Title: "Static Text Resource",
			Description: "A static text resource for testing", MimeType: "text/plain"},
		{URI: uriStaticBinary, Name: "static-binary", Title: "Static Binary Resource",
			Description: "A static binary resource (image) for testing", MimeType: "image/png"},
		{URI: uriWatched, Name: "watched-resource", Title: "Watched Resource",
			Description: "A resource that changes on a timer; subscribers are told with notifications/resources/updated",
			MimeType:    "text/plain"},
	}, nil
}

// ListResourceTemplates implements mcp.ResourceProvider.
func (fx *fixtures) ListResourceTemplates(context.Context, *mcp.Request) ([]mcp.ResourceTemplate, error) {
	return []mcp.ResourceTemplate{{URITemplate: uriTemplate, Name: "template", Title: "Resource Template",
		Description: "A resource template with parameter substitution", MimeType: "application/json"}}, nil
}

// ReadResource implements mcp.ResourceProvider.
func (fx *fixtures) ReadResource(_ context.Context, _ *mcp.Request, uri string) (*mcp.ReadResourceResult, error) {
	var c mcp.ResourceContents
	switch uri {
	case uriStaticText:
		c = mcp.ResourceContents{URI: uri, MimeType: "text/plain", Text: "This is the content of the static text resource."}
	case uriStaticBinary:
		c = mcp.ResourceContents{URI: uri, MimeType: "image/png", Blob: testImagePNG}
	case uriWatched:
		c = mcp.ResourceContents{URI: uri, MimeType: "text/plain",
			Text: fmt.Sprintf("Watched resource content (revision %d)", fx.watchedRevision.Load())}
	default:
		m := templateURI.FindStringSubmatch(uri)
		if m == nil {
			return nil, unknownResource(uri)
		}
		body, err := json.Marshal(struct {
			ID           string `json:"id"`
			TemplateTest bool   `json:"templateTest"`
			Data         string `json:"data"`
		}{m[1], true, "Data for ID: " + m[1]})
		if err != nil {
			return nil, fmt.Errorf("encode template resource: %w", err)
		}
		c = mcp.ResourceContents{URI: uri, MimeType: "application/json", Text: string(body)}
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{c}}, nil
}

// CheckResource implements mcp.ResourceProvider: the listed resources and
// any instance of the template are there.
func (fx *fixtures) CheckResource(_ context.Context, _ *mcp.Request, uri string) error {
	switch {
	case uri == uriStaticText, uri == uriStaticBinary, uri == uriWatched, templateURI.MatchString(uri):
		return nil
	}
	return unknownResource(uri)
}

// unknownResource is the fault for a uri the fixtures do not serve.
func unknownResource(uri string) error {
	return &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("unknown resource %q", uri),
		Why: "it is neither a listed resource nor an instance of " + uriTemplate,
		How: "pick a uri from resources/list or fill in a template from resources/templates/list"}
}

// touchWatched changes the watched resource and returns its uri, for the
// caller to announce with Engine.ResourceUpdated.
func (fx *fixtures) touchWatched() string {
	fx.watchedRevision.Add(1)
	return uriWatched
}

// ---- completion ----

// completions are the suggestions offered per prompt argument or template
// variable, filtered by the prefix the client typed.
var completions = map[string][]string{
	"ref/prompt test_prompt_with_arguments arg1":                {"paris", "park", "party", "test-value-1"},
	"ref/prompt test_prompt_with_arguments arg2":                {"test-value-2", "world"},
	"ref/prompt test_prompt_with_embedded_resource resourceUri": {uriStaticBinary, uriStaticText, uriWatched},
	"ref/resource " + uriTemplate + " id":                       {"1", "123", "2", "42"},
}

// Complete implements mcp.CompletionProvider.
func (fx *fixtures) Complete(_ context.Context, _ *mcp.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var key string
	switch p.Ref.Type {
	case "ref/prompt":
		d, ok := findPrompt(p.Ref.Name)
		if !ok {
			return nil, &fault.Error{Code: mcp.CodeInvalidParams, What: fmt.Sprintf("unknown prompt %q", p.Ref.Name),
				Why: "completion needs a prompt from prompts/list", How: "pick a name from prompts/list"}
		}
		if !hasArgument(d.prompt, p.Argument.Name) {
			return nil, &fault.Error{Code: mcp.CodeInvalidParams,
				What: fmt.Sprintf("prompt %q has no argument %q", p.Ref.Name, p.Argument.Name),
				Why:  "completion is offered for a prompt's declared arguments", How: "pick an argument from prompts/list"}
		}
		key = "ref/prompt " + p.Ref.Name + " " + p.Argument.Name
	case "ref/resource":
		if p.Ref.URI != uriTemplate {
			return nil, &fault.Error{Code: mcp.CodeInvalidParams, What: fmt.Sprintf("unknown resource template %q", p.Ref.URI),
				Why: "completion needs a template from resources/templates/list", How: "use " + uriTemplate}
		}
		key = "ref/resource " + p.Ref.URI + " " + p.Argument.Name
	default:
		return nil, &fault.Error{Code: mcp.CodeInvalidParams, What: fmt.Sprintf("unknown reference type %q", p.Ref.Type),
			Why: "MCP defines ref/prompt and ref/resource", How: "send one of those"}
	}
	values := []string{}
	for _, v := range completions[key] {
		if strings.HasPrefix(v, p.Argument.Value) {
			values = append(values, v)
		}
	}
	sort.Strings(values)
	return &mcp.CompleteResult{Completion: mcp.Completion{Values: values, Total: len(values)}}, nil
}

func hasArgument(p mcp.Prompt, name string) bool {
	for _, a := range p.Arguments {
		if a.Name == name {
			return true
		}
	}
	return false
}
