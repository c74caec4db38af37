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
// scenarios exercise. One value serves all sessions; the only state is the
// watched resource's revision.
type fixtures struct {
	watchedRevision atomic.Int64
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
	}
}

// ---- tools ----

type toolFunc func(ctx context.Context, r *mcp.Request, args json.RawMessage) (*mcp.CallToolResult, error)

type toolDef struct {
	tool mcp.Tool
	run  toolFunc
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// json2020Schema is passed through byte for byte: the scenario checks that
// $schema, $defs and additionalProperties survive tools/list.
var json2020Schema = json.RawMessage(`{"$schema":"` + schemaDialect2020 + `","type":"object",` +
	`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},` +
	`"additionalProperties":false}`)

func (fx *fixtures) tools() []toolDef {
	return []toolDef{
		{mcp.Tool{Name: "test_simple_text", Description: "Returns one text content block", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return textResult("This is a simple text response for testing."), nil
			}},
		{mcp.Tool{Name: "test_image_content", Description: "Returns one image content block (a 1x1 PNG)", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "image", Data: testImagePNG, MimeType: "image/png"}}}, nil
			}},
		{mcp.Tool{Name: "test_audio_content", Description: "Returns one audio content block (a minimal WAV)", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "audio", Data: testAudioWAV, MimeType: "audio/wav"}}}, nil
			}},
		{mcp.Tool{Name: "test_embedded_resource", Description: "Returns one embedded text resource", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{{Type: "resource", Resource: &mcp.ResourceContents{
					URI: "test://embedded-resource", MimeType: "text/plain", Text: "This is an embedded resource content."}}}}, nil
			}},
		{mcp.Tool{Name: "test_multiple_content_types", Description: "Returns text, image and embedded resource blocks", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					mcp.TextContent("Multiple content types test:"),
					{Type: "image", Data: testImagePNG, MimeType: "image/png"},
					{Type: "resource", Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource",
						MimeType: "application/json", Text: `{"test":"data","value":123}`}},
				}}, nil
			}},
		{mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three info log notifications while it runs", InputSchema: emptySchema},
			toolWithLogging},
		{mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 when asked for progress", InputSchema: emptySchema},
			toolWithProgress},
		{mcp.Tool{Name: "test_error_handling", Description: "Always fails, as a tool error (isError)", InputSchema: emptySchema},
			func(context.Context, *mcp.Request, json.RawMessage) (*mcp.CallToolResult, error) {
				return errorResult("This tool intentionally returns an error for testing"), nil
			}},
		{mcp.Tool{Name: "test_reconnection", Description: "Closes its response stream mid-call and answers after the client resumes (SEP-1699)", InputSchema: emptySchema},
			toolReconnection},
		{mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM to answer a prompt (sampling/createMessage)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
			toolSampling},
		{mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email (elicitation/create)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)},
			toolElicitation},
		{mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields carry default values (SEP-1034)", InputSchema: emptySchema},
			elicitForm("Please review and update the form fields with defaults", sep1034Schema)},
		{mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits a form with the five enum shapes (SEP-1330)", InputSchema: emptySchema},
			elicitForm("Please select options from the enum fields", sep1330Schema)},
		{mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features (SEP-1613)", InputSchema: json2020Schema},
			func(_ context.Context, _ *mcp.Request, args json.RawMessage) (*mcp.CallToolResult, error) {
				if len(args) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				return textResult("JSON Schema 2020-12 tool called with: " + string(args)), nil
			}},
	}
}

// ListTools implements mcp.ToolProvider.
func (fx *fixtures) ListTools(context.Context, *mcp.Request) ([]mcp.Tool, error) {
	defs := fx.tools()
	out := make([]mcp.Tool, len(defs))
	for i, d := range defs {
		out[i] = d.tool
	}
	return out, nil
}

// CallTool implements mcp.ToolProvider.
func (fx *fixtures) CallTool(ctx context.Context, r *mcp.Request, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for _, d := range fx.tools() {
		if d.tool.Name == p.Name {
			return d.run(ctx, r, p.Arguments)
		}
	}
	return nil, &fault.Error{Code: fault.ToolNotFound, What: fmt.Sprintf("unknown tool %q", p.Name),
		Why: "the conformance server has only the suite's fixture tools", How: "pick a name from tools/list"}
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

type promptDef struct {
	prompt mcp.Prompt
	get    func(args map[string]string) []mcp.PromptMessage
}

func required(name, description string) mcp.PromptArgument {
	return mcp.PromptArgument{Name: name, Description: description, Required: true}
}

var prompts = []promptDef{
	{mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments",
		Arguments: []mcp.PromptArgument{}},
		func(map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("This is a simple prompt for testing.")}}
		}},
	{mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
		Arguments: []mcp.PromptArgument{required("arg1", "First test argument"), required("arg2", "Second test argument")}},
		func(a map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(
				fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))}}
		}},
	{mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
		Description: "A prompt that includes an embedded resource",
		Arguments:   []mcp.PromptArgument{required("resourceUri", "URI of the resource to embed")}},
		func(a map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{
				{Role: "user", Content: mcp.Content{Type: "resource", Resource: &mcp.ResourceContents{
					URI: a["resourceUri"], MimeType: "text/plain", Text: "Embedded resource content for testing."}}},
				{Role: "user", Content: mcp.TextContent("Please process the embedded resource above.")},
			}
		}},
	{mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content",
		Arguments: []mcp.PromptArgument{}},
		func(map[string]string) []mcp.PromptMessage {
			return []mcp.PromptMessage{
				{Role: "user", Content: mcp.Content{Type: "image", Data: testImagePNG, MimeType: "image/png"}},
				{Role: "user", Content: mcp.TextContent("Please analyze the image above.")},
			}
		}},
}

// ListPrompts implements mcp.PromptProvider.
func (fx *fixtures) ListPrompts(context.Context, *mcp.Request) ([]mcp.Prompt, error) {
	out := make([]mcp.Prompt, len(prompts))
	for i, d := range prompts {
		out[i] = d.prompt
	}
	return out, nil
}

// GetPrompt implements mcp.PromptProvider.
func (fx *fixtures) GetPrompt(_ context.Context, _ *mcp.Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	d, ok := findPrompt(p.Name)
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
			return nil, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("unknown resource %q", uri),
				Why: "it is neither a listed resource nor an instance of " + uriTemplate,
				How: "pick a uri from resources/list or fill in a template from resources/templates/list"}
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
