package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/xeipuuv/gojsonschema"
)

// ResultBudget caps a tool result as a whole, its text and its
// structuredContent's JSON together, in characters (about 25,000 tokens
// when a client passes both to the model), as the seed-004 standard asks:
// lists are cut at a whole item and say so, long fields are shortened,
// and inputs are not echoed at length.
const ResultBudget = 100_000

// jsonSize is how many characters v takes in a result's structuredContent.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return utf8.RuneCount(b)
}

// tool is one MCP tool: its definition, its compiled input schema, and
// the function that runs it on validated arguments.
type tool struct {
	def    mcp.Tool
	schema *gojsonschema.Schema
	quick  *quickCheck       // nil when the schema is beyond the quick check
	hints  map[string]string // by argument: its expected format and an example
	run    func(ctx context.Context, r *mcp.Request, args toolArgs) (*toolResult, error)
}

// toolResult is what a tool produces: the text a person or model reads
// (Void reads nothing else) and the same data as JSON.
type toolResult struct {
	text       string
	structured any
	// resources follow the text as embedded resources (the render tool's
	// attachments).
	resources []mcp.ResourceContents
	// view is the view the result was served from, whose label and
	// commit its _meta names; unset (lib nil) when the tool read none, or
	// changed what is served, and the request's view is worked out again.
	view view
}

func newTool(name, titleText, description string, input, output string, annotations *mcp.ToolAnnotations,
	run func(context.Context, *mcp.Request, toolArgs) (*toolResult, error)) *tool {
	schema, err := gojsonschema.NewSchema(gojsonschema.NewStringLoader(input))
	if err != nil {
		panic(fmt.Sprintf("tool %s: invalid input schema: %v", name, err)) // a programming error, caught by tests
	}
	return &tool{
		def: mcp.Tool{Name: name, Title: titleText, Description: strings.TrimSpace(description),
			InputSchema: json.RawMessage(input), OutputSchema: json.RawMessage(output), Annotations: annotations},
		schema: schema,
		quick:  compileQuick([]byte(input)),
		hints:  fieldHints(input),
		run:    run,
	}
}

// fieldHints reads, for each top-level argument of an input schema, the
// FORMAT and EXAMPLE lines of its description (or its first example), so
// that an INVALID_ARGUMENT error names what was expected.
func fieldHints(input string) map[string]string {
	var schema struct {
		Properties map[string]struct {
			Description string            `json:"description"`
			Examples    []json.RawMessage `json:"examples"`
		} `json:"properties"`
	}
	_ = json.Unmarshal([]byte(input), &schema)
	hints := map[string]string{}
	for name, p := range schema.Properties {
		var format, example string
		for _, line := range strings.Split(p.Description, "\n") {
			if v, ok := strings.CutPrefix(line, "FORMAT: "); ok {
				format = v
			}
			if v, ok := strings.CutPrefix(line, "EXAMPLE: "); ok {
				example = v
			}
		}
		if example == "" && len(p.Examples) > 0 {
			example = string(p.Examples[0])
		}
		switch {
		case format != "" && example != "":
			hints[name] = fmt.Sprintf("expected %s, e.g. %s", format, example)
		case format != "":
			hints[name] = "expected " + format
		case example != "":
			hints[name] = "e.g. " + example
		}
	}
	return hints
}

func boolPtr(b bool) *bool { return &b }

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true), DestructiveHint: boolPtr(false),
	IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(false)}

// ListTools lists the tools in a fixed order: the save tool only to a
// caller who may write (hidesSave).
func (a *App) ListTools(ctx context.Context, _ *mcp.Request) ([]mcp.Tool, error) {
	hide := hidesSave(ctx)
	out := make([]mcp.Tool, 0, len(a.tools))
	for _, t := range a.tools {
		if hide && t.def.Name == saveToolName {
			continue
		}
		out = append(out, t.def)
	}
	return out, nil
}

// CallTool validates the arguments against the tool's schema, runs it, and
// turns failures into isError results a model can act on.
func (a *App) CallTool(ctx context.Context, r *mcp.Request, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t, ok := a.byName[p.Name]
	if !ok && p.Name == saveToolName {
		return errorResult(&fault.Error{Code: fault.WriteDisabled, What: "saving templates is disabled on this server",
			Why: "writing is opt-in, and the server was started without it (or serves the read-only built-in examples)",
			How: "start the server with --allow-write (or WRITE_ENABLED=true) and a template folder or GitHub repository"}), nil
	}
	if ok && p.Name == saveToolName && hidesSave(ctx) {
		// Over HTTP the transport answered 403 already (RequiredScope).
		return errorResult(&fault.Error{Code: fault.PermissionDenied, What: "the access token does not grant " + auth.ScopeWrite,
			Why: "saving templates needs the scope " + auth.ScopeWrite,
			How: "sign in again asking for the scope " + auth.ScopeWrite}), nil
	}
	if !ok {
		names := make([]string, 0, len(a.tools))
		for _, t := range a.tools {
			names = append(names, t.def.Name)
		}
		return nil, &fault.Error{Code: fault.ToolNotFound, What: fmt.Sprintf("unknown tool %q", p.Name),
			Why: "this server has no tool by that name", How: "call tools/list; the tools are " + strings.Join(names, ", "),
			Suggestions: closeNames(p.Name, names)}
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	decoded, err := t.validate(args)
	if err != nil {
		return errorResult(err), nil
	}
	res, err := t.run(ctx, r, toolArgs{raw: args, decoded: decoded, retry: p.Retry})
	if err != nil {
		var ir *mcp.InputRequired
		if errors.As(err, &ir) || errors.Is(err, errBadState) {
			// The engine answers with the input-required result, or with
			// the error of a request it cannot accept.
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return errorResult(err), nil
	}
	content := make([]mcp.Content, 1, 1+len(res.resources))
	content[0] = mcp.TextContent(res.text)
	for i := range res.resources {
		content = append(content, mcp.Content{Type: "resource", Resource: &res.resources[i]})
	}
	meta := servedMeta(res.view, "", nil)
	if res.view.lib == nil {
		meta = a.resultServed(ctx, r)
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: res.structured, Meta: meta}, nil
}

// toolArgs are a call's validated arguments: the JSON, and the decoded
// object when the quick check already decoded it (tools may use it to
// avoid decoding twice).
type toolArgs struct {
	raw     json.RawMessage
	decoded map[string]any
	retry   mcp.Retry // a modern retry's answers to an input-required result
}

func (a toolArgs) decode(v any) error { return json.Unmarshal(a.raw, v) }

// validate checks args against the tool's schema. It returns the decoded
// arguments when the quick check vouched for them.
func (t *tool) validate(args json.RawMessage) (map[string]any, error) {
	if t.quick != nil {
		if m, ok := t.quick.valid(args); ok {
			return m, nil
		}
	}
	return nil, t.validateSlow(args)
}

func (t *tool) validateSlow(args json.RawMessage) error {
	res, err := t.schema.Validate(gojsonschema.NewBytesLoader(args))
	if err != nil {
		return &fault.Error{Code: fault.InvalidArgument, What: "the arguments are not valid JSON",
			Why: err.Error(), How: "pass arguments as a JSON object"}
	}
	if res.Valid() {
		return nil
	}
	var problems []string
	// A value no branch of an anyOf takes fails each branch too. A branch
	// of its type says what is wrong with it (a string too long); else the
	// branches' "Expected: string" would mislead, and the anyOf's error
	// alone is kept, in words.
	anyOf, specific := map[string]bool{}, map[string]bool{}
	for _, e := range res.Errors() {
		if e.Type() == "number_any_of" {
			anyOf[e.Field()] = true
		}
	}
	for _, e := range res.Errors() {
		if anyOf[e.Field()] && e.Type() != "number_any_of" && e.Type() != "invalid_type" {
			specific[e.Field()] = true
		}
	}
	for _, e := range res.Errors() {
		desc := e.Description()
		switch {
		case e.Type() == "number_any_of" && specific[e.Field()]:
			continue
		case e.Type() == "number_any_of":
			desc = templates.JSONKind(e.Value()) + " is not a value of a type it takes"
		case anyOf[e.Field()] && e.Type() == "invalid_type":
			continue
		}
		field := e.Field()
		if field == "(root)" {
			field = "arguments"
			if p, ok := e.Details()["property"].(string); ok && e.Type() == "required" {
				field = p // "query: query is required" names the field its hint is for
			}
		}
		problem := fmt.Sprintf("%s: %s", field, desc)
		top, _, _ := strings.Cut(field, ".")
		if h := t.hints[top]; h != "" {
			problem += " (" + h + ")"
		}
		problems = append(problems, problem)
	}
	sort.Strings(problems)
	return &fault.Error{Code: fault.InvalidArgument,
		What:    fmt.Sprintf("invalid arguments for %s", t.def.Name),
		Why:     strings.Join(problems, "; "),
		How:     "fix the named fields as each problem says; the tool's inputSchema (tools/list) describes every field",
		Details: map[string]any{"problems": problems}}
}

// errorResult renders a failure as what / why / how text.
func errorResult(err error) *mcp.CallToolResult {
	f := fault.As(err)
	if f == nil {
		f = &fault.Error{Code: fault.Internal, What: "the tool failed", Why: err.Error(),
			How: "retry; if it keeps failing, check the server's log"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Result\nError %s: %s\n", f.Code, firstNonEmpty(f.What, f.Code))
	if f.Why != "" {
		fmt.Fprintf(&b, "\n## Why\n%s\n", f.Why)
	}
	if len(f.Suggestions) > 0 {
		b.WriteString("\n## Did you mean\n")
		for _, s := range f.Suggestions {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if f.How != "" {
		fmt.Fprintf(&b, "\n## How to fix\n%s\n", f.How)
	}
	problems, _ := f.Details["problems"].([]string)
	if len(problems) > 0 && f.Why != strings.Join(problems, "; ") {
		b.WriteString("\n## Problems\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	retryable := retryableCodes[f.Code] || f.RetryAfter > 0
	structured := map[string]any{"code": f.Code, "what": firstNonEmpty(f.What, f.Code), "why": f.Why, "how": f.How,
		"suggestions": nonNilStrings(f.Suggestions), "problems": nonNilStrings(problems), "retryable": retryable}
	if f.RetryAfter > 0 {
		secs := int(f.RetryAfter.Round(time.Second) / time.Second)
		structured["retry_after"] = secs
		fmt.Fprintf(&b, "\nRetry after: %d seconds\n", secs)
	}
	fmt.Fprintf(&b, "\nRetryable: %t\n", retryable)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(strings.TrimRight(b.String(), "\n"))}, IsError: true,
		StructuredContent: structured}
}

// retryableCodes are the failures the same call may get past later.
var retryableCodes = map[string]bool{fault.NetworkError: true, fault.GitHubRateLimited: true, fault.RateLimited: true, fault.RequestTimeout: true,
	fault.Internal: true, fault.WriteConflict: true}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// closeNames suggests names for a typo (shared with template suggestions
// through the catalog for template names).
func closeNames(name string, names []string) []string {
	var out []string
	low := strings.ToLower(name)
	for _, n := range names {
		ln := strings.ToLower(n)
		if strings.Contains(ln, low) || strings.Contains(low, strings.TrimPrefix(ln, "flowyprompt_")) {
			out = append(out, n)
		}
	}
	return out
}

// staleNote says, in tool results, that the data may be out of date.
func staleNote(cat *templates.Catalog) (string, map[string]any) {
	s := cat.Stale()
	if s == nil {
		return "", nil
	}
	m := map[string]any{"stale": true, "stale_since": s.Since.UTC().Format(time.RFC3339), "stale_reason": s.Reason, "stale_code": s.Code}
	line := fmt.Sprintf("- ⚠️ Data may be stale: refreshing failed since %s (%s: %s)", s.Since.UTC().Format(time.RFC3339), s.Code, s.Reason)
	if s.RetryAfter > 0 {
		secs := int(s.RetryAfter.Round(time.Second) / time.Second)
		m["retry_after"] = secs
		line += fmt.Sprintf("; retry after %d seconds", secs)
	}
	return line + "\n", m
}

// readTools are the tools every server has. Their descriptions and
// schemas are in the tools folder (see toolFS).
func (a *App) readTools() []*tool {
	return []*tool{
		toolFromFiles("flowyprompt_list_templates", "List prompt templates", readOnly, a.listTemplates),
		toolFromFiles("flowyprompt_search_templates", "Search prompt templates", readOnly, a.searchTemplates),
		toolFromFiles("flowyprompt_get_template", "Get a template's definition", readOnly, a.getTemplate),
		toolFromFiles("flowyprompt_render_template", "Render a prompt template", readOnly, a.renderTemplate),
		toolFromFiles("flowyprompt_validate_template", "Validate a template", readOnly, a.validateTemplate),
		toolFromFiles("flowyprompt_template_history", "List a template's versions", &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true),
			DestructiveHint: boolPtr(false), IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(true)}, a.templateHistory),
		toolFromFiles("flowyprompt_diff_template", "Compare template versions", &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true),
			DestructiveHint: boolPtr(false), IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(true)}, a.diffTemplate),
		toolFromFiles("flowyprompt_refresh_templates", "Refresh the template library",
			&mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true), IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(true)},
			a.refreshTemplates),
	}
}
